"""Tier-0 resolvers: deterministic extraction from the user's text, before any model call.

- ``enum_check(field, values)``: the text's words (lower-cased, split on non-alphanumerics) equal
  exactly one value -> hit; several -> ambiguous; else unambiguous prefix matching (the shorter
  side at least 3 characters, one a prefix of the other) with the same one/many rule.
- ``range(field, min=None, max=None)``: exactly one distinct in-range number in the text -> hit;
  several -> ambiguous. Commas as thousands separators, decimals and signs are read.
- ``jsonpath(field, path)``: reads ``input.*``, ``state.*`` or ``results.*`` from the run; a
  populated value -> hit.
- ``pattern(field, regex, value=None, case=None)``: exactly one distinct match of ``regex`` in the
  text -> hit (the first group if the pattern has one, or ``value`` expanded with the match's
  groups, in upper or lower ``case``: ``r"\1-\2"`` and ``"upper"`` make "a1002" and "A 1002" one
  spelling, ``A-1002``); several -> ambiguous.
- ``whole_message(field)``: the user's whole (trimmed) message is the value, less the words that
  introduce it ("it's 5 Main Street" is "5 Main Street"), for free-text answers to a question the
  node asked.
- ``enum_list(field, values)``: every one of ``values`` the text names (whole words, ignoring case;
  a value may be several words) -> hit with the list, in the order the text names them.

A value resolved here is recorded with slot source ``deterministic`` and removed from the model's
extraction schema for that turn; an ambiguous field is not offered to the model either (it will
be asked for).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tether.flow.yes_no import read_yes_no

__all__ = [
    "EnumCheck",
    "EnumList",
    "JsonPath",
    "Pattern",
    "Range",
    "Resolution",
    "Resolver",
    "WholeMessage",
    "VALUE_INTRODUCERS",
    "enum_check",
    "enum_list",
    "jsonpath",
    "pattern",
    "range_",
    "HEDGES",
    "only_hedges",
    "said_words",
    "whole_message",
    "without_introduction",
]

_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")


@dataclass(frozen=True)
class Resolution:
    """What a resolver found: ``hit`` with a value, ``ambiguous``, or ``miss``."""

    status: Literal["hit", "ambiguous", "miss"]
    value: Any = None


_MISS = Resolution("miss")

@dataclass(frozen=True)
class EnumCheck:
    """Match the text's words against a list of values (a value right after a negation, as
    :class:`EnumList` reads one, is not named: "not large, medium" names medium). A message that
    names several values and corrects itself ("large, no wait, medium"; "small, actually make it
    large") names the one after its last correction word, when only one follows it. Values that
    include ``yes`` and ``no`` also take the other ways to say them (:func:`read_yes_no`: "yep",
    "sure", "go ahead"; "nope", "nah")."""

    field: str
    values: tuple[str, ...]
    kind: Literal["enum_check"] = "enum_check"

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        lowered = {v.lower(): v for v in self.values}
        if len(lowered) == 2 and "yes" in lowered and "no" in lowered:  # a yes/no question: every way to say them
            cut = max((m.end() for m in _SELF_CORRECTION.finditer(text)), default=0)  # "yes, no wait, no": no
            said = read_yes_no(text[cut:]) if cut and _answers_first(text[cut:]) else None
            said = read_yes_no(text) if said is None else said
            return _MISS if said is None else Resolution("hit", lowered["yes" if said else "no"])
        tokens = _unnegated(text, frozenset(lowered))  # "not large, medium" names medium (not "no large": "no, large")
        # "extra large" or "super small" is another value than large or small: the step asks again
        tokens = [t for i, t in enumerate(tokens) if i == 0 or tokens[i - 1] not in _BEYOND]
        exact = {lowered[t] for t in tokens if t in lowered}
        if len(exact) > 1:  # "large, no wait, medium": the value after the last correction word
            last = max((i for i, t in enumerate(tokens) if t in _SELF_CORRECTIONS), default=-1)
            exact = {lowered[t] for t in tokens[last + 1:] if t in lowered} if last >= 0 else exact
            if len(exact) != 1:
                return Resolution("ambiguous")
        if len(exact) == 1:
            return Resolution("hit", exact.pop())
        prefixed = set()
        for token in tokens:
            for low, original in lowered.items():
                short, long_ = sorted((token, low), key=len)
                if len(short) >= 3 and long_.startswith(short):
                    prefixed.add(original)
        if len(prefixed) == 1:
            return Resolution("hit", prefixed.pop())
        return Resolution("ambiguous") if prefixed else _MISS

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "values": list(self.values)}


@dataclass(frozen=True)
class Range:
    """Find exactly one number within ``[min, max]`` in the text."""

    field: str
    min: float | None = None
    max: float | None = None
    kind: Literal["range"] = "range"

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        found: set[float] = set()
        for match in _NUMBER.findall(text):
            number = float(match.replace(",", ""))
            if (self.min is None or number >= self.min) and (self.max is None or number <= self.max):
                found.add(number)
        if len(found) == 1:
            number = found.pop()
            return Resolution("hit", int(number) if number.is_integer() else number)
        return Resolution("ambiguous") if found else _MISS

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class JsonPath:
    """Read a value from the run: ``input.x``, ``state.x`` or ``results.node.x``."""

    field: str
    path: str
    kind: Literal["jsonpath"] = "jsonpath"

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        value = read_path(frame, self.path)
        if value is None or (isinstance(value, str) and not value.strip()):
            return _MISS
        return Resolution("hit", value)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "path": self.path}


@dataclass(frozen=True)
class Pattern:
    """Find exactly one distinct match of a regular expression (of several, the one after a
    message's last correction word, when only one follows it: "A-1001, sorry, I meant A-1002").

    The value is the match's first group (the whole match when there is none), or ``value``
    expanded with the match's groups (``re``'s template syntax, ``\\1`` or ``\\g<name>``), in
    upper or lower ``case`` when one is set: one value however the customer spelled it, and two
    spellings of it are not two matches. ``early``: when its step is reached and its field was
    never asked, it also reads what the customer said earlier in the run (see :func:`pattern`)."""

    field: str
    regex: str
    flags: int = re.IGNORECASE
    value: str | None = None
    case: Literal["upper", "lower"] | None = None
    kind: Literal["pattern"] = "pattern"
    early: bool = False

    @functools.cached_property
    def _compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, self.flags)  # once per resolver: every message is read with it

    @functools.cached_property
    def _read(self) -> Callable[[re.Match[str]], str]:
        """What a match's value is (the first group, as it is, needs no call of ours)."""
        if self.value is None and self.case is None:
            return operator.methodcaller("group", 1 if self._compiled.groups else 0)
        return self._value

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        compiled = self._compiled
        value = self._read
        found = {value(m) for m in compiled.finditer(text)}
        if len(found) > 1:  # "A-1001, sorry, I meant A-1002": the match after the last correction word
            cut = max((m.end() for m in _SELF_CORRECTION.finditer(text)), default=None)
            if cut is not None:
                found = {value(m) for m in compiled.finditer(text) if m.start() >= cut}
            if len(found) != 1:
                return Resolution("ambiguous")
        if len(found) == 1:
            return Resolution("hit", found.pop())
        return _MISS

    def _value(self, match: re.Match[str]) -> str:
        found = match.group(1 if match.re.groups else 0) if self.value is None else match.expand(self.value)
        if self.case is None:
            return found
        return found.upper() if self.case == "upper" else found.lower()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "regex": self.regex, "flags": self.flags, "value": self.value,
                "case": self.case, **({"early": True} if self.early else {})}


