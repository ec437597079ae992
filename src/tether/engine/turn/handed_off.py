"""Turns of a session a human has (``handed_off``), and a ``Resume`` with nothing to resume.

A session handed to a human stays quiet: a message is recorded (deduplicated by id, appended to
the transcript, and a ``customer-message`` event for the person's screen) and nobody answers it,
with the outcome ``handed-off`` (the same message resent is a ``duplicate-input`` and gets the
reply it had: the hand-off's, or nothing); any other input is ignored with the same code.
``Runtime.release`` gives the conversation back to the bot.
"""

from __future__ import annotations

from tether.engine.core.events import CustomerMessage
from tether.engine.core.inputs import Message, Resume
from tether.engine.core.results import TurnResult
from tether.engine.core.session import Outcome, Session, remember_input
from tether.engine.core.state import TurnState
from tether.engine.turn.continuation import recorded_reply

__all__ = ["quiet_turn"]


def quiet_turn(ts: TurnState, original: Session | None) -> TurnResult:
    """The turn of an input that nothing answers: ``Resume`` without an unfinished turn
    (``no-open-turn``), or any input to a ``handed_off`` session (``handed-off``)."""
    if isinstance(ts.input, Resume):
        line = Outcome(code="no-open-turn", status="skipped", kind="turn", at=ts.now)
        return TurnResult(session=original, changed=False, outcomes=[line])
    message = ts.message
    line = Outcome(code="handed-off", status="skipped", kind="turn", at=ts.now,
                   detail="a human has this conversation; the bot stays quiet until it is released")
    if not isinstance(message, Message):
        return TurnResult(session=original, changed=False, outcomes=[line])
    if message.id is not None and message.id in ts.session.inputs:  # resent: the reply it got, if any
        again = Outcome(code="duplicate-input", status="skipped", kind="wait", key=message.id, at=ts.now)
        return TurnResult(session=original, changed=False, outcomes=[again], status="handoff",
                          messages=recorded_reply(ts.session, message))
    session = ts.session
    if message.id is not None:
        remember_input(session, message.id)
    session.last_user_at = message.at or ts.now
    entry = ts.append_transcript("user", message.text, kind="user", input_id=message.id, at=message.at)
    ts.emit(CustomerMessage(run_id=None, flow=None, at=ts.now, seq=entry.seq, text=message.text))
    ts.outcomes.append(line)
    return TurnResult(session=session, changed=True, outcomes=ts.outcomes, status="handoff",
                      new_transcript=list(ts.transcript), events=ts.events)
