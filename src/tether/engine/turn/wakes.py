"""``pending_wakes``: the wakes a saved session waits on, re-derived from the session alone.

For re-seeding a lost job queue (and after a migration): each parked run's wake, plus a silence
wake per silence flow that could still start (counted from ``last_assistant_at``; none when the
customer wrote after it). Spends no model calls and changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from tether.engine.core.inputs import Message, TurnOptions
from tether.engine.core.ports import Clock
from tether.engine.core.results import ScheduledWake
from tether.engine.core.session import Session, fork_session
from tether.flow.agent_def import AgentDefinition
from tether.flow.durations import parse_duration
from tether.flow.triggers import SilenceTrigger

__all__ = ["pending_wakes"]


class _Frozen:
    def __init__(self, session: Session) -> None:
        self._at = session.saved_at or session.created_at

    def now(self) -> datetime:
        return self._at


def pending_wakes(agent: AgentDefinition, session: Session, options: TurnOptions | None = None,
                  clock: Clock | None = None) -> list[ScheduledWake]:
    """The wakes ``session`` waits on, earliest first."""
    from tether.engine.core.state import TurnState
    from tether.engine.graph.conditions import holds
    from tether.engine.turn.understand import repeat_allows

    wakes = [ScheduledWake(r.waiting.key, r.waiting.until) for r in session.runs
             if r.waiting is not None and r.waiting.until is not None]
    last_assistant, last_user = session.last_assistant_at, session.last_user_at
    if last_assistant is not None and (last_user is None or last_user <= last_assistant):
        clock = clock or _Frozen(session)
        ts = TurnState(agent=agent, session=fork_session(session), input=Message(""), options=options or TurnOptions(),
                       clock=clock, ids=_NoIds(), models=_NoModels(), now=clock.now())
        for flow in agent.flows:
            trigger = next((t for t in flow.on if isinstance(t, SilenceTrigger)), None)
            if trigger is None or not holds(ts, trigger.if_, None, flow=flow.id) \
                    or not repeat_allows(ts, flow, trigger.repeat):
                continue
            at = last_assistant + parse_duration(trigger.after)
            if trigger.business_hours and agent.business_hours is not None:
                at = agent.business_hours(at, {"context": ts.options.context})
            key = f"silence:{flow.id}:{session.id}:{int(last_assistant.timestamp() * 1000)}"
            wakes.append(ScheduledWake(key, at))
    return sorted(wakes, key=lambda w: w.at)


class _NoIds:
    def new_id(self) -> str:
        raise RuntimeError("pending_wakes mints no ids")


class _NoModels:
    def model_for(self, tier: str) -> None:
        return None

    def gate_judge_model(self) -> None:
        return None
