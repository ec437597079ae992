"""The engine loop of one run (seed 000): resolve the entry node, dispatch it by kind, act on the
transition, repeat until a terminal transition or a pause.

- ``end`` / ``handoff`` / ``escalate`` / ``start_flow`` leave the flow (post-run gates first);
- ``stay`` pauses for the next user turn;
- ``goto`` verifies the node it leaves, checks the oscillation guard, reduces (events, data
  merge, context strategy), records the position, and advances.

A reply node that needs the model does not call it here: it becomes the turn's one speaker and
the loop pauses; the speak phase calls the model and :func:`resume` continues with ``next``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from tether.engine import context as context_strategy
from tether.engine.choices import announce_choices
from tether.engine.events import ErrorEvent, FlowEnd, FlowEnter, FlowTransition, HandoffEvent, NodeEnter, NodeExit
from tether.engine.gates import evaluate_gates
from tether.engine.results import HandoffRequest, RunEnded
from tether.engine.session import Run
from tether.engine.state import TurnState
from tether.errors import FlowRuntimeError, NodeFailedError, OscillationError, TetherError, TetherSignal
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node, Reply
from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Stay, Transition

__all__ = ["MAX_STEPS", "Pause", "Static", "enter_flow", "move", "resume"]

MAX_STEPS = 50
"""Steps one run may take in one turn before it ends ``failed`` with ``step-loop``."""


@dataclass(frozen=True)
class Pause:
    """Why a run's loop stopped without leaving the flow."""

    kind: Literal["asking", "speak", "waiting", "ended"]


ENDED = Pause("ended")
ASKING = Pause("asking")


@dataclass(frozen=True)
class Static:
    """A statically declared target of node options (``then``, ``else_``, ``on_fail``, branch
    ``then``...): a node id, a registered node, ``NEXT``, ``"end"`` or a transition."""

    target: Any


def enter_flow(ts: TurnState, run: Run, flow: Flow) -> None:
    """Fresh entry: pin the digest, clear collect caches, set the start node, emit events."""
    run.digest = flow.digest
    for node in flow.nodes:
        if isinstance(node, Collect):
            run.state.pop(f"__collect_{node.id}", None)
            run.state.pop(f"__collectTurns_{node.id}", None)
    run.node = flow.start
    run.visits[flow.start] = run.visits.get(flow.start, 0) + 1
    ts.emit(FlowEnter(run_id=run.id, flow=flow.id, at=ts.now))
    ts.emit(NodeEnter(run_id=run.id, flow=flow.id, at=ts.now, node=flow.start))
    announce_choices(ts, run, flow.id, flow.by_id[flow.start])


async def move(ts: TurnState, run: Run, flow: Flow) -> Pause:
    """Move ``run`` through its graph until it pauses or leaves the flow."""
    return await _loop(ts, run, flow, None)


async def resume(ts: TurnState, run: Run, flow: Flow, transition: Any) -> Pause:
    """Continue ``run`` by acting on ``transition`` (returned by its current node), then moving."""
    return await _loop(ts, run, flow, transition)


async def _loop(ts: TurnState, run: Run, flow: Flow, pending: Any) -> Pause:
    from tether.engine.degrade import FAILURES, recover_or_degrade
    from tether.engine.dispatch import dispatch

    steps = 0
    collect: Collect | None = None  # the latest collect node passed (where a recoverable tool error goes back)
    while True:
        if run.node is None or run.node not in flow.by_id:
            ts.outcome(run, code="step-gone", status="skipped", node_id=run.node,
                       detail=f"node {run.node!r} is not in flow {flow.id!r}")
            finish(ts, run, flow, "skipped")
            return ENDED
        node = flow.by_id[run.node]
        if isinstance(node, Collect):
            collect = node
        if pending is None:
            steps += 1
            if steps > MAX_STEPS:
                ts.outcome(run, code="step-loop", status="failed", node_id=node.id,
                           detail=f"more than {MAX_STEPS} steps in one turn")
                finish(ts, run, flow, "failed")
                return ENDED
            try:
                result = await _guarded(flow, node, dispatch(ts, run, flow, node))
            except FAILURES as exc:  # a failure is loud: re-collect, escalate or end error_degraded
                if await recover_or_degrade(ts, run, flow, node, exc, collect):
                    continue
                return ENDED
            if isinstance(result, Pause):
                return result
            pending = result
        move_ = _normalize(flow, node, pending)
        pending = None
        outcome = await act(ts, run, flow, node, move_)
        if outcome is not None:
            return outcome


