"""Parking a run on ``ctx.approve``/``ctx.signal``, and delivering what resumes it.

An action that asks for an approval or waits for a signal raises ``Suspend`` (its journal entry
is started, see :mod:`tether.engine.core.effects`); :func:`park` makes the run wait on the effect's
key. The decision (an :class:`~tether.engine.core.inputs.Approval` input), the signal (a
:class:`~tether.engine.core.inputs.Signal` input) or the signal's timeout (a wake with the effect's key)
is recorded as the entry's result and the run resumes at the same node and visit: the action runs
again and reads the result back from the journal.

Outcome codes: ``awaiting-approval`` / ``awaiting-signal`` (parked), ``approval-decided``,
``signal-arrived``, ``signal-timeout`` (resumed), ``stale-approval`` (no run waits on that id),
``duplicate-input`` (a signal id seen before), ``signal-unclaimed`` (no run waits for it).
"""

from __future__ import annotations

from typing import Any

from tether.durable.entries import JournalEntry
from tether.engine.core.inputs import Approval, Signal
from tether.engine.core.pauses import Pause
from tether.engine.core.session import Outcome, Run, WaitingOn, remember_input
from tether.engine.core.state import TurnState
from tether.errors import Suspend

__all__ = ["ESCALATE_SIGNAL", "deliver_approval", "deliver_signal", "park", "record_escalation", "signal_timed_out"]

ESCALATE_SIGNAL = "__escalate"
"""The name of the signal an ``escalate`` transition records before handing off to a human."""

SIGNAL_IDS = "signal:"
"""Prefix of delivered signal ids in ``session.inputs`` (deduplication)."""


def park(ts: TurnState, run: Run, node_id: str, suspend: Suspend) -> Any:
    """The run waits on the suspended effect's key; returns the loop's pause."""
    assert suspend.key is not None
    kind = suspend.payload.get("kind", "approval")
    until = suspend.payload.get("until")
    run.status = "waiting"
    if kind == "signal":
        run.waiting = WaitingOn(kind="signal", key=suspend.key, until=until, set_at=ts.now,
                                event=suspend.payload.get("name"))
        if until is not None:
            ts.schedule_wake(suspend.key, until)
        ts.outcome(run, code="awaiting-signal", status="waiting", kind="do", node_id=node_id,
                   detail=suspend.payload.get("name"), until=until)
    else:
        run.waiting = WaitingOn(kind="approval", key=suspend.key, set_at=ts.now)
        ts.outcome(run, code="awaiting-approval", status="waiting", kind="do", node_id=node_id, detail=suspend.key)
    return Pause("waiting")


def _ignore(ts: TurnState, code: str, key: str) -> Outcome:
    return Outcome(code=code, status="skipped", kind="wait", key=key, at=ts.now)


def _finish(ts: TurnState, run: Run, key: str, result: dict[str, Any], code: str) -> None:
    """Record the effect's result and resume the run at its node (same visit)."""
    started = ts.journal.get(key)
    kind = "signal" if run.waiting is not None and run.waiting.kind == "signal" else "approval"
    entry = (started.model_copy(update={"status": "finished", "result": result, "at": ts.now}) if started is not None
             else JournalEntry(run_id=run.id, key=key, kind=kind, name=result.get("name", kind), status="finished",
                               result=result, at=ts.now, node_id=run.node))
    ts.journal.record(entry)
    run.status = "running"
    run.waiting = None
    ts.outcome(run, code=code, kind="wait", node_id=run.node, detail=key)
    ts.floor = run.id
    ts.floor_taken = True
    if run.id not in ts.queue:
        ts.queue.append(run.id)


def _waiting(ts: TurnState, kind: str) -> list[Run]:
    return sorted((r for r in ts.session.runs if r.status == "waiting" and r.waiting is not None
                   and r.waiting.kind == kind), key=lambda r: r.started_at)


def deliver_approval(ts: TurnState, approval: Approval) -> Outcome | None:
    """Record the decision and resume the run parked on ``approval.approval_id``."""
    run = next((r for r in _waiting(ts, "approval") if r.waiting and r.waiting.key == approval.approval_id), None)
    if run is None:
        return _ignore(ts, "stale-approval", approval.approval_id)
    _finish(ts, run, approval.approval_id, {"decision": approval.decision, "feedback": approval.feedback,
                                            "decided_by": approval.decided_by}, "approval-decided")
    return None


def deliver_signal(ts: TurnState, signal: Signal) -> Outcome | None:
    """Resume every run waiting for ``signal.name`` (oldest first); a repeated id is ignored."""
    if signal.id is not None:
        seen = SIGNAL_IDS + signal.id
        if seen in ts.session.inputs:
            return _ignore(ts, "duplicate-input", signal.id)
        remember_input(ts.session, seen)
    runs = [r for r in _waiting(ts, "signal") if r.waiting and r.waiting.event == signal.name]
    if not runs:
        ts.outcome(None, code="signal-unclaimed", status="skipped", kind="wait", detail=signal.name)
        return None
    for run in runs:
        assert run.waiting is not None
        _finish(ts, run, run.waiting.key, {"name": signal.name, "payload": signal.payload, "signal_id": signal.id,
                                           "timed_out": False}, "signal-arrived")
    return None


def signal_timed_out(ts: TurnState, run: Run) -> None:
    """The wake of a signal wait's timeout: the run resumes with a timeout result."""
    assert run.waiting is not None
    name = run.waiting.event
    _finish(ts, run, run.waiting.key, {"name": name, "payload": None, "signal_id": None, "timed_out": True},
            "signal-timeout")


def record_escalation(ts: TurnState, run: Run, node_id: str, reason: str | None) -> None:
    """Record the durable ``__escalate`` signal (written with the turn that hands off)."""
    key = f"{ts.key(run, node_id)}:{ESCALATE_SIGNAL}"
    if ts.journal.get(key) is None:
        ts.journal.record(JournalEntry(run_id=run.id, key=key, kind="signal", name=ESCALATE_SIGNAL, status="finished",
                                       result={"reason": reason, "flow": run.flow}, node_id=node_id, at=ts.now))