VALUE_INTRODUCERS = (("its",), ("it", "is"), ("it", "should", "go", "to"), ("it", "should", "be"),
                     ("send", "it", "to"), ("ship", "it", "to"), ("deliver", "it", "to"),
                     ("the", "address", "is"), ("the", "new", "address", "is"), ("my", "address", "is"),
                     ("my", "new", "address", "is"), ("my", "name", "is"), ("the", "name", "is"),
                     ("i", "told", "you"), ("like", "i", "said"), ("as", "i", "said"))
"""The words that introduce a free-text value at the start of a message ("it's", "my new address
is", "send it to", "I told you"), as words: lower case, apostrophes dropped."""

_BEFORE_A_NUMBER = frozenset(VALUE_INTRODUCERS) - {("send", "it", "to"), ("ship", "it", "to"), ("deliver", "it", "to"),
                                                   ("my", "name", "is"), ("the", "name", "is")}
"""Introducers that introduce a value only when a number follows ("it's 5 Main Street", "my new
address is 14 Oak Avenue"): "it is broken" and "the address is correct but it never arrived" are
said as they are."""

_ACKNOWLEDGEMENTS = frozenset({"sure", "ok", "okay", "yes", "yeah", "yep", "well", "so", "um", "uh", "oh", "right",
                               "alright"})
