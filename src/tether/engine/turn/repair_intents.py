"""Repair intents read from a message with no model: keywords (see :class:`tether.flow.repair.Repair`).

With a task under way (a run asking), a cancel phrase anywhere cancels it, a message made only of
small talk is chitchat, and a "don't know" phrase is a skip. With no task under way, a message
made only of closing phrases (and thanks) completes the conversation, one made only of small
talk is chitchat (so "thanks!" after an order does not start another one), and one made only of
cancel phrases is a cancel with nothing to cancel ("never mind" after an order starts no other). The understand call
reports the same intents (its ``intent`` section) when a model judges the message.
"""

from __future__ import annotations

from tether.flow.repair import Repair, asks_to_cancel, phrase_in, spoken_only
from tether.flow.resolvers import said_words

__all__ = ["INTENTS", "keyword_intent", "small_talk_kind", "small_talk_reply"]

INTENTS = ("cancel", "chitchat", "completed", "skip")
"""The repair intents an understand call may report."""

_THANKS, _CHITCHAT, _CLOSING, _BOT = 0, 1, 2, 3
_CANCEL_FILLER = ("it", "that", "this", "then", "actually", "oh")
"""Words around a cancel phrase that name nothing ("oh never mind then", "cancel that")."""
_GREETINGS = frozenset({"hi", "hello", "hey", "hiya", "howdy", "yo", "there", "good", "morning", "afternoon",
                        "evening", "again"})
"""The words of a greeting ("hi", "hello again", "good morning"): while a step asks, small talk."""


def _greeting(text: str) -> bool:
    said = [word for _, _, word in said_words(text)]
    return bool(said) and all(word in _GREETINGS for word in said)


def keyword_intent(repair: Repair, text: str, *, task_under_way: bool, agent_step: bool = False) -> str | None:
    """The repair intent the message's words carry, or None. At an agent step (``agent_step``) a
    message made only of closing phrases completes the conversation, and nothing is a skip (its
    model hears "I don't know" as it hears any answer)."""
    parts = repair.small_talk(text)
    if agent_step:
        if repair.on("cancel") and asks_to_cancel(text, repair.cancel_phrases):
            return "cancel"
        if repair.on("completed") and _CLOSING in parts:
            return "completed"
        return "chitchat" if repair.on("chitchat") and parts else None
    if task_under_way:
        if repair.on("cancel") and asks_to_cancel(text, repair.cancel_phrases):
            return "cancel"
        if repair.on("chitchat") and ((parts and _CLOSING not in parts) or _greeting(text)):
            return "chitchat"  # a greeting while a step asks is no answer and no failed try either
        if repair.on("skip") and phrase_in(text, repair.skip_phrases):
            return "skip"
        return None
    if repair.on("completed") and _CLOSING in parts:
        return "completed"
    if repair.on("chitchat") and parts:
        return "chitchat"
    if repair.on("cancel") and spoken_only(text, repair.cancel_phrases, repair.thanks_phrases,
                                           filler=(*repair.filler, *_CANCEL_FILLER)) \
            and asks_to_cancel(text, repair.cancel_phrases):
        return "cancel"  # "never mind, thanks" with nothing under way: said only to cancel, it starts nothing
    return None


def small_talk_kind(repair: Repair, text: str) -> str:
    """Which small talk the message is: ``bot`` (the bot phrases: "are you a bot?"),
    ``how_are_you`` (the chitchat phrases), ``thanks``, ``compliment`` (a compliment word in small
    talk only a model recognised: "you're a star"), ``greeting`` (only greeting words: "hi there",
    which a model may call small talk), or ``other`` ("tell me a joke")."""
    parts = repair.small_talk(text)
    if _BOT in parts or phrase_in(text, repair.bot_phrases):
        return "bot"
    if _CHITCHAT in parts or phrase_in(text, repair.chitchat_phrases):
        return "how_are_you"
    if _THANKS in parts or phrase_in(text, ("thanks", "thank you", "thx")):
        return "thanks"
    if phrase_in(text, repair.compliment_words):
        return "compliment"
    return "greeting" if _greeting(text) else "other"


def small_talk_reply(repair: Repair, text: str) -> str:
    """The agent's answer to the small talk ``text`` is (see :func:`small_talk_kind`); none to a
    greeting: the agent's opening, or its question again, answers it."""
    return {"bot": repair.bot_reply, "how_are_you": repair.chitchat_reply, "thanks": repair.thanks_reply,
            "compliment": repair.compliment_reply, "greeting": ""}.get(small_talk_kind(repair, text),
                                                                      repair.small_talk_reply)
