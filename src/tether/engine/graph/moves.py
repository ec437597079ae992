"""What a node handler does to its run beyond returning a transition: verify a step's output,
move to another node (``reduce``), leave the flow through its gates (``leave``), end the run
(``finish``), and say nothing under ``silenced``. Below the loop (:mod:`tether.engine.graph.runner`), so
handlers call these without importing the loop."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from tether.engine.core.drift_plan import record_kind
from tether.engine.core.events import FlowEnd, FlowTransition, HandoffEvent, NodeEnter, NodeExit
from tether.engine.core.pauses import ASKING, ENDED
from tether.engine.core.results import HandoffRequest, RunEnded
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph import context as context_strategy
from tether.engine.graph.choices import announce_choices
from tether.engine.graph.gates import evaluate_gates
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node, Reply
from tether.flow.transitions import Goto

__all__ = ["finish", "leave", "reduce", "silenced", "verify"]


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
            if _reads_steps(check):  # seed 000: the check may inspect the durable step log of the dispatch
                prefix = f"{ts.key(run, node.id)}:"
                steps = [e for e in ts.journal.entries(run.id) if e.key.startswith(prefix)]
                passed = check(ts.state_view(run), dict(data), steps)
            else:
                passed = check(ts.state_view(run), dict(data))
        except Exception as exc:  # a check that cannot decide blocks, naming the error
            return f"Verify check raised on {node.id!r}: {type(exc).__name__}: {exc}"
        if not passed:
            return f"Verify check failed on {node.id!r}"
    return None


def _reads_steps(check: Callable[..., Any]) -> bool:
    """A verify check that takes a third argument reads the dispatch's journal entries."""
    try:
        params = list(inspect.signature(check).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)


def merge_data(ts: TurnState, run: Run, data: Mapping[str, Any]) -> None:
    """Merge a transition's ``data``: a declared agent field is the session's (it outlives the run,
    as a collected one does, and a later flow finds it known); any other key is the run's state."""
    fields = ts.agent.fields
    for name, value in data.items():
        if name in fields:
            ts.session.data[name] = value
            run.state.pop(name, None)  # no stale copy shadowing it in the run's view
        else:
            run.state[name] = value


async def reduce(ts: TurnState, run: Run, flow: Flow, source: str, move_: Goto) -> None:
    """Emit the transition events, merge data, apply the entered node's context strategy and
    record the new position."""
    target = flow.by_id[move_.target]
    ts.emit(NodeExit(run_id=run.id, flow=flow.id, at=ts.now, node=source))
    ts.emit(FlowTransition(run_id=run.id, flow=flow.id, at=ts.now, source=source, target=target.id))
    ts.emit(NodeEnter(run_id=run.id, flow=flow.id, at=ts.now, node=target.id))
    announce_choices(ts, run, flow.id, target)
    if move_.data:
        merge_data(ts, run, move_.data)
    for name in move_.clear:
        run.state.pop(name, None)
        ts.session.data.pop(name, None)
        run.asked.pop(name, None)
    strategy = (target.context if isinstance(target, Reply) else None) or flow.context or "append"
    await context_strategy.apply(ts, run, strategy)
    run.node = target.id
    record_kind(run, target)
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


def silenced(ts: TurnState, run: Run, flow: Flow, node: Reply | Collect, *, then: Any) -> Any:
    """Under ``silenced`` a message step says nothing: a resuming asker stays asking, a step
    reached fresh ends its run (``silenced``), or with ``skip`` is skipped and ``then`` taken.
    Returns None when the turn is not silenced."""
    silence = ts.options.silence
    if silence is None:
        return None
    if run.status == "asking" and not (isinstance(node, Reply) and node.response is not None):
        return ASKING
    ts.outcome(run, code="silenced", status="skipped", kind="talk", node_id=node.id, detail=silence.reason)
    if silence.skip:
        return then
    finish(ts, run, flow, "skipped")
    return ENDED