"""A word that may come before an introducer ("sure, it's 5 Main Street"): left out with it."""

_SAID_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")


def said_words(text: str) -> list[tuple[int, int, str]]:
    """The words of ``text`` with where they stand: ``(start, end, word)``, the word in lower case
    with its apostrophe dropped ("It's" is "its")."""
    return [(m.start(), m.end(), m.group().lower().replace("'", "").replace("\u2019", ""))
            for m in _SAID_WORD.finditer(text)]


def without_introduction(text: str) -> str:
    """``text`` (trimmed) less the words of :data:`VALUE_INTRODUCERS` at its start (after an "ok"
    or a "sure", if any) and a "please" at its end: "it's 5 Main Street", "sure, my new address is
    5 Main Street" and "send it to 5 Main Street please" are "5 Main Street". As it is when it
    has neither, or when nothing would be left."""
    value = text.strip()
    spans = said_words(value)
    words = [word for _, _, word in spans]
    first, last = 0, len(spans)
    ahead = 1 if words and words[0] in _ACKNOWLEDGEMENTS else 0  # "sure, my new address is ..."
    for phrase in VALUE_INTRODUCERS:
        if tuple(words[ahead:ahead + len(phrase)]) == phrase:
            after = ahead + len(phrase)
            # "it's 5 Main Street", but not "it is what I ordered" or "it should be here by now"
            if phrase not in _BEFORE_A_NUMBER or (after < len(words) and words[after][:1].isdigit()):
                first = after
            break
    if last - first > 1 and words[-1] == "please":
        last -= 1
    if first >= last or (first, last) == (0, len(spans)):
        return value
    return value[spans[first][0] if first else 0:spans[last - 1][1] if last < len(spans) else len(value)].strip()


_HEDGING = frozenset({"hmm", "hmmm", "hm", "um", "umm", "uh", "er", "sure", "check", "dunno", "idk", "clue", "sec",
                      "moment"})
HEDGES = _HEDGING | {"not", "yet", "let", "me", "im", "i", "am", "no", "ok", "okay", "well", "so", "wait", "one",
                     "second", "a", "hang", "on", "just", "really", "maybe", "honestly", "sorry", "actually",
                     "right", "now", "think"}
"""The words that hedge and say nothing of their own: a message made only of them, one a hedge
("hmm, not sure yet", "let me check", "one sec"), is no answer, and around "I don't know" they
are no words of an answer ("hmm, not sure yet, I don't know")."""


def only_hedges(text: str) -> bool:
    """``text`` says nothing but :data:`HEDGES`, one of them a hedge ("hmm let me check", "not
    sure", "no clue"): no free-text answer. "ok" or "no" alone, a message with any other word or
    with a number, says something."""
    words = {word for _, _, word in said_words(text)}
    return bool(words & _HEDGING) and words <= HEDGES


@dataclass(frozen=True)
class WholeMessage:
    """The whole trimmed message is the value, less the words that introduce it
    (:func:`without_introduction`; ``keep_intro=True`` keeps the message as said): at least
    ``min_length`` characters, not a message that only hedges ("hmm, let me check": :func:`only_hedges`);
    with ``questions=False``, not a message that asks something (one that ends with "?")."""

    field: str
    min_length: int = 1
    questions: bool = True
    keep_intro: bool = False
    kind: Literal["whole_message"] = "whole_message"

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        value = text.strip() if self.keep_intro else without_introduction(text)
        if len(value) < self.min_length or (not self.questions and value.endswith("?")) or only_hedges(value):
            return _MISS
        return Resolution("hit", value)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "min_length": self.min_length,
                **({} if self.questions else {"questions": False}),
                **({"keep_intro": True} if self.keep_intro else {})}


