"""The opening: how an agent speaks first in a new session.

An agent has an opening when one of its flows is triggered by the ``start`` event
(``on_event("start")``); a host that opens a conversation before the customer says anything (``tether
chat``, a voice bot calling ``/v1/chat/completions`` with no user message) sends that event.
"""

from __future__ import annotations

from tether.agent import Agent
from tether.engine.core.inputs import Event
from tether.flow.triggers import EventTrigger

__all__ = ["OPENING_EVENT", "has_opening", "opening"]

OPENING_EVENT = "start"


def has_opening(agent: Agent) -> bool:
    """True when a flow of ``agent`` is triggered by the ``start`` event."""
    return any(isinstance(t, EventTrigger) and t.name == OPENING_EVENT for flow in agent.flows for t in flow.on)


def opening(agent: Agent, key: str = "") -> Event | None:
    """The input that lets ``agent`` speak first in a new session (``key`` deduplicates it), or
    None when it has no opening."""
    return Event(OPENING_EVENT, key=key) if has_opening(agent) else None
