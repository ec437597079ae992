"""Phase 5, Run: move every live run that can move.

If nobody is asking, the most recently suspended run returns to asking. Then every live run is
moved in turn (children started by ``start_flow`` join the queue). Waiting and suspended runs stay
put; an asking run moves only on a message it holds the floor for. Before a run moves its premise
is re-checked (``while_``, else its trigger's ``if_``): false ends it ``premise-changed``. On a
message nothing has answered once the queue is empty, the run that is asking takes it (the floor
went elsewhere), else the most recently suspended run returns to asking and moves, and so on down
the stack.
"""

from __future__ import annotations

from tether.engine.core.inputs import Wake
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.conditions import holds
from tether.engine.graph.interrupted import restore_values, suspend, unsuspend
from tether.engine.graph.moves import finish
from tether.engine.graph.runner import enter_flow, move, resume
from tether.engine.turn.drift import check_drift
from tether.engine.turn.route import take_branch

__all__ = ["become_asker", "keep_asking", "keep_moving", "move_floor", "resume_suspended", "run_phase"]


def resume_suspended(ts: TurnState) -> Run | None:
    """The most recently suspended run returns to asking (when nobody is asking)."""
    if any(r.status == "asking" for r in ts.session.runs):
        return None
    suspended = [r for r in ts.session.runs if r.status == "suspended"]
    if not suspended:
        return None
    run = max(suspended, key=lambda r: (r.suspended_at or r.started_at))
    unsuspend(ts, run)
    return run


def become_asker(ts: TurnState, run: Run) -> None:
    """``run`` is asking now: every other asking run is suspended behind it."""
    for other in ts.session.runs:
        if other.id != run.id and other.status == "asking":
            suspend(ts, other)


def keep_asking(ts: TurnState, run: Run) -> None:
    """A repair pattern handled the message: ``run`` holds the floor and moves this turn, but the
    message is not its step's answer (the step asks again, and the pass is not counted)."""
    unsuspend(ts, run)
    become_asker(ts, run)
    ts.floor = run.id
    ts.consumed_by[run.id] = "repair"
    if run.id not in ts.queue:
        ts.queue.append(run.id)


def _premise_holds(ts: TurnState, run: Run) -> bool:
    flow = ts.agent.flows_by_id[run.flow]
    if flow.while_ is not None:
        return holds(ts, flow.while_, run)
    index = run.trigger.index
    if index is not None and index < len(flow.on):
        return holds(ts, getattr(flow.on[index], "if_", None), run)
    return True


async def _move_one(ts: TurnState, run: Run) -> None:
    flow = ts.agent.flows_by_id.get(run.flow)
    if flow is None:
        ts.outcome(run, code="flow-gone", status="skipped", detail=f"flow {run.flow!r} no longer exists")
        finish(ts, run, None, "skipped")
        return
    if run.id not in ts.premise_checked:
        ts.premise_checked.add(run.id)
        if run.trigger.kind == "silence" and isinstance(ts.input, Wake) and \
                ts.session.last_user_at is not None and ts.session.last_user_at > run.started_at:
            ts.outcome(run, code="customer-replied", status="skipped")
            finish(ts, run, flow, "skipped")
            return
        if not _premise_holds(ts, run):
            ts.outcome(run, code="premise-changed", status="skipped")
            finish(ts, run, flow, "skipped")
            return
    check_drift(ts, run, flow)
    restore_values(ts, run)  # back from a detour: its own values again
    was_status = run.status
    if run.node is None:
        enter_flow(ts, run, flow)
    if was_status != "asking":
        run.status = "running"
    pending = ts.pending.pop(run.id, None)
    pause = await (resume(ts, run, flow, pending) if pending is not None else move(ts, run, flow))
    if pause.kind in ("asking", "speak") and run.status == "asking":
        become_asker(ts, run)


def _movable(ts: TurnState, run: Run, *, asking_ok: bool) -> bool:
    if run.status in ("waiting", "suspended"):
        return False
    if run.status == "asking":
        return run.id in ts.pending or (asking_ok and ts.message is not None and ts.floor == run.id)
    return True


async def move_floor(ts: TurnState) -> None:
    """Move the runs that can move, the one holding the floor included (a repair pattern applied
    after the run phase: its step asks again, or it goes where the pattern sent it)."""
    await _drain(ts, asking_ok=True)


async def keep_moving(ts: TurnState) -> None:
    """After Settle: move runs that can still move (new chains, runs left running); askers stay."""
    await _drain(ts, asking_ok=False)


async def run_phase(ts: TurnState) -> None:
    """Move the live runs."""
    returning = resume_suspended(ts) if ts.floor is None and ts.repaired is None else None
    if returning is not None and ts.message is not None:
        ts.floor = returning.id
        take_branch(ts, returning, ts.judgement)
    await _drain(ts, asking_ok=True)
    await _hand_back(ts)


def _unanswered(ts: TurnState) -> bool:
    return (ts.message is not None and not ts.answered_by and ts.speaker is None and ts.options.silence is None
            and ts.repaired is None)


async def _hand_back(ts: TurnState) -> None:
    """The safety net that keeps a message from being dropped: while nothing has answered it,
    it goes to the run that is asking (when the floor went elsewhere, e.g. a follow-up run that
    Ingest resumed), else the most recently suspended run returns to asking and takes it, and so
    on down the stack. Each run is handed the message at most once."""
    handed = {ts.floor} if ts.floor is not None else set()
    while _unanswered(ts):
        returning = next((r for r in reversed(ts.session.runs) if r.status == "asking" and r.id not in handed),
                         None) or resume_suspended(ts)
        if returning is None or returning.id in handed:
            break
        handed.add(returning.id)
        ts.floor = returning.id
        ts.consumed_by.pop(returning.id, None)
        take_branch(ts, returning, ts.judgement)
        ts.queue.append(returning.id)
        await _drain(ts, asking_ok=True)


async def _drain(ts: TurnState, *, asking_ok: bool) -> None:
    for live in ts.session.runs:
        if live.id not in ts.queue and _movable(ts, live, asking_ok=asking_ok):
            ts.queue.append(live.id)
    moved: set[str] = set()
    while ts.queue:
        run = ts.run(ts.queue.pop(0))
        if run is None or run.id in moved or not _movable(ts, run, asking_ok=asking_ok):
            continue
        moved.add(run.id)
        await _move_one(ts, run)
