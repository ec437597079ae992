"""Continuing a turn that did not finish.

Every mid-turn write stores the working session with an :class:`~tether.durable.turns.OpenTurn`
mark (see ``TurnState.checkpoint``); the final save clears it. A session loaded with a mark was
left by a turn that never finished: its worker died, or its last save lost a compare-and-swap.
That turn is continued from its last write, never restarted and never inherited:

- the same input again (a message with the same id, the same wake key, approval or signal id)
  continues the turn and gets the turn's whole reply: what it had said before the write, and
  what the continuation says;
- :class:`~tether.engine.core.inputs.Resume` continues it for a host that is about to take another
  input (the runtime does this before a new message, so each reply belongs to its own message);
- any other input is refused with ``turn-unfinished``.

A message whose turn *finished* is a ``duplicate-input`` when it comes again (a client retrying
after losing the response); :func:`recorded_reply` gives it the reply its turn recorded, from the
session's window of recent messages (the host reads whether that turn completed from
``Session.completed_inputs``).

The continuation skips Ingest, Understand and Decide (they ran and their effects were written),
restores the turn's bookkeeping (who holds the floor, what was consumed, who answered, the
speaker), moves the runs on from their written positions (an action re-dispatched there gets its
journaled results back), speaks if the turn had not spoken yet, and settles.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from tether.durable.turns import OpenTurn
from tether.engine.core.inputs import Message, Resume, TurnInput
from tether.engine.core.marks import input_from, input_mark
from tether.engine.core.results import OutMessage, ScheduledWake, TurnResult
from tether.engine.core.session import Session
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.turn.return_phase import turn_result
from tether.engine.turn.run_phase import keep_moving, run_phase
from tether.engine.turn.settle import bookkeeping, settle
from tether.engine.turn.speak import choose_speaker, speak_unless_answered
from tether.errors import FlowRuntimeError

__all__ = ["continue_turn", "is_retry", "recorded_reply"]


def is_retry(turn: OpenTurn, value: TurnInput) -> bool:
    """True when ``value`` is the unfinished turn's own input, sent again."""
    mark = input_mark(value)
    return turn.answers(str(mark["kind"]), mark.get("id"))


def _restore(ts: TurnState, turn: OpenTurn) -> None:
    ts.open_input = dict(turn.input)
    ts.input = input_from(turn.input)
    ts.now = turn.at
    ts.user_seq = turn.user_seq
    ts.floor, ts.floor_taken = turn.floor, turn.floor_taken
    ts.consumed_by = dict(turn.consumed_by)
    ts.answered_by = set(turn.answered_by)
    ts.spoke = turn.spoke
    if turn.speaker is not None:
        ts.speaker = SpeakRequest(turn.speaker.run_id, turn.speaker.node_id, tuple(turn.speaker.fields),
                                  turn.speaker.then_ask, tuple(turn.speaker.batch))
    ts.messages = [OutMessage(text=m.text, kind=m.kind, key=m.key, run_id=m.run_id, node_id=m.node_id,
                              after_ms=m.after_ms) for m in turn.said]
    ts.schedule = [ScheduledWake(w["key"], datetime.fromisoformat(w["at"]), w.get("replaces"))
                   for w in turn.schedule]
    ts.premise_checked = {run.id for run in ts.session.runs}  # checked when the turn began


async def continue_turn(ts: TurnState, original: Session) -> TurnResult:
    """Finish the unfinished turn of ``ts.session`` (see the module notes)."""
    turn = ts.session.turn
    assert turn is not None
    if not (isinstance(ts.input, Resume) or is_retry(turn, ts.input)):
        raise FlowRuntimeError(
            f"session {ts.session.id!r}: the turn answering {turn.input.get('kind')} {turn.input.get('id')!r} is "
            "unfinished; continue it (the same input again, or Resume()) before taking another input",
            code="turn-unfinished")
    ts.session.turn = None
    _restore(ts, turn)
    if not ts.spoke:
        await run_phase(ts)
        request = choose_speaker(ts)
        if request is not None:
            spoken = await speak_unless_answered(ts, request)
            if spoken is not None:
                ts.spoke = True
                await settle(ts, request, spoken)
    await keep_moving(ts)
    bookkeeping(ts)
    result = turn_result(ts, original)
    ts.outcome(None, code="turn-continued", kind="turn", detail=str(turn.input.get("id") or turn.input.get("kind")))
    result.outcomes = ts.outcomes
    return result


def recorded_reply(session: Session, value: TurnInput) -> list[OutMessage]:
    """The assistant messages that followed the message ``value`` (by id) in the session's
    window, up to the next user message; empty when it is not a message with an id or has left
    the window."""
    if not isinstance(value, Message) or value.id is None:
        return []
    window = session.messages
    start = next((i for i, m in enumerate(window) if m.role == "user" and m.input_id == value.id), None)
    if start is None:
        return []
    reply: list[OutMessage] = []
    for entry in window[start + 1:]:
        if entry.role == "user":
            break
        if entry.role == "assistant" and entry.kind in ("ai", "verbatim"):
            kind: Literal["ai", "verbatim"] = "ai" if entry.kind == "ai" else "verbatim"
            reply.append(OutMessage(text=entry.text, kind=kind, key=entry.key or "", run_id=entry.run_id,
                                    node_id=entry.node_id, after_ms=entry.after_ms))
    return reply

