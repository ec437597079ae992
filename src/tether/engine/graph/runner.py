"""The engine loop of one run (seed 000): resolve the entry node, dispatch it by kind, act on the
transition, repeat until a terminal transition or a pause.

- ``end`` / ``handoff`` / ``escalate`` / ``start_flow`` leave the flow (post-run gates first);
- ``stay`` pauses for the next user turn;
- ``goto`` verifies the node it leaves, checks the oscillation guard, reduces (events, data
  merge, context strategy), records the position, and advances. An edge taken more than the
  flow's ``max_oscillations`` times in one turn degrades the run like a failed node (an ``error``
  event, the failure reply, the ``escalate`` node or ``error_degraded``); it never fails the turn.

A reply node that needs the model does not call it here: it becomes the turn's one speaker and
the loop pauses; the speak phase calls the model and :func:`resume` continues with ``next``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Coroutine
from typing import Any

from tether.engine.core.drift_plan import record_kind
from tether.engine.core.events import ErrorEvent, FlowEnter, NodeEnter
from tether.engine.core.pauses import ASKING, ENDED, Pause, Static
from tether.engine.core.results import HandoffRequest
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.core.suspends import record_escalation
from tether.engine.graph.choices import announce_choices
from tether.engine.graph.collect_fields import clear_caches
from tether.engine.graph.degrade import FAILURES, as_node_failure, degrade, recover_or_degrade
from tether.engine.graph.dispatch import dispatch
from tether.engine.graph.interrupted import suspend
from tether.engine.graph.moves import finish, leave, reduce, verify
from tether.engine.graph.starts import chain, restart, start_flow_id
from tether.errors import (
    FlowRuntimeError,
    NodeFailedError,
    OscillationError,
    TetherError,
    TetherSignal,
    TransitionError,
)
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node
from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Stay, Transition, normalize

__all__ = ["MAX_STEPS", "act", "enter_flow", "move", "resume"]

MAX_STEPS = 50
"""Steps one run may take in one turn before it ends ``failed`` with ``step-loop``."""


def enter_flow(ts: TurnState, run: Run, flow: Flow) -> None:
    """Fresh entry: pin the digest, clear collect caches, set the start node, emit events."""
    run.digest = flow.digest
    for node in flow.nodes:
        if isinstance(node, Collect):
            run.state.pop(f"__collect_{node.id}", None)
            run.state.pop(f"__collectTurns_{node.id}", None)
    run.node = flow.start
    record_kind(run, flow.by_id[flow.start])
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
        try:
            move_ = _normalize(flow, node, pending)
            outcome = await act(ts, run, flow, node, move_)
        except (OscillationError, TransitionError) as exc:
            # the flow's bug (a ping-pong, a goto to no node, a value that is not a move): the run
            # degrades, the turn goes on
            if await degrade(ts, run, flow, node, as_node_failure(flow, node, exc)):
                pending = None
                continue
            return ENDED
        pending = None
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
    if isinstance(move_, Escalate) and flow.on_escalate is not None and node.id != flow.on_escalate:
        # the flow's own way out (nobody to hand over to): its step, not a person
        ts.outcome(run, code="escalated", status="skipped", node_id=node.id, detail=move_.reason)
        move_ = Goto(flow.on_escalate)
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
            clear_caches(run, node.id)
        await reduce(ts, run, flow, node.id, move_)
        return None
    if isinstance(move_, End):
        if flow.on_end == "stay" and run.last_talk is not None and run.last_talk in flow.by_id:
            return _stay_on(ts, run, flow)
        await leave(ts, run, flow, "reset" if flow.on_end == "reset" else move_.reason)
        if flow.on_end == "reset":
            restart(ts, run, flow)
        return ENDED
    if isinstance(move_, Handoff):
        await leave(ts, run, flow, "handoff", handoff=HandoffRequest(move_.agent, move_.reason, run.id))
        return ENDED
    if isinstance(move_, Escalate):
        record_escalation(ts, run, node.id, move_.reason)  # the durable __escalate signal, before the hand-off
        if ts.agent.repair.on("cannot_handle") and ts.options.silence is None:
            # the customer is told a person takes over (the cannot-handle repair pattern)
            ts.say(ts.agent.repair.handoff, kind="verbatim", key=f"{ts.key(run, node.id)}:handoff", run=run,
                   node_id=node.id)
        await leave(ts, run, flow, "escalate", handoff=HandoffRequest("human", move_.reason, run.id))
        return ENDED
    if isinstance(move_, StartFlow):
        start_flow_id(ts, run, move_)  # a template naming no flow fails here, before the run leaves
        await leave(ts, run, flow, "flow")
        await chain(ts, run, move_)
        return ENDED
    raise FlowRuntimeError(f"flow {flow.id!r}, node {node.id!r}: cannot act on {move_!r}")


def _stay_on(ts: TurnState, run: Run, flow: Flow) -> Pause | None:
    """``on_end="stay"``: go back to the last talk node the run took and answer from there."""
    assert run.last_talk is not None
    run.node = run.last_talk
    record_kind(run, flow.by_id[run.node])
    run.visits[run.node] = run.visits.get(run.node, 0) + 1
    run.staying = True
    others_asking = any(r.id != run.id and r.status == "asking" for r in ts.session.runs)
    if others_asking and ts.floor != run.id:
        suspend(ts, run)
        return Pause("asking")
    run.status = "asking"
    if ts.floor == run.id and ts.message is not None and not ts.answered_by and ts.speaker is None:
        return None  # the message was routed here and nothing answered it: that talk step answers now
    return ASKING


def _guard_oscillation(ts: TurnState, run: Run, flow: Flow, source: str, target: str) -> None:
    counts = ts.edges.setdefault(run.id, Counter())
    counts[(source, target)] += 1
    if counts[(source, target)] > flow.max_oscillations:
        raise OscillationError(flow.id, source, target, flow.max_oscillations)
