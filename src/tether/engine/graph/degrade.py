"""What a failed node does to its run (seed 000 §1.10, DESIGN §9 "Failures are loud").

A node fails when its user code raises (an action with no ``on_fail``, a ``next``/``on_complete``/
``decide``/``response`` function), when an action calls a tool the agent does not have, or when a
template names a value that is not there. A failure is never a result the flow continues from:

- a :class:`~tether.errors.RecoverableToolError` with a collect node passed earlier in this run's
  move goes back to that node: its fields are cleared (its pass count kept), the error's
  ``user_message`` is said, and the node asks again;
- anything else degrades: an ``error`` event and an entry in the session's error log name the
  flow, the node and the exception; the agent's failure reply is said (once per run and turn); a
  node with id ``escalate`` in the flow is dispatched next, otherwise the flow ends
  ``error_degraded``. The run's start claim is released, so the flow can be entered again, and
  the session stays usable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tether.engine.core.events import ErrorEvent, FlowEnd
from tether.engine.core.session import Run
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.moves import finish, reduce
from tether.errors import (
    NodeFailedError,
    RecoverableToolError,
    TemplatePlaceholderError,
    TetherError,
    TetherSignal,
    ToolError,
)
from tether.flow.flow import Flow
from tether.flow.nodes import Action, Collect, Node
from tether.flow.transitions import Goto

__all__ = ["DEGRADED", "ESCALATE_NODE", "FAILURES", "as_node_failure", "degrade", "recover_or_degrade",
           "speaker_failed", "user_code"]

DEGRADED = "error_degraded"
"""The reason a degraded run ends with (not a completion: the flow can be entered again)."""

ESCALATE_NODE = "escalate"
"""A node with this id is where a flow's failures go, instead of ending the flow."""

FAILURES: tuple[type[TetherError], ...] = (NodeFailedError, TemplatePlaceholderError, ToolError)
"""The errors a node's dispatch can fail with that the run handles (everything else propagates)."""


def as_node_failure(flow: Flow, node: Node, error: TetherError) -> NodeFailedError:
    """``error`` as a NodeFailedError whose message names the flow, the node and the error."""
    if isinstance(error, NodeFailedError):
        return error
    prefix = f"flow {flow.id!r}, node {node.id!r}: "
    failure = NodeFailedError(f"{prefix}{type(error).__name__}: {error.message.removeprefix(prefix)}",
                              flow=flow.id, node=node.id)
    failure.__cause__ = error
    return failure


def user_code(flow: Flow, node: Node, fn: Callable[..., Any], *args: Any) -> Any:
    """Call the author's ``fn(*args)`` for ``node``; an exception it raises becomes a
    NodeFailedError naming the flow, the node and the exception (tether's own errors pass)."""
    try:
        return fn(*args)
    except (TetherError, TetherSignal, AssertionError):
        raise
    except Exception as exc:
        raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: {type(exc).__name__}: {exc}", flow=flow.id,
                              node=node.id) from exc


async def speaker_failed(ts: TurnState, request: SpeakRequest, error: TetherError) -> None:
    """The speaking node failed (a template of its prompt, or its ``next``/``on_complete`` after
    the reply): degrade its run. The idle speaker runs no author code: its errors propagate."""
    run = ts.run(request.run_id) if request.run_id else None
    flow = ts.agent.flows_by_id.get(run.flow) if run is not None else None
    node = flow.by_id.get(run.node or "") if flow is not None and run is not None else None
    if run is None or flow is None or node is None:
        raise error
    await degrade(ts, run, flow, node, as_node_failure(flow, node, error))


async def recover_or_degrade(ts: TurnState, run: Run, flow: Flow, node: Node, error: TetherError,
                             collect: Collect | None) -> bool:
    """Handle ``error`` raised by ``node``. Returns True when the run moved to another node and
    keeps moving, False when it left the flow."""
    if isinstance(error, RecoverableToolError) and collect is not None:
        await _recollect(ts, run, flow, node, collect, error)
        return True
    return await degrade(ts, run, flow, node, as_node_failure(flow, node, error))


async def degrade(ts: TurnState, run: Run, flow: Flow, node: Node, failure: NodeFailedError) -> bool:
    """Degrade ``run`` after ``failure`` of ``node``. True when it goes on at the ``escalate``
    node, False when the flow ended ``error_degraded``."""
    message = failure.message
    ts.emit(ErrorEvent(run_id=run.id, flow=flow.id, at=ts.now, node=node.id, error=message))
    ts.log("error", message, code=failure.code, flow=flow.id, node=node.id, run=run.id)
    if not isinstance(node, Action):  # an action already wrote its action-failed line
        ts.outcome(run, status="failed", kind="error", node_id=node.id, detail=message)
    _apologize(ts, run, node)
    escalate = flow.by_id.get(ESCALATE_NODE)
    if escalate is not None and node.id != ESCALATE_NODE:
        run.status = "running"
        await reduce(ts, run, flow, node.id, Goto(escalate.id))
        return True
    ts.emit(FlowEnd(run_id=run.id, flow=flow.id, at=ts.now, reason=DEGRADED))
    ts.session.claims.pop(run.dedupe_key, None)
    finish(ts, run, flow, DEGRADED)
    return False


def _apologize(ts: TurnState, run: Run, node: Node) -> None:
    text = ts.agent.failure_reply
    if ts.options.silence is not None or any(m.run_id == run.id and m.text == text for m in ts.messages):
        return
    ts.say(text, kind="verbatim", key=f"{ts.key(run, node.id)}:failure", run=run, node_id=node.id)


async def _recollect(ts: TurnState, run: Run, flow: Flow, node: Node, collect: Collect,
                     error: RecoverableToolError) -> None:
    ts.log("warn", f"flow {flow.id!r}, node {node.id!r}: recoverable tool error: {error.message}; "
                   f"collecting again at {collect.id!r}", code=error.code, flow=flow.id, node=node.id, run=run.id)
    ts.outcome(run, code="recollect", status="skipped", kind="collect", node_id=collect.id, detail=error.message)
    frame = run.state.get(f"__collect_{collect.id}")
    for name in collect.slots:
        run.state.pop(name, None)
        ts.session.data.pop(name, None)
        run.asked.pop(name, None)
        if isinstance(frame, dict):
            frame.pop(name, None)
    if error.user_message and ts.options.silence is None:
        ts.say(error.user_message, kind="verbatim", key=f"{ts.key(run, node.id)}:recover", run=run,
               node_id=node.id)
    run.status = "running"
    if collect.id != node.id:
        await reduce(ts, run, flow, node.id, Goto(collect.id))