async def _guarded(flow: Flow, node: Node, work: Coroutine[Any, Any, Any]) -> Any:
    """Run a node's work; an exception from user code (an ``ask``, ``next``, ``on_complete``,
    ``decide`` or predicate function) becomes a NodeFailedError naming the flow and the node."""
    try:
        return await work
    except (TetherError, TetherSignal, AssertionError):
        raise
    except Exception as exc:
        raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: {type(exc).__name__}: {exc}", flow=flow.id,
                              node=node.id) from exc


def _normalize(flow: Flow, node: Node, value: Any) -> Transition:
    from tether.flow.transitions import normalize

    if isinstance(value, Static):
        value = value.target
        if isinstance(value, str | Node | Next):
            return flow.resolve_static(node.id, value)
    if isinstance(value, Next):
        return flow.resolve_static(node.id, value)
    return normalize(value, flow=flow.id, node=node.id, nodes=flow.by_id)


async def act(ts: TurnState, run: Run, flow: Flow, node: Node, move_: Transition) -> Pause | None:
    """Act on a normalised transition out of ``node``. Returns a pause, or None to keep moving."""
    if isinstance(move_, Next):
        move_ = flow.resolve_static(node.id, move_)
    if isinstance(move_, Stay):
        run.status = "asking"
        return ASKING
    if isinstance(move_, Goto):
        problem = verify(ts, run, node, move_.data or {})
        if problem is not None:
            ts.emit(ErrorEvent(run_id=run.id, flow=flow.id, at=ts.now, node=node.id, error=problem))
            ts.outcome(run, code="verify-blocked", status="skipped", node_id=node.id, detail=problem)
            run.status = "asking"
            return ASKING
        _guard_oscillation(ts, run, flow, node.id, move_.target)
        if isinstance(node, Collect):
            from tether.engine.collect import clear_caches

            clear_caches(run, node.id)
        await reduce(ts, run, flow, node.id, move_)
        return None
    if isinstance(move_, End):
        if flow.on_end == "stay" and run.last_talk is not None and run.last_talk in flow.by_id:
            return _stay_on(ts, run, flow)
        await leave(ts, run, flow, "reset" if flow.on_end == "reset" else move_.reason)
        if flow.on_end == "reset":
            from tether.engine.starts import restart

            restart(ts, run, flow)
        return ENDED
    if isinstance(move_, Handoff):
        await leave(ts, run, flow, "handoff", handoff=HandoffRequest(move_.agent, move_.reason, run.id))
        return ENDED
    if isinstance(move_, Escalate):
        from tether.engine.suspends import record_escalation

        record_escalation(ts, run, node.id, move_.reason)  # the durable __escalate signal, before the hand-off
        await leave(ts, run, flow, "escalate", handoff=HandoffRequest("human", move_.reason, run.id))
        return ENDED
    if isinstance(move_, StartFlow):
        from tether.engine.starts import chain

        await leave(ts, run, flow, "flow")
        await chain(ts, run, move_)
        return ENDED
    raise FlowRuntimeError(f"flow {flow.id!r}, node {node.id!r}: cannot act on {move_!r}")


