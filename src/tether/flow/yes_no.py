"""Reading a yes or a no the way customers say them, with no model: "yep", "sure", "go ahead",
"no problem" are yes; "nope", "nah", "don't" are no; "not sure" is neither, and so is a yes held
back ("ok stop", "yes, hang on"), and so is a no held to ask a question ("no wait, what's the fee?").
Used by yes/no questions (``enum_check`` with ``yes`` and
``no``), by the reuse question ("the same order?") and by the repair patterns.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

__all__ = ["NO_WORDS", "YES_WORDS", "read_yes_no", "said_as_hold"]

YES_WORDS = frozenset({"yes", "y", "ya", "yeah", "yeh", "ye", "yea", "yep", "yup", "sure", "correct", "ok", "okay",
                       "okey", "k", "alright", "fine", "exactly", "indeed", "absolutely", "definitely", "certainly",
                       "perfect", "great", "confirm", "confirmed", "sim"})
NO_WORDS = frozenset({"no", "n", "nope", "nah", "not", "dont", "wrong", "negative", "não", "nao"})
_YES_PHRASES = ("go ahead", "of course", "sounds good", "please do", "do it", "thats right", "that is right",
                "no worries", "no problem", "why not")
"""Phrases that say yes, some with a "no" or "not" in them ("no worries, go ahead")."""

_YES_NO_WORD = re.compile(r"[^\W\d_]+")
_HOLDS = frozenset({"stop", "wait", "hang", "hold"})
_NOT_A_HOLD_BEFORE = frozenset({"cant", "cannot", "couldnt", "to", "ill", "well", "youll", "theyll", "will", "wont",
                                "need", "not", "dont", "bus", "the", "a", "i", "we", "you", "they", "no"})
_NOT_A_HOLD_AFTER = frozenset({"by", "up", "for", "off", "over", "in"})


def _held_back(words: list[str], yes: frozenset[str]) -> bool:
    """A yes held back: a hold ("stop", "wait", "hang on", "hold on") said as one, after the
    last yes ("ok stop", "yes, hang on", "sure, wait a second"; not "hang on, yes" or "wait, go
    ahead"). A word that only sounds like one is not: "can't wait", "we'll wait for the email",
    "stop by", "the bus stop", "stop asking and place it", "hang up", "hold on to it"."""
    ends = [i + len(phrase) - 1 for phrase in map(str.split, _YES_PHRASES)
            for i in range(len(words)) if words[i:i + len(phrase)] == phrase]
    last_yes = max([i for i, word in enumerate(words) if word in yes] + ends, default=-1)
    return any(said_as_hold(words, i) for i in range(last_yes + 1, len(words)))


def said_as_hold(words: Sequence[str], i: int) -> bool:
    """``words[i]`` (lower case, apostrophes dropped) is a hold said as one: "wait", "stop", "hang
    on", "hold on", not "can't wait", "no need to wait", "stop by", "stop asking", "hold on to it"."""
    word = words[i]
    after = words[i + 1] if i + 1 < len(words) else ""
    return not (word not in _HOLDS or (i and words[i - 1] in _NOT_A_HOLD_BEFORE) or after in _NOT_A_HOLD_AFTER
                or after.endswith("ing") or (word in ("hang", "hold") and after != "on")
                or list(words[i + 1:i + 3]) == ["on", "to"])  # "hold on to it until Friday": keep it


def read_yes_no(text: str, *, yes: frozenset[str] = frozenset(), no: frozenset[str] = frozenset()) -> bool | None:
    """A yes or a no in ``text`` read by its words ("yep", "sure", "go ahead", "no problem"; "nope",
    "nah", "don't"): None when it has both ("not sure") or neither, or holds its yes back ("ok
    stop", "ok wait", "yes, hang on"). ``yes`` and ``no``: more words
    of each (a question's own: "the same one" answers "the same order?")."""
    words = _YES_NO_WORD.findall(text.lower().replace(chr(39), '').replace(chr(0x2019), ''))
    joined = f" {' '.join(words)} "
    is_yes = False
    for phrase in _YES_PHRASES:
        if f" {phrase} " in joined:
            is_yes = True
            joined = joined.replace(f" {phrase} ", " ")  # its "no" is not a no
    said = set(joined.split())
    is_yes = is_yes or bool(said & (YES_WORDS | yes))
    if is_yes and _held_back(words, YES_WORDS | yes):
        return None
    is_no = bool(said & (NO_WORDS | no))
    if is_no and not is_yes and text.rstrip().endswith("?") and _holds_to_ask(words):
        return None  # "no wait, what's the fee?": held to ask, not refused
    return is_yes if is_yes != is_no else None


def _holds_to_ask(words: list[str]) -> bool:
    """A hold right after a no ("no wait", "nope, hang on"): with a question after it, the customer
    stops to ask something before answering."""
    return any(word in NO_WORDS and after in _HOLDS for word, after in itertools.pairwise(words))