@dataclass(frozen=True)
class EnumList:
    """Every value of a list the text names: a list field's values from one message.

    A value right after a negation ("no", "not", "without", "except", "minus", "hold the",
    "instead of", "rather than", "take off", "leave off", "get rid of", "skip", "w/o", "don't want",
    "allergic to", "not a fan of"), or listed on from one with "and" or "or", is left out: "ham but
    no olives" is ``["ham"]``, "without onions and peppers" names neither, "no, make it ham" is
    ``["ham"]``. A message that only leaves values out ("no olives") takes them out of the list
    the field holds; one that says it adds ("olives too", "also olives", "add olives", "extra
    cheese") adds to it; one that swaps ("swap the ham for olives", "replace ham with olives")
    takes out what comes before "for", "with" or "to" and adds what comes after. A message that
    names none and says so ("none", "nothing", "no toppings" for a field named ``toppings``) is
    the empty list: an answer for a field that allows it (``Field.allow_empty``), refused by
    validation for one that does not.
    """

    field: str
    values: tuple[str, ...]
    kind: Literal["enum_list"] = "enum_list"

    def resolve(self, text: str, frame: Mapping[str, Any]) -> Resolution:
        words, negated_at = _negations(text, frozenset(w for v in self.values for spelled in _spellings(v)
                                                      for w in spelled.split()))
        named: list[tuple[int, str]] = []
        dropped: list[str] = []
        taken: list[tuple[int, int]] = []
        # longest values first, so "green peppers" is not also read as "peppers"
        for value in sorted(self.values, key=lambda v: -len(v)):
            start, needle = -1, ""
            for needle in _spellings(value):  # "mushrooms", and "mushroom" for one of them
                spots = [at for at in _occurrences(words, needle) if not any(a <= at < b for a, b in taken)]
                # a value said again after a negation of it is named ("I never eat pineapple, but
                # today ham and pineapple"): its first mention that no negation governs counts
                start = next((at for at in spots if at not in negated_at), spots[0] if spots else -1)
                if start >= 0:
                    break
            if needle.strip() and start >= 0:
                taken.append((start, start + len(needle) - 1))
                if start in negated_at:
                    dropped.append(value)
                else:
                    named.append((start, value))
        held = frame.get("state", {}).get(self.field)
        if named and isinstance(held, list) and (swap := _SWAP.search(words)) is not None:
            # "swap the ham for olives", "replace ham with olives": out what comes before "for"/"with"/"to"
            out = {v for at, v in named if swap.start(1) <= at < swap.start(2)}
            named = [(at, v) for at, v in named if at >= swap.start(2)]
            dropped = [*dropped, *out]
            if named:
                return Resolution("hit", [*(v for v in held if v not in dropped),
                                          *(v for _, v in sorted(named) if v not in held)])
        if named:
            found = [value for _, value in sorted(named)]
            if isinstance(held, list) and _adds(words, taken):  # "olives too": the list given before, and olives
                found = [*(v for v in held if v not in dropped), *(v for v in found if v not in held)]
            return Resolution("hit", found)
        if dropped and isinstance(held, list) and any(v in held for v in dropped):
            return Resolution("hit", [v for v in held if v not in dropped])
        if not dropped and _says_none(words, self.field):
            return Resolution("hit", [])
        return _MISS

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "values": list(self.values)}


@functools.lru_cache(maxsize=1024)
def _spellings(value: str) -> tuple[str, ...]:
    """How a list value is matched (as `` word word ``): as it is, and a plural value ("olives",
    "green peppers") also in the singular ("olive", "green pepper")."""
    words = _WORD.findall(value.lower())
    spelled = " " + " ".join(words) + " "
    last = words[-1] if words else ""
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        return spelled, " " + " ".join([*words[:-1], last[:-1]]) + " "
    return (spelled,)


def _adds(words: str, taken: list[tuple[int, int]]) -> bool:
    """``words`` say the values they name are added to the list held ("olives too", "add ham"),
    outside the values' own words (the "extra" of "extra cheese" is a topping's name)."""
    for start, end in taken:
        words = words[:start] + " " * (end - start) + words[end:]
    return _ADDS.search(words) is not None


def _says_none(words: str, field: str) -> bool:
    """``words`` (as :func:`_negations` gives them) say the list is empty: "none", "nothing", or
    "no"/"without" before the field's name ("no toppings", "without any topping")."""
    if " none " in words or " nothing " in words:
        return True
    noun = field.lower().rsplit("_", 1)[-1]
    nouns = f"(?:{re.escape(noun)}|{re.escape(noun.removesuffix('s'))})"
    return re.search(rf" (?:no|without|zero) (?:(?:any|the|extra) )*{nouns} ", words) is not None


