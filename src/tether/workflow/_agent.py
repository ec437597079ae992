"""The agent's side of a run (pure): the flow tools' reads and the changes its writes make.

The agent drives ``agent`` nodes only: the runtime owns routers, gates, sub-flows, function,
check and subprompt nodes, and a first-class gate never enters the agent's mutation surface
(except a fresh ``request_approval`` after a human rejected it). Every write checks its
preconditions first and raises :class:`~tether.errors.WorkflowOperationError` with a stable
``code`` and a reason the model can act on, so a refused call changes nothing.

- ``start_node``: an available agent node becomes ``running``;
- ``complete_node``: validated against the node's ``contract.output.fields``. The first invalid
  output is recorded as a correction request (the tool result tells the agent what to fix); the
  second fails the node. A node whose ``gate.approval`` is ``mandatory`` (or ``optional`` outside
  autonomous mode) cannot be completed by the agent: it must ``request_approval``;
- ``skip_node``: optional agent nodes only;
- ``fail_node``: ``recoverable`` sends the node back to admission while ``control.retries``
  allows, else it fails (an optional node is skipped);
- ``request_approval`` / ``request_input``: park the node for a human (ending the agent's turn);
- reads: :func:`get_state`, :func:`get_globals`, :func:`get_available`, :func:`validate_node`,
  :func:`build_handoff` (values capped at :data:`HANDOFF_VALUE_CAP` characters, at most
  :data:`HANDOFF_FIELD_CAP` fields per predecessor).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from tether.errors import WorkflowExpressionError, WorkflowOperationError
from tether.spoken import spoken
from tether.workflow import _ops as ops
from tether.workflow._answers import coerce_input_schema
from tether.workflow._contract import AgentRun, GateRun
from tether.workflow._derive import resolve_bindings, scope
from tether.workflow._expr import Wait
from tether.workflow._graph import WorkflowGraph
from tether.workflow._state import Approval, Attempt, NodeOutput, WorkflowSnapshot

__all__ = [
    "HANDOFF_FIELD_CAP",
    "HANDOFF_VALUE_CAP",
    "agent_complete",
    "agent_fail",
    "agent_request_approval",
    "agent_request_input",
    "agent_skip",
    "agent_start",
    "build_handoff",
    "get_available",
    "get_globals",
    "get_state",
    "instruction_text",
    "output_problem",
    "validate_node",
]

HANDOFF_VALUE_CAP = 500
"""The most characters of one value ``build_handoff`` shows."""
HANDOFF_FIELD_CAP = 20
"""The most declared fields of one predecessor ``build_handoff`` shows."""


def _refuse(message: str, code: str, node: str | None = None) -> WorkflowOperationError:
    return WorkflowOperationError(message, code=code, node=node)


def _cap(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= HANDOFF_VALUE_CAP:
        return value
    return text[:HANDOFF_VALUE_CAP] + f"... [{len(text) - HANDOFF_VALUE_CAP} more characters]"


def _agent_node(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, *statuses: str) -> None:
    if not isinstance(node_id, str) or node_id not in graph.nodes:
        raise _refuse(f"workflow {graph.id!r} has no node {node_id!r} (nodes: {', '.join(graph.order)})",
                      "unknown-node")
    run = graph.nodes[node_id].run
    if not isinstance(run, AgentRun):
        raise _refuse(f"node {node_id!r} is a {run.kind} node: the runtime or a human handles it, not the agent",
                      "not-an-agent-node", node_id)
    status = snapshot.nodes[node_id].status
    if statuses and status not in statuses:
        raise _refuse(f"node {node_id!r} is {status}; this needs it {' or '.join(statuses)}", "wrong-status", node_id)


def output_problem(graph: WorkflowGraph, node_id: str, fields: Any) -> str | None:
    """Why ``fields`` is not a valid output of ``node_id`` (its declared ``contract.output.fields``)."""
    if not isinstance(fields, dict):
        return f"fields must be a JSON object, got {type(fields).__name__}"
    output = graph.nodes[node_id].contract.output
    if output is None or output.fields is None:
        return None
    errors = sorted(Draft202012Validator(output.fields).iter_errors(fields), key=lambda e: list(e.path))
    if not errors:
        return None
    where = ".".join(str(p) for p in errors[0].path) or "fields"
    return f"{where}: {errors[0].message}"


def _origins(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> dict[str, Any] | None:
    try:
        bindings = resolve_bindings(graph, snapshot, node_id)
    except WorkflowExpressionError:
        return None
    if isinstance(bindings, Wait):
        return None
    return {name: binding.origins for name, binding in bindings.items()}


def _needs_approval(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> bool:
    approval = graph.nodes[node_id].gate.approval
    return approval == "mandatory" or (approval == "optional" and not snapshot.autonomous)


# --------------------------------------------------------------------------- writes


def agent_start(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any) -> ops.Change:
    """``start_node``: an available agent node becomes running."""
    _agent_node(graph, snapshot, node_id, "available")
    return ops.start_node(node_id)


def agent_complete(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, summary: Any,
                   fields: Any) -> tuple[ops.Change, str | None]:
    """``complete_node``: the change, and the correction asked for (``None`` when it completed).

    An invalid output is a correction request the first time (the node stays running) and a
    node failure the second time.
    """
    _agent_node(graph, snapshot, node_id, "running")
    if _needs_approval(graph, snapshot, node_id):
        level = graph.nodes[node_id].gate.approval
        raise _refuse(f"node {node_id!r} has a {level} approval gate: the agent cannot complete it; "
                      "call request_approval and a human decides", "approval-required", node_id)
    fields = {} if fields is None else fields
    problem = output_problem(graph, node_id, fields)
    if problem is not None:
        state = snapshot.nodes[node_id]
        error = f"node {node_id!r}: output does not match its contract at {problem}"
        if state.corrections >= 1:
            attempt = Attempt(generation=state.generation, status="failed", error=error,
                              fields=fields if isinstance(fields, dict) else {})
            return ops.fail_node(graph, node_id, f"{error} (after one correction)", attempt), None

        def correction(snap: WorkflowSnapshot) -> None:
            node = snap.nodes[node_id]
            node.corrections += 1
            node.error = error
            node.error_history.append(error)
        return correction, f"{error}. Fix the fields and call complete_node again (this is the one correction)."
    text = summary if isinstance(summary, str) and summary else None
    output = NodeOutput(fields=dict(fields), summary=text)
    attempt = Attempt(generation=snapshot.nodes[node_id].generation, status="complete", fields=dict(fields))
    return ops.complete_node(node_id, output, obtained_by="agent", input_origins=_origins(graph, snapshot, node_id),
                             attempt=attempt), None


def agent_skip(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, reason: Any) -> ops.Change:
    """``skip_node``: only an optional agent node (available or running) can be skipped."""
    _agent_node(graph, snapshot, node_id, "available", "running")
    if not graph.nodes[node_id].control.optional:
        raise _refuse(f"node {node_id!r} is not optional (control.optional); it cannot be skipped",
                      "not-optional", node_id)
    why = f"skipped by the agent: {reason}" if isinstance(reason, str) and reason else "skipped by the agent"

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        node.status, node.skip_reason, node.error = "skipped", "agent", None
        node.error_history.append(why)
    return change


def agent_fail(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, message: Any,
               recoverable: Any) -> ops.Change:
    """``fail_node``: a recoverable failure retries while ``control.retries`` allows."""
    _agent_node(graph, snapshot, node_id, "running")
    state = snapshot.nodes[node_id]
    error = f"node {node_id!r}: {message if isinstance(message, str) and message else 'failed by the agent'}"
    attempt = Attempt(generation=state.generation, status="failed", error=error)
    failures = sum(1 for a in state.attempts if a.status == "failed")
    if recoverable is True and failures < graph.nodes[node_id].control.retries:
        def again(snap: WorkflowSnapshot) -> None:
            node = snap.nodes[node_id]
            node.attempts.append(attempt)
            node.error_history.append(error)
            node.status, node.error, node.generation = "pending", error, node.generation + 1
        return again
    return ops.fail_node(graph, node_id, error, attempt)


def agent_request_approval(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, summary: Any,
                           fields: Any) -> ops.Change:
    """``request_approval``: park a running agent node with the output it proposes, or ask again
    on a first-class gate whose last request a human rejected."""
    if isinstance(node_id, str) and node_id in graph.nodes and isinstance(graph.nodes[node_id].run, GateRun):
        return ops.request_approval(snapshot, node_id, summary if isinstance(summary, str) and summary else None)
    _agent_node(graph, snapshot, node_id, "running")
    if not isinstance(summary, str) or not summary.strip():
        raise _refuse("request_approval needs a non-empty summary for the human", "bad-arguments", node_id)
    fields = {} if fields is None else fields
    problem = output_problem(graph, node_id, fields)
    if problem is not None:
        raise _refuse(f"node {node_id!r}: the proposed output does not match its contract at {problem}",
                      "bad-output", node_id)
    previous = snapshot.nodes[node_id].approval
    request = previous.request + 1 if previous is not None and previous.kind == "agent" else 1
    approval = Approval(kind="agent", summary=summary, proposed=NodeOutput(fields=dict(fields), summary=summary),
                        request=request)

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        node.status, node.approval = "awaiting_approval", approval
    return change


def agent_request_input(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any, prompt: Any,
                        schema: Any) -> ops.Change:
    """``request_input``: pause a running agent node for typed input (the schema coerced onto
    text/choice/form/file, or refused)."""
    _agent_node(graph, snapshot, node_id, "running")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _refuse("request_input needs a non-empty prompt for the human", "bad-arguments", node_id)
    try:
        coerced = coerce_input_schema(schema)
    except ValueError as exc:
        raise _refuse(f"node {node_id!r}: {exc}", "bad-input-schema", node_id) from None
    return ops.request_input(snapshot, node_id, prompt, coerced.model_dump(mode="json", by_alias=True,
                                                                           exclude_none=True))


# --------------------------------------------------------------------------- reads


def get_available(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> list[str]:
    """Agent nodes ready for an agent turn: available or running, in definition order."""
    return [n for n in graph.order if isinstance(graph.nodes[n].run, AgentRun)
            and snapshot.nodes[n].status in ("available", "running")]


def get_state(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> dict[str, Any]:
    """The run's state: its status and each node's kind, status and what it produced."""
    nodes: dict[str, Any] = {}
    for node_id in graph.order:
        state = snapshot.nodes[node_id]
        entry: dict[str, Any] = {"kind": graph.nodes[node_id].run.kind, "status": state.status}
        if state.output is not None and state.status == "complete":
            entry["fields"] = {k: _cap(v) for k, v in list(state.output.fields.items())[:HANDOFF_FIELD_CAP]}
            if state.output.summary:
                entry["summary"] = _cap(state.output.summary)
        for name in ("error", "skip_reason"):
            if getattr(state, name):
                entry[name] = getattr(state, name)
        if state.blocked_by or state.failed_conditions:
            entry["blocked_by"] = state.blocked_by + state.failed_conditions
        if state.approval is not None and state.status == "awaiting_approval":
            entry["approval"] = {"summary": state.approval.summary, "decision": state.approval.decision}
        if state.input_request is not None and state.status == "awaiting_input":
            entry["input_request"] = state.input_request.prompt
        nodes[node_id] = entry
    return {"workflow": graph.id, "run": snapshot.run_id, "status": snapshot.status, "nodes": nodes}


def get_globals(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> dict[str, Any]:
    """Run-scoped globals: the run input, the workflow defaults, autonomous mode."""
    defaults = graph.workflow.defaults.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"run_input": snapshot.input, "defaults": defaults, "autonomous": snapshot.autonomous}


def validate_node(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any) -> dict[str, Any]:
    """Whether ``node_id`` can be worked on now, and what blocks it (failed preconditions apart)."""
    if not isinstance(node_id, str) or node_id not in graph.nodes:
        raise _refuse(f"workflow {graph.id!r} has no node {node_id!r}", "unknown-node")
    state = snapshot.nodes[node_id]
    agent = isinstance(graph.nodes[node_id].run, AgentRun)
    report: dict[str, Any] = {"node": node_id, "kind": graph.nodes[node_id].run.kind, "status": state.status,
                              "runnable": agent and state.status in ("available", "running"),
                              "blocked_by": list(state.blocked_by), "failed_conditions": list(state.failed_conditions)}
    if state.expression_error:
        report["expression_error"] = state.expression_error
    if not agent:
        report["owner"] = "human" if isinstance(graph.nodes[node_id].run, GateRun) else "runtime"
    return report


def instruction_text(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> str | Wait:
    """The node's instruction with its ``${...}`` interpolated (:class:`Wait` while a producer it
    reads has not completed; a skipped one raises :class:`WorkflowExpressionError`)."""
    value = graph.instructions[node_id].resolve(scope(graph, snapshot), node=node_id, text=spoken)
    if isinstance(value, Wait | str):
        return value
    return spoken(value)


def _declared(graph: WorkflowGraph, node_id: str) -> list[str]:
    output = graph.nodes[node_id].contract.output
    properties = output.fields.get("properties") if output is not None and output.fields is not None else None
    return list(properties)[:HANDOFF_FIELD_CAP] if isinstance(properties, dict) else []


def build_handoff(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: Any) -> dict[str, Any]:
    """What the agent needs to do ``node_id``: the instruction, resolved bindings with their
    origins, assets, the output contract, an open correction, and each completed predecessor's
    summary and declared fields (a contract without ``properties`` publishes none)."""
    _agent_node(graph, snapshot, node_id)
    node, state = graph.nodes[node_id], snapshot.nodes[node_id]
    assert isinstance(node.run, AgentRun)
    handoff: dict[str, Any] = {"node": node_id, "label": node.label, "status": state.status}
    try:
        instruction = instruction_text(graph, snapshot, node_id)
        bindings = resolve_bindings(graph, snapshot, node_id)
    except WorkflowExpressionError as exc:
        handoff["error"] = exc.message
        return handoff
    handoff["instruction"] = (f"(waiting for {instruction.producer!r})" if isinstance(instruction, Wait)
                              else instruction)
    if isinstance(bindings, Wait):
        handoff["bindings"] = {"waiting_for": bindings.producer}
    else:
        handoff["bindings"] = {
            name: {"value": _cap(b.value), "origins": [o.model_dump(mode="json", exclude_none=True) for o in b.origins]}
            for name, b in bindings.items()
        }
    handoff["assets"] = list(node.run.assets)
    if node.gate.approval != "none":
        handoff["approval"] = (f"{node.gate.approval}: finish with request_approval (a human decides)"
                               if _needs_approval(graph, snapshot, node_id) else node.gate.approval)
    if node.contract.output is not None and node.contract.output.fields is not None:
        handoff["output_contract"] = node.contract.output.fields
    if state.corrections and state.error:
        handoff["correction"] = state.error
    if state.approval is not None and state.approval.kind == "agent" and state.approval.decision == "rejected":
        handoff["rejected"] = {"feedback": state.approval.feedback, "decided_by": state.approval.decided_by}
    if state.input_request is not None and state.input_request.response is not None:
        handoff["input"] = {"prompt": state.input_request.prompt, "response": state.input_request.response}
    upstream = []
    for edge in graph.workflow.edges:
        if edge.target != node_id or snapshot.nodes[edge.source].status != "complete":
            continue
        output = snapshot.nodes[edge.source].output or NodeOutput()
        fields = {name: _cap(output.fields[name]) for name in _declared(graph, edge.source) if name in output.fields}
        entry: dict[str, Any] = {"node": edge.source, "fields": fields}
        if output.summary:
            entry["summary"] = _cap(output.summary)
        upstream.append(entry)
    handoff["predecessors"] = upstream
    return handoff
