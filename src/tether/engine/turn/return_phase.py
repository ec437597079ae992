"""Phase 8 of a turn, Return: what the turn hands back to its host."""

from __future__ import annotations

from tether.engine.core.inputs import Message
from tether.engine.core.results import TurnResult
from tether.engine.core.session import Session, remember_completed
from tether.engine.core.state import TurnState

__all__ = ["turn_result"]


def turn_result(ts: TurnState, original: Session | None) -> TurnResult:
    """Phase 8, Return: the turn's result, with the session's status for the host (a hand-off to a
    human marks the session ``handed_off``; a message whose turn completes is noted, so that the
    same message resent answers completed too)."""
    session = ts.session
    changed = original is None or bool(ts.messages or ts.schedule or ts.outcomes or ts.skipped or ts.started
                                       or ts.ended or ts.transcript) or session is original or session != original
    if ts.handoff is not None:
        status = "handoff"
        if ts.handoff.agent == "human":
            session.status = "handed_off"  # the bot stays quiet until the host releases it
            if not ts.messages:  # the customer hears that a person takes over (handoff("human")), never nothing
                ts.say(ts.agent.repair.handoff, kind="verbatim", key=f"{ts.handoff.run_id}:handoff")
    elif any(r.status == "asking" for r in session.runs):
        status = "awaiting_user"
    elif any(r.waiting is not None and r.waiting.kind == "approval" for r in session.runs):
        status = "awaiting_approval"  # a run is parked on ctx.approve and nobody waits for the user
    elif not ts.ended:
        status = "awaiting_user"
    else:
        status = "ended"
    if status in ("ended", "handoff") and isinstance(ts.input, Message) and ts.input.id is not None:
        remember_completed(session, ts.input.id)
    return TurnResult(session=session, changed=changed, status=status,  # type: ignore[arg-type]
                      messages=ts.messages, schedule=ts.schedule, outcomes=ts.outcomes, started=ts.started,
                      ended=ts.ended, skipped=ts.skipped, llm_calls=ts.llm_calls, agent_calls=ts.agent_calls,
                      workflow_calls=ts.workflow_calls,
                      content_type=ts.content_type, usage=ts.usage, events=ts.events,
                      handoff=ts.handoff, new_transcript=list(ts.transcript), journal=list(ts.journal.written))