_SWAP = re.compile(r" (?:swap|replace|change|switch|exchange)( .*?)( (?:for|with|to|into) .*)")
"""A swap in ``_negations``' spaced form: group 1 what goes out, group 2 what comes in."""
_ADDS = re.compile(r" (?:too|also|add|plus|extra|more|as well) |^ and ")
"""Words (in ``_negations``' spaced form) that add the values a message names to those held."""
_TOKEN = re.compile(r"[a-z0-9]+|[,.;:!?]")
_NEGATIONS = frozenset({"no", "not", "without", "except", "minus", "hold", "remove", "drop", "skip", "lose", "never",
                        "hate", "hates", "allergic", "dont", "doesnt", "didnt"})
_CHOICE_NEGATIONS = _NEGATIONS - {"no"}
_NEGATION_PAIRS = frozenset({("instead", "of"), ("rather", "than"), ("take", "off"), ("leave", "off"),
                             ("leave", "out"), ("rid", "of"), ("w", "o"),  # "get rid of", "w/o"
                             ("don", "t"), ("doesn", "t"), ("didn", "t")})  # "don't" is two tokens
# words a negation reaches over: "hold the onions", "don't want any onions", "allergic to mushrooms",
# "not a fan of olives"
_KEEP_NEGATING = frozenset({"the", "a", "an", "any", "more", "extra", "and", "or", "nor", "want", "like", "need",
                            "eat", "to", "of", "fan"})
_SELF_CORRECTIONS = frozenset({"wait", "actually", "sorry", "mean", "meant", "make", "rather", "correction"})
"""Words after which a message's own earlier choice no longer holds ("large, no wait, medium")."""
_SELF_CORRECTION = re.compile(r"\b(?:" + "|".join(sorted(_SELF_CORRECTIONS)) + r")\b", re.IGNORECASE)


def _answers_first(text: str) -> bool:
    """``text`` (what follows a self-correction) opens with its answer ("no", "actually yes"), not
    with something said about another matter ("sorry, my mistake, the original address is fine":
    "fine" is said of the address, not of the question)."""
    words = [word for _, _, word in said_words(text)][:2]
    return read_yes_no(" ".join(words)) is not None


def _occurrences(words: str, needle: str) -> list[int]:
    """Where ``needle`` stands in ``words``, in order."""
    found: list[int] = []
    at = words.find(needle)
    while at >= 0:
        found.append(at)
        at = words.find(needle, at + 1)
    return found


_BEYOND = frozenset({"extra", "xtra", "super"})
"""Words that make the value after them another one ("extra large" is no large)."""


def _unnegated(text: str, item_words: frozenset[str]) -> list[str]:
    """The words of ``text`` (lower case) but the item words a negation other than "no" governs:
    a choice typed after "no" is the choice ("no large" at a yes/no question is "no, large"), where
    "no olives" leaves a list's value out."""
    words, negated = _negations(text, item_words, _CHOICE_NEGATIONS)
    kept: list[str] = []
    offset = 0  # a word's offset is that of the space before it, as EnumList matches " word "
    for word in words.split():
        if offset not in negated:
            kept.append(word)
        offset += len(word) + 1
    return kept


def _negations(text: str, item_words: frozenset[str],
               negations: frozenset[str] = _NEGATIONS) -> tuple[str, set[int]]:
    """``text`` as `` word word ... `` (lower case, one space apart, as the values are matched) and
    the offsets in it of the item words a negation governs: those right after it ("hold the
    onions"), and the items listed on with "and", "or" ("without onions and peppers"), up to any
    other word or punctuation ("no, make it ham" negates nothing)."""
    words: list[str] = []
    negated: set[int] = set()
    offset, negating, previous = 0, False, ""
    for token in _TOKEN.findall(text.lower()):
        if not token.isalnum():
            negating, previous = False, token
            continue
        if token in negations or (previous, token) in _NEGATION_PAIRS:
            negating = True
        elif negating and token in item_words:
            negated.add(offset)
        elif token not in _KEEP_NEGATING:
            negating = False
        words.append(token)
        offset += len(token) + 1
        previous = token
    return " " + " ".join(words) + " ", negated


