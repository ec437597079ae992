"""Conversation repair: how an agent recognises the ways people leave the happy path, and what it
says then, in one place an author can change.

People correct an earlier answer, cancel, say "thanks" mid-form, close the conversation, come back
to a task after a detour. The turn handles these as named patterns (see ``docs/repair.md``); an
agent's :class:`Repair` holds their keywords (how each is recognised with no model) and their fixed
texts. Change one with ``Agent(..., repair=Repair(cancelled="Done, I've dropped it."))``; switch a
pattern off by leaving it out of ``patterns``. A flow overrides the cancel pattern with
``Flow(..., on_cancel="node_id")`` or refuses it with ``cancellable=False``.

Texts may use ``${task}`` (the flow's name, else its description, of the task concerned),
``${options}`` (the choices a clarification offers), ``${abilities}`` (what the agent's flows
do) and ``${choices}`` (a decide step's choices), in the one template syntax
(:mod:`tether.templating`; the older ``{task}`` works too).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.flow.resolvers import VALUE_INTRODUCERS, said_words
from tether.flow.triggers import MessageTrigger
from tether.flow.yes_no import said_as_hold
from tether.templating import fill_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tether.flow.flow import Flow

__all__ = ["PATTERNS", "Repair", "asks_about", "asks_to_cancel", "cannot_handle_text", "content_words",
           "corrected_text", "marks_correction", "phrase_in", "phrase_starts", "spoken_only", "task_name"]

PATTERNS = ("correction", "cancel", "chitchat", "completed", "continue", "clarify", "cannot_handle", "skip")
"""Every repair pattern, by name."""

@functools.lru_cache(maxsize=256)
def _words(text: str) -> tuple[str, ...]:
    """The words of ``text``, lower case, apostrophes dropped (cached: a turn reads its message's
    words for several patterns)."""
    return tuple(word for _, _, word in said_words(text))


@functools.lru_cache(maxsize=1024)
def _phrase_words(phrase: str) -> tuple[str, ...]:
    """The words of a keyword phrase (an agent's phrases are few and fixed: each is split once)."""
    return _words(phrase)


@dataclass(frozen=True)
class _PhraseTable:
    """Phrases indexed by their first word, longest first, each with its group; ``vocabulary``
    holds every word of every phrase and of the filler, so a message with any other word is
    refused before it is matched."""

    by_first: dict[str, list[tuple[tuple[str, ...], int]]]
    filler: frozenset[str]
    vocabulary: frozenset[str]


@functools.lru_cache(maxsize=64)
def _phrase_table(groups: tuple[tuple[str, ...], ...], filler: tuple[str, ...]) -> _PhraseTable:
    """The phrases of ``groups`` (an agent's are few and fixed: each table is built once)."""
    phrases = sorted(((_phrase_words(p), index) for index, group in enumerate(groups) for p in group
                      if _phrase_words(p)), key=lambda item: -len(item[0]))
    by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    for phrase, index in phrases:
        by_first.setdefault(phrase[0], []).append((phrase, index))
    fill = frozenset(w for f in filler for w in _phrase_words(f))
    return _PhraseTable(by_first, fill, fill | {w for phrase, _ in phrases for w in phrase})


def content_words(text: str) -> set[str]:
    """The words of ``text`` that say something (three letters or more, a few common ones aside)."""
    return {w for w in _words(text) if len(w) >= 3 and w not in _COMMON}


_COMMON = frozenset({"the", "and", "for", "with", "from", "this", "that", "you", "your", "can", "want", "need",
                     "please", "about", "its", "our", "will", "would", "like", "get"})


def task_name(flow: Flow) -> str:
    """How a text names a flow's task: its ``name`` when it has one, else its description (first
    letter in lower case), else its id."""
    if flow.name != flow.id or not flow.description:
        return flow.name
    return flow.description[:1].lower() + flow.description[1:]


def phrase_in(text: str, phrases: tuple[str, ...]) -> bool:
    """Some phrase occurs in ``text`` as whole words, in order (case and apostrophes ignored)."""
    by_first = _phrase_table((tuple(phrases),), ()).by_first
    words = _words(text)
    for i, word in enumerate(words):
        for phrase, _ in by_first.get(word, ()):
            if words[i:i + len(phrase)] == phrase:
                return True
    return False


def phrase_starts(text: str, phrases: tuple[str, ...]) -> list[int]:
    """Where in ``text``'s words (lower case, apostrophes dropped) a phrase starts, in order."""
    by_first = _phrase_table((tuple(phrases),), ()).by_first
    words = _words(text)
    starts: list[int] = []
    for i, word in enumerate(words):
        for phrase, _ in by_first.get(word, ()):
            if words[i:i + len(phrase)] == phrase:
                starts.append(i)
                break
    return starts


_NARRATED = frozenset({"tried", "try", "trying", "wanted", "attempted", "able", "had", "said", "told", "didnt",
                       "couldnt", "cant", "cannot", "wont", "dont", "never", "not", "how", "why", "when"})
"""Words that, before a cancel phrase, tell of it, ask about it or refuse it instead of asking it:
"I tried to cancel it", "I had to cancel my trip", "don't cancel it"."""


def asks_to_cancel(text: str, phrases: tuple[str, ...]) -> bool:
    """A cancel phrase of ``phrases`` occurs in ``text`` as a request ("cancel", "please cancel
    this", "I want to cancel"), not told of ("I tried to cancel it but was charged", "how do I
    cancel?"): none of the three words before it is a word that narrates or asks about it."""
    if not phrase_in(text, phrases):  # the common case, read once
        return False
    words = _words(text)
    return any(not _NARRATED.intersection(words[max(0, i - 3):i]) for i in phrase_starts(text, phrases))


_LEADING = (("no",), ("nope",), ("nah",), ("yes",), ("yeah",), ("yep",), ("ok",), ("okay",), ("oh",), ("sorry",),
            ("hmm",), ("oops",), ("um",), ("but",), ("to",), ("is",), ("should", "be"), ("thats", "wrong"),
            ("not", "quite"), *(("wrong", part) for part in ("street", "town", "city", "number", "address", "one")),
            ("wrong",),
            # how a new value is introduced: "no, it should go to 14 Oak Avenue", "sorry, my name is Ada"
            *VALUE_INTRODUCERS)
_TRAILING = (("please",), ("then",))


_KEEPS = frozenset({"keep", "leave", "forget", "dont", "cancel", "never", "can", "could", "would"})
_SENTENCE = frozenset({"is", "was", "are", "were", "thats"})


def restates_value(old: str, new: str) -> bool:
    """``new`` (a refusal's text less its refusal and correction words) gives another ``old``: it
    restates at least half the words of ``old`` (and one at least); it neither opens by keeping
    the value or asking ("keep the old one", "leave it", "don't change it", "I don't live there",
    "can you keep it as Main St") nor says "keep it" or "unchanged" ("it doesn't fit but I'll keep
    it"); and it is no sentence about a value ("Main St is right", "that's what I meant") unless
    ``old`` was one ("the colour is wrong": a reason said as a sentence). A delivery note after the
    value ("6 Main St, leave it at the door") does not make it a refusal."""
    before, after = content_words(old), content_words(new)
    if not before or 2 * len(before & after) < len(before):
        return False
    said = _words(new)
    if not said or said[0] in _KEEPS or said[:2] == ("i", "dont") or "unchanged" in said \
            or phrase_in(new, ("keep it",)):
        return False
    return _SENTENCE.isdisjoint(said) or not _SENTENCE.isdisjoint(_words(old))


def corrected_text(text: str, markers: tuple[str, ...]) -> str | None:
    """The new value a correction marked at its start or its end gives as free text: ``text``
    without its markers and the small words around them ("actually make it 14 Main Street" and
    "sorry, it's 14 Main Street instead" are "14 Main Street"); None when no marker stands at
    either end, nothing is left, or the message asks a question ("wait, what?")."""
    if text.rstrip().endswith("?"):
        return None
    spans = said_words(text)
    words = tuple(word for _, _, word in spans)
    marks = sorted((_phrase_words(m) for m in markers if _phrase_words(m)), key=len, reverse=True)
    marked = False
    start, end = 0, len(words)
    while start < end:
        phrase = next((p for p in (*marks, *_LEADING) if words[start:start + len(p)] == p), None)
        if phrase is None:
            break
        marked = marked or (phrase in marks and _marks_as_said(words, start, phrase))
        start += len(phrase)
    while end > start:
        phrase = next((p for p in (*marks, *_TRAILING) if words[end - len(p):end] == p), None)
        if phrase is None or (phrase in marks and not _marks_as_said(words, end - len(phrase), phrase)):
            break  # "ok, no need to wait": "wait" marks nothing, and the message is no corrected value
        marked = marked or phrase in marks
        end -= len(phrase)
    if not marked or start >= end:
        return None
    return text[spans[start][0]:spans[end - 1][1]].strip()


def _marks_as_said(words: tuple[str, ...], at: int, phrase: tuple[str, ...]) -> bool:
    """A marker phrase at ``at`` marks a correction: a one-word hold ("wait") only when it is said
    as one (:func:`~tether.flow.yes_no.said_as_hold`, or "no wait": not "no need to wait")."""
    return len(phrase) != 1 or phrase[0] not in ("wait", "stop") or said_as_hold(words, at) \
        or (at > 0 and words[at - 1] == "no")


def marks_correction(text: str, markers: tuple[str, ...]) -> bool:
    """A correction marker occurs in ``text`` (as whole words), a hold only when said as one:
    "actually, medium", "wait, A-1002", not "no need to wait"."""
    words = _words(text)
    return any(_marks_as_said(words, at, phrase) for phrase in
               (_phrase_words(m) for m in markers if _phrase_words(m))
               for at in range(len(words)) if words[at:at + len(phrase)] == phrase)


_ASKING = frozenset({"where", "wheres", "when", "whens", "has", "hasnt", "did", "didnt", "does", "doesnt"})
_LEAD_IN = frozenset({"wait", "oh", "and", "so", "but", "ok", "okay", "sorry", "also", "btw", "hey", "um", "hmm"})
_CHANGES = frozenset({"instead", "rather", "meant", "actually", "add", "make", "change", "remove", "want"})


def asks_about(text: str) -> bool:
    """The message only asks about something, rather than naming a value: one question that opens
    with "where", "when", "has", "did" or "does", or asks the status of something ("wait, where's
    A-1001?", "has A-1001 shipped?", "what's the status of A-1001?"). Not a proposal ("oops, it's
    A-1002?", "medium?", "what about olives?", "has to be medium?"), a question about what the
    customer said ("did I say large?"), or a question with a change said beside it ("does it come
    with olives? add them then", "does A-1002 work instead?")."""
    asked, mark, after = text.rpartition("?")
    if not mark or said_words(after):
        return False
    words = list(_words(asked))
    if _CHANGES.intersection(words):
        return False
    start = next((i for i, w in enumerate(words) if w not in _LEAD_IN), len(words))
    first, second = [*words[start:start + 2], "", ""][:2]
    if first in ("whats", "what") and words[start + 1:start + 3] in (["the", "status"], ["is", "the"]):
        return "status" in words[start:start + 4]
    return (first in _ASKING and second not in ("to", "i", "we")) or first == "status"


def spoken_only(text: str, *groups: tuple[str, ...], filler: tuple[str, ...] = ()) -> set[int]:
    """Which of ``groups`` the text is made of, when it is made only of their phrases (and
    ``filler`` words); an empty set when anything else is said. ``"thanks, that's all"`` is made of
    a thanks phrase and a closing phrase."""
    words = _words(text)
    table = _phrase_table(tuple(map(tuple, groups)), tuple(filler))  # an author may give lists
    if not table.vocabulary.issuperset(words):
        return set()
    used: set[int] = set()
    i = 0
    while i < len(words):
        for phrase, index in table.by_first.get(words[i], ()):
            if words[i:i + len(phrase)] == phrase:
                used.add(index)
                i += len(phrase)
                break
        else:
            if words[i] not in table.filler:
                return set()
            i += 1
    return used


@dataclass(frozen=True)
class Repair:
    """An agent's repair patterns: which are on, their keywords, their fixed texts.

    Attributes:
        patterns: the patterns that are on (see :data:`PATTERNS`).
        cancel_phrases: a message containing one of these cancels the task being asked for.
        thanks_phrases, chitchat_phrases, bot_phrases: a message made only of these is small talk
            ("are you a bot?" is answered ``bot_reply``).
        completed_phrases: a message made only of these (and thanks) closes the conversation.
        correction_markers: words that make a message a correction even when it also answers
            the step ("actually, make it medium" at a yes/no step; a bare yes or no with a new
            value for an earlier step, "no, medium", is one without a marker).
        switch_markers: words that make a message naming another task a switch to it ("change the
            address instead"): the task under way is cancelled, not kept to come back to.
        skip_phrases: the customer cannot answer the step ("I don't know").
        filler: words that change nothing around those phrases ("ok, thanks", "hi there, how
            are you?"); a message made only of filler is none of them ("hello" starts a flow).
        cancelled: said when a task is cancelled.
        not_cancellable: said when the task being asked for cannot be cancelled.
        nothing_to_cancel: said when a message made only of cancel phrases ("never mind") comes
            with no task under way (and names none to start).
        compliment_words: small talk a model recognised that has one of these words is a
            compliment ("you're a star").
        thanks_reply, chitchat_reply, bot_reply, compliment_reply, small_talk_reply: the answer to
            thanks, to "how are you?" (the chitchat phrases), to "are you a bot?" (the bot phrases),
            to a compliment, and to other small talk a model recognised ("tell me a joke"); the step
            then asks again.
        completed_reply: the closing reply.
        complete_session: the closing reply completes the session (the next message starts a new one).
        corrected: said when a correction changed a value, at a step the engine phrases, before
            the step asks on (``${changes}``: "the size to medium"); a step the model phrases
            says it in its own words.
        resume: said before a suspended task asks its question again.
        clarify: asks which task the customer means.
        clarify_margin: two flows whose scores are within this margin (and at or above the
            routing threshold) are a tie to clarify.
        cannot_handle: said when nothing understands a message (``${abilities}``: the tasks a message
            can start; with none, the sentence naming them is left out).
        cannot_handle_limit: how many messages in a row nothing understands (at one collect step,
            or with no task under way and no model) before a person takes over, saying
            ``handoff``; small talk, questions and other repairs never count.
        handoff: said when a step cannot go on and a person takes over.
        pick_choice: said when, with no model, a message names none of a decide step's choices
            (``${choices}``: their labels, "Yes or No"); the step waits for a pick.
    """

    patterns: tuple[str, ...] = PATTERNS
    cancel_phrases: tuple[str, ...] = ("cancel", "forget it", "never mind", "nevermind", "stop this",
                                       "i changed my mind", "i dont want it anymore")
    thanks_phrases: tuple[str, ...] = ("thanks", "thank you", "thanks a lot", "thank you very much", "thx", "ty",
                                       "ta", "many thanks", "much appreciated", "appreciate it", "cheers", "great",
                                       "perfect", "cool", "nice", "lovely", "brilliant", "awesome", "sweet")
    chitchat_phrases: tuple[str, ...] = ("how are you", "how are you doing", "hows it going", "how is it going",
                                         "hows your day", "how is your day", "how was your day", "how you doing",
                                         "nice to meet you", "you are great", "youre great")
    compliment_words: tuple[str, ...] = ("lovely", "star", "gem", "great", "amazing", "awesome", "brilliant",
                                         "wonderful", "fantastic", "helpful", "kind", "best", "legend")
    bot_phrases: tuple[str, ...] = ("are you a bot", "are you a robot", "are you an ai", "are you real",
                                    "is this a bot", "am i talking to a bot", "am i talking to a robot",
                                    "is this automated", "are you a real person")
    completed_phrases: tuple[str, ...] = ("thats all", "that is all", "thats it", "that is it", "thats everything",
                                          "that is everything", "nothing else",
                                          "no thanks", "no thank you", "bye", "goodbye", "all good", "im done",
                                          "we are done", "all done")
    correction_markers: tuple[str, ...] = ("actually", "instead", "i meant", "change it", "make it", "rather",
                                           "correction", "sorry i meant", "wait")
    switch_markers: tuple[str, ...] = ("instead", "rather")
    skip_phrases: tuple[str, ...] = ("i dont know", "dont know", "no idea", "i dont have it",
                                     "i cant find it", "i dont remember")
    filler: tuple[str, ...] = ("ok", "okay", "oh", "well", "so", "and", "very", "much", "so", "please", "all",
                               "for", "now", "you", "that", "the", "help", "your", "again",
                               # a greeting around small talk ("hi there, how are you?") is small talk
                               "hi", "hello", "hey", "there", "good", "morning", "afternoon", "evening")
    cancelled: str = "OK, I've cancelled that."
    not_cancellable: str = "Sorry, this can't be cancelled at this point."
    nothing_to_cancel: str = "There's nothing in progress to cancel. Is there anything else I can help with?"
    thanks_reply: str = "You're welcome!"
    chitchat_reply: str = "I'm doing well, thanks for asking!"
    bot_reply: str = "I'm a virtual assistant, here to help."
    compliment_reply: str = "Thanks, that's kind of you!"
    small_talk_reply: str = "Happy to chat!"
    completed_reply: str = "Glad I could help. Goodbye!"
    complete_session: bool = True
    corrected: str = "OK, I've changed ${changes}."
    resume: str = "Now, back to where we were."
    clarify: str = "Do you want to ${options}?"
    clarify_margin: float = 10.0
    cannot_handle: str = "Sorry, I didn't understand that. I can ${abilities}."
    cannot_handle_limit: int = 3
    handoff: str = "I'm passing you to a person, who will take it from here."
    pick_choice: str = "Sorry, I didn't catch that. Please answer ${choices}."

    def on(self, pattern: str) -> bool:
        """Whether ``pattern`` is switched on."""
        return pattern in self.patterns

    def small_talk(self, text: str) -> set[int]:
        """Which kinds of small talk ``text`` is made of, with filler only besides (0 thanks, 1 the
        chitchat phrases, 2 a closing, 3 the bot phrases; see :func:`spoken_only`): empty when it
        says anything else."""
        return spoken_only(text, self.thanks_phrases, self.chitchat_phrases, self.completed_phrases,
                           self.bot_phrases, filler=self.filler)

    def problems(self) -> list[str]:
        """What is wrong with this configuration (an unknown pattern name, a bad margin)."""
        found = [f"unknown repair pattern {name!r} (known: {', '.join(PATTERNS)})"
                 for name in self.patterns if name not in PATTERNS]
        if isinstance(self.cannot_handle_limit, bool) or not isinstance(self.cannot_handle_limit, int) \
                or self.cannot_handle_limit < 1:
            found.append(f"cannot_handle_limit must be a positive integer, got {self.cannot_handle_limit!r}")
        if not 0 <= self.clarify_margin <= 100:
            found.append(f"clarify_margin must be between 0 and 100, got {self.clarify_margin!r}")
        return found


def cannot_handle_text(repair: Repair, flows: Sequence[Flow]) -> str:
    """``Repair.cannot_handle`` with ``${abilities}``: the tasks a message can start (flows with
    trigger phrases), by name or description. With none, the sentence naming them is left out
    ("Sorry, I didn't understand that."); a text that is only that sentence says "help"."""
    names = [task_name(f) for f in flows
             if any(isinstance(t, MessageTrigger) and t.phrases for t in f.on)]
    if not names:  # nothing to name: the sentence that would name it is left out
        kept = " ".join(s for s in re.split(r"(?<=[.!?])\s+", repair.cannot_handle) if "${abilities}" not in s)
        return kept or fill_names(repair.cannot_handle, {"abilities": "help"})
    abilities = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    return fill_names(repair.cannot_handle, {"abilities": abilities})
