"""The cannot-handle repair pattern with no task under way and no model: nothing took the message,
so the agent says what it can do (``Repair.cannot_handle``); after ``Repair.cannot_handle_limit``
such messages in a row, a person takes over and the customer is told so (``Repair.handoff``).

The streak is read from the transcript window (the agent's own replies in a row before this
message), so the session document needs no counter. At a collect step the count lives in the run
(:func:`tether.engine.graph.collect.dispatch_collect`).
"""

from __future__ import annotations

from tether.engine.core.events import HandoffEvent
from tether.engine.core.results import HandoffRequest
from tether.engine.core.state import TurnState
from tether.flow.repair import cannot_handle_text

__all__ = ["cannot_handle_reply"]


def _streak(ts: TurnState, text: str) -> int:
    """How many of the agent's latest replies, in a row, were ``text`` (this turn's message aside)."""
    count = 0
    for message in reversed(ts.session.messages):
        if message.role == "user" or message.role == "system":
            continue
        if message.text != text:
            break
        count += 1
    return count


def cannot_handle_reply(ts: TurnState) -> str:
    """What the agent says to a message nothing took (no task under way, no model): what it can
    do, or, at the limit, that a person takes over (the session is handed off)."""
    repair = ts.agent.repair
    text = cannot_handle_text(repair, ts.agent.flows)
    streak = _streak(ts, text) + 1
    if streak < repair.cannot_handle_limit:
        return text
    reason = f"nothing the customer said could be understood ({streak} messages in a row)"
    ts.emit(HandoffEvent(run_id=None, flow=None, at=ts.now, agent="human", reason=reason))
    ts.handoff = HandoffRequest("human", reason, None)
    return repair.handoff