Resolver = EnumCheck | Range | JsonPath | Pattern | WholeMessage | EnumList


def read_path(root: Mapping[str, Any], path: str) -> Any:
    """Read a dotted path (``state.address.city``; ``$``-prefixed and ``${...}`` forms accepted)."""
    path = path.strip()
    if path.startswith("${") and path.endswith("}"):
        path = path[2:-1]
    path = path.removeprefix("$.").removeprefix("$")
    value: Any = root
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def enum_check(field: str, values: Sequence[str]) -> EnumCheck:
    """Resolve ``field`` when the text names exactly one of ``values``."""
    return EnumCheck(field, tuple(values))


def enum_list(field: str, values: Sequence[str]) -> EnumList:
    """Resolve the list ``field`` to every one of ``values`` the text names (in the text's order)."""
    return EnumList(field, tuple(values))


def range_(field: str, *, min: float | None = None, max: float | None = None) -> Range:
    """Resolve ``field`` when the text holds exactly one number in ``[min, max]``."""
    return Range(field, min, max)


def jsonpath(field: str, path: str) -> JsonPath:
    """Resolve ``field`` from a path in the run (``input.x``, ``state.x``, ``results.node.x``)."""
    return JsonPath(field, path)


def pattern(field: str, regex: str, *, flags: int = re.IGNORECASE, value: str | None = None,
            case: Literal["upper", "lower"] | None = None, early: bool = False) -> Pattern:
    """Resolve ``field`` when ``regex`` matches exactly one distinct value in the text: its first
    group, or ``value`` expanded with the match's groups, in upper or lower ``case`` when one is
    set (``pattern("order", r"\\b([A-Z])[- ]?(\\d{4})\\b", value=r"\\1-\\2", case="upper")`` reads
    "a1002", "A 1002" and "A-1002" as ``"A-1002"``). A bad pattern, a ``value`` that names a group
    the pattern does not have, or another ``case`` raises ``ValueError`` when the flow is defined.

    ``early=True``: when the run reaches the pattern's step and its field was never asked, the
    pattern also reads the messages the customer sent since the run started (the latest one it
    finds a value in wins), so "it arrived damaged, I want my money back", then "A-1003", gives
    the reason step its reason without asking. Set it only on a pattern that cannot mistake a
    message about something else for its value."""
    if case not in (None, "upper", "lower"):
        raise ValueError(f"pattern resolver of {field!r}: case must be 'upper' or 'lower', not {case!r}")
    try:
        compiled = re.compile(regex, flags)
    except re.error as exc:
        raise ValueError(f"pattern resolver of {field!r}: bad regex {regex!r}: {exc}") from None
    if value is not None:
        _check_template(field, compiled, value)
    return Pattern(field, regex, flags, value, case, early=early)


def _check_template(field: str, compiled: re.Pattern[str], value: str) -> None:
    """Refuse a ``value`` template ``re`` could not expand with ``compiled``'s groups (it would only
    say so at the first match, mid-conversation): the template is expanded by ``re`` itself, on
    the empty match of the same pattern with an empty alternative (same groups, all unmatched)."""
    try:
        empty = re.compile(f"{compiled.pattern}|", compiled.flags).match("")
        if empty is not None:  # None only when a verbose pattern's last comment swallows the "|"
            empty.expand(value)
    except (re.error, IndexError) as exc:
        raise ValueError(f"pattern resolver of {field!r}: value {value!r} does not fit the regex "
                         f"{compiled.pattern!r} ({compiled.groups} groups): {exc}") from None


def whole_message(field: str, *, min_length: int = 1, questions: bool = True,
                  keep_intro: bool = False) -> WholeMessage:
    """Resolve ``field`` to the user's whole message (a free-text answer), less the words that
    introduce the value ("it's 5 Main Street", "my new address is 5 Main Street" and "send it to 5
    Main Street" are "5 Main Street": :data:`VALUE_INTRODUCERS`); ``keep_intro=True`` keeps the
    message as said. ``questions=False``: a message that asks something (ends with "?") is not the
    answer, so with no model to tell a question from an answer, "how long does a refund take?" is
    not taken as a refund's reason (the step asks again); leave it True for a field that is a
    question ("what would you like to ask the team?")."""
    return WholeMessage(field, min_length, questions, keep_intro)