def _stay_on(ts: TurnState, run: Run, flow: Flow) -> Pause | None:
    """``on_end="stay"``: go back to the last talk node the run took and answer from there."""
    assert run.last_talk is not None
    run.node = run.last_talk
    run.visits[run.node] = run.visits.get(run.node, 0) + 1
    run.staying = True
    others_asking = any(r.id != run.id and r.status == "asking" for r in ts.session.runs)
    if others_asking and ts.floor != run.id:
        run.status = "suspended"
        run.suspended_at = ts.now
        return Pause("asking")
    run.status = "asking"
    if ts.floor == run.id and ts.message is not None and not ts.answered_by and ts.speaker is None:
        return None  # the message was routed here and nothing answered it: that talk step answers now
    return ASKING


def verify(ts: TurnState, run: Run, node: Node, data: Mapping[str, Any]) -> str | None:
    """Check ``node``'s output schema / verify check over ``{**state, **data}``; the problem, or None."""
    schemas = [s for s in (node.output_schema, node.verify.output_schema if node.verify else None) if s]
    check = node.verify.check if node.verify else None
    if not schemas and check is None:
        return None
    merged = {**ts.state_view(run), **data}
    for schema in schemas:
        try:
            schema.model_validate(merged)
        except ValidationError as exc:
            issues = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            return f"Verify blocked on {node.id!r}: {issues}"
    if check is not None:
        try:
            passed = check(ts.state_view(run), dict(data))
        except Exception as exc:  # a check that cannot decide blocks, naming the error
            return f"Verify check raised on {node.id!r}: {type(exc).__name__}: {exc}"
        if not passed:
            return f"Verify check failed on {node.id!r}"
    return None


def _guard_oscillation(ts: TurnState, run: Run, flow: Flow, source: str, target: str) -> None:
    counts = ts.edges.setdefault(run.id, Counter())
    counts[(source, target)] += 1
    if counts[(source, target)] > flow.max_oscillations:
        raise OscillationError(flow.id, source, target, flow.max_oscillations)


async def reduce(ts: TurnState, run: Run, flow: Flow, source: str, move_: Goto) -> None:
    """Emit the transition events, merge data, apply the entered node's context strategy and
    record the new position."""
    target = flow.by_id[move_.target]
    ts.emit(NodeExit(run_id=run.id, flow=flow.id, at=ts.now, node=source))
    ts.emit(FlowTransition(run_id=run.id, flow=flow.id, at=ts.now, source=source, target=target.id))
    ts.emit(NodeEnter(run_id=run.id, flow=flow.id, at=ts.now, node=target.id))
    announce_choices(ts, run, flow.id, target)
    if move_.data:
        run.state.update(move_.data)
    for name in move_.clear:
        run.state.pop(name, None)
        ts.session.data.pop(name, None)
        run.asked.pop(name, None)
    strategy = (target.context if isinstance(target, Reply) else None) or flow.context or "append"
    await context_strategy.apply(ts, run, strategy)
    run.node = target.id
    run.visits[target.id] = run.visits.get(target.id, 0) + 1
    await ts.checkpoint()


async def leave(ts: TurnState, run: Run, flow: Flow, reason: str, *, handoff: HandoffRequest | None = None) -> None:
    """The run takes a terminal transition: gates, events, and it leaves the session."""
    gates: list[dict[str, Any]] = []
    outcome: str | None = None
    if flow.gates:
        outcome, gates = await evaluate_gates(ts, run, flow)
        run.verification = {"outcome": outcome, "gates": gates}
        if outcome == "failed-verification":
            reason = "failed-verification"
            handoff = None  # the turn ends with that reason: nobody is handed the conversation
    if handoff is not None:
        ts.emit(HandoffEvent(run_id=run.id, flow=flow.id, at=ts.now, agent=handoff.agent, reason=handoff.reason))
        ts.handoff = handoff
    ts.emit(FlowEnd(run_id=run.id, flow=flow.id, at=ts.now, reason=reason, gates=gates,
                    outcome=outcome if outcome == "failed-verification" else None))
    finish(ts, run, flow, reason)


def finish(ts: TurnState, run: Run, flow: Flow | None, reason: str) -> None:
    """Remove the run from the session and report it ended."""
    ts.session.runs = [r for r in ts.session.runs if r.id != run.id]
    ts.ended.append(RunEnded(run.id, run.flow, reason))

