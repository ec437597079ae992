"""Routing by keywords when there is no model: a message that contains a flow's trigger phrase
scores that flow 100, as if the understand call had, so "actually never mind, I want a refund
instead" switches flows at any point of a conversation with no model.

A phrase matches when every one of its content words (three letters or more, a few filler words
aside) is a word of the message, in any order: "change my delivery address" matches "I need to
change the delivery address". A ``!`` phrase that matches scores the flow 0.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tether.engine.core.judgement import Judgement
from tether.flow.flow import Flow
from tether.flow.triggers import MessageTrigger

__all__ = ["covered_words", "keyword_scores", "phrase_matches"]

_WORD = re.compile(r"[^\W_]+")
_FILLER = frozenset({"the", "and", "for", "with", "from", "this", "that", "you", "your", "can", "want", "need",
                     "please"})


@lru_cache(maxsize=1024)
def _content_words(phrase: str) -> frozenset[str]:
    words = {w for w in _WORD.findall(phrase.lower()) if len(w) >= 3 and w not in _FILLER}
    return frozenset(words or _WORD.findall(phrase.lower()))


def phrase_matches(phrase: str, words: set[str]) -> bool:
    """Every content word of ``phrase`` is one of ``words`` (the message's, lower case)."""
    wanted = _content_words(phrase)
    return bool(wanted) and wanted <= words


def keyword_scores(message: str, flows: list[Flow]) -> Judgement:
    """The flows' scores read from their trigger phrases (100 or 0); no model call."""
    words = set(_WORD.findall(message.lower()))
    judgement = Judgement()
    for flow in flows:
        trigger = next((t for t in flow.on if isinstance(t, MessageTrigger) and not t.catch_all), None)
        if trigger is None:
            continue
        never = any(phrase_matches(p[1:], words) for p in trigger.phrases if p.startswith("!") and len(p) > 1)
        hit = any(phrase_matches(p, words) for p in trigger.phrases if not p.startswith("!"))
        judgement.flows[flow.id] = 100.0 if hit and not never else 0.0
    return judgement


def covered_words(message: str, flow: Flow) -> frozenset[str]:
    """The message's words that the flow's matching trigger phrases name (how much of the message
    the flow explains)."""
    words = set(_WORD.findall(message.lower()))
    trigger = next((t for t in flow.on if isinstance(t, MessageTrigger) and not t.catch_all), None)
    if trigger is None:
        return frozenset()
    hits = [_content_words(p) for p in trigger.phrases if not p.startswith("!") and phrase_matches(p, words)]
    return frozenset().union(*hits)
