"""Every change to a run, as a pure function returning the change that :func:`mutate` applies.

Operations check their preconditions *before* returning a change and raise
:class:`~tether.errors.WorkflowOperationError` (with a stable ``code``) when refused, so a
refused operation changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from tether.errors import WorkflowOperationError
from tether.executors.provenance import ObtainedBy, Origin
from tether.workflow._answers import check_answer, coerce_input_schema
from tether.workflow._contract import FunctionRun, GateRun
from tether.workflow._derive import contract_problem, origins_of, select_route
from tether.workflow._graph import WorkflowGraph
from tether.workflow._state import Approval, Attempt, InputRequest, NodeOutput, NodeState, WorkflowSnapshot

__all__ = [
    "Change",
    "apply_approval",
    "apply_input",
    "cancel",
    "complete_node",
    "cold_restart",
    "in_doubt_attempts",
    "fail_node",
    "park",
    "park_input",
    "request_approval",
    "request_input",
    "resolve_in_doubt",
    "retry_node",
    "retryable",
    "run_ended",
    "set_autonomous",
    "settle_router",
    "start_node",
]

Change = Callable[[WorkflowSnapshot], None]
Decision = Literal["approved", "rejected"]


def _refuse(message: str, code: str, node: str | None = None) -> WorkflowOperationError:
    return WorkflowOperationError(message, code=code, node=node)


def _known(snapshot: WorkflowSnapshot, node_id: str) -> None:
    if node_id not in snapshot.nodes:
        raise _refuse(f"workflow {snapshot.workflow_id!r} has no node {node_id!r}", "unknown-node", node_id)


def start_node(node_id: str) -> Change:
    """Mark ``node_id`` running under a new execution generation."""
    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.status, state.error = "running", None
        state.generation += 1
    return change


def complete_node(node_id: str, output: NodeOutput, *, obtained_by: ObtainedBy | None,
                  input_origins: dict[str, tuple[Origin, ...]] | None, attempt: Attempt | None = None) -> Change:
    """Complete ``node_id`` with ``output`` and its provenance (clears any live error)."""
    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.status, state.error, state.output = "complete", None, output
        state.obtained_by, state.input_origins = obtained_by, input_origins
        if attempt is not None:
            state.attempts.append(attempt)
    return change


def fail_node(graph: WorkflowGraph, node_id: str, error: str, attempt: Attempt | None = None) -> Change:
    """A terminal failure: an optional node is skipped, any other fails; the error is kept."""
    optional = graph.nodes[node_id].control.optional

    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.status = "skipped" if optional else "failed"
        state.skip_reason = "optional" if optional else None
        state.error = error
        state.error_history.append(error)
        if attempt is not None:
            state.attempts.append(attempt)
    return change


def park(node_id: str, approval: Approval, *, output: NodeOutput | None = None,
         input_origins: dict[str, tuple[Origin, ...]] | None = None, obtained_by: ObtainedBy | None = None,
         attempt: Attempt | None = None, error: str | None = None) -> Change:
    """Park ``node_id`` at ``awaiting_approval`` with ``approval`` (and what it produced so far)."""
    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.status, state.approval = "awaiting_approval", approval
        state.output = output
        state.input_origins, state.obtained_by = input_origins, obtained_by
        if attempt is not None:
            state.attempts.append(attempt)
        if error is not None:
            state.error = error
            state.error_history.append(error)
    return change


def settle_router(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> Change | None:
    """The change settling router ``node_id``, or ``None`` while it is undecidable.

    Routes are tried in authored order; the first whose ``when`` holds (or the ``default``) wins
    (:func:`~tether.workflow._derive.select_route`). A route reading an unfinished producer makes
    the router wait; no match leaves it available and unsettled (seed 001), with the reason in its
    ``failed_conditions``. Raises :class:`WorkflowExpressionError` when a route fails to evaluate.
    """
    choice = select_route(graph, snapshot, node_id)
    if not isinstance(choice, int):
        return None
    taken = graph.routes[node_id][: choice + 1]
    origins = [origin for route in taken if route.when is not None for origin in origins_of(route.when, snapshot)]
    target = taken[-1].target
    output = NodeOutput(fields={"target": target}, selected=[target] if target is not None else [])
    return complete_node(node_id, output, obtained_by="runtime",
                         input_origins={"when": tuple(origins or [Origin(kind="literal")])})


def apply_approval(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str, decision: Decision, *,
                   feedback: str | None = None, decided_by: str | None = None, response: Any = None) -> Change:
    """Decide the pending approval of ``node_id``.

    - gate: approved completes it (decision, feedback and response become its fields);
      rejected keeps it parked with the decision and feedback until a fresh request;
    - checkpoint: approved completes the node with the output it produced; rejected fails it;
    - agent (an agent node's ``request_approval``): approved completes it with the proposed
      output; rejected returns it to the agent (running) with the feedback;
    - check (escalated): rejected fails it terminally; approved is an override that needs a
      non-empty ``feedback``, keeps the failed evidence, and is refused when the failed
      attempt does not meet the check's declared output contract.
    """
    _known(snapshot, node_id)
    state = snapshot.nodes[node_id]
    approval = state.approval
    if state.status != "awaiting_approval" or approval is None or approval.decision is not None:
        raise _refuse(f"node {node_id!r} has no pending approval (status {state.status})", "no-pending-approval",
                      node_id)
    if decision not in ("approved", "rejected"):
        raise _refuse(f"decision must be 'approved' or 'rejected', got {decision!r}", "bad-decision", node_id)
    last = state.attempts[-1] if state.attempts else None
    if approval.kind == "check" and decision == "approved":
        if not (feedback or "").strip():
            raise _refuse(f"overriding failed check {node_id!r} needs a non-empty feedback reason",
                          "override-needs-feedback", node_id)
        problem = contract_problem(graph, node_id, dict(last.fields) if last else {})
        if problem:
            raise _refuse(f"cannot override check {node_id!r}: {problem}", "override-output-contract", node_id)
    run = graph.nodes[node_id].run
    if approval.kind == "gate" and decision == "approved" and isinstance(run, GateRun):
        response = _check_response(node_id, run, response)
    decided = approval.model_copy(update={"decision": decision, "feedback": feedback, "decided_by": decided_by,
                                          "response": response})

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        node.approval = decided
        node.approvals.append(decided)
        if decided.kind == "agent" or (decided.kind == "gate" and decision == "rejected"):
            snap.stimuli.append({"type": "approval_received", "node": node_id, "decision": decision,
                                 "feedback": feedback, "decided_by": decided_by})
        if decision == "rejected":
            if decided.kind == "gate":
                return  # parked with the decision until a fresh request
            if decided.kind == "agent":
                node.status = "running"  # back to the agent, which revises and asks again
                return
            reason = f"rejected by {decided_by or 'a human'}" + (f": {feedback}" if feedback else "")
            fail_node(graph, node_id, reason)(snap)
            return
        if decided.kind == "gate":
            fields = {"decision": decision, "feedback": feedback, "response": response}
            complete_node(node_id, NodeOutput(fields=fields, summary=decided.summary), obtained_by=None,
                          input_origins=node.input_origins)(snap)
        elif decided.kind == "agent":
            complete_node(node_id, decided.proposed or NodeOutput(), obtained_by="agent",
                          input_origins=node.input_origins)(snap)
        elif decided.kind == "check":
            fields = dict(last.fields) if last else {}
            complete_node(node_id, NodeOutput(fields=fields, summary=f"overridden: {feedback}"),
                          obtained_by="runtime", input_origins=node.input_origins)(snap)
        else:
            complete_node(node_id, node.output or NodeOutput(), obtained_by=node.obtained_by,
                          input_origins=node.input_origins)(snap)
    return change


def _check_response(node_id: str, run: GateRun, response: Any) -> Any:
    """The gate's response coerced to its schema; a refusal names the reason."""
    if response is None:
        if run.schema_.kind == "text":
            return None  # the approval itself answers a text gate
        raise _refuse(f"gate {node_id!r}: approving a {run.schema_.kind} gate needs a response", "bad-response",
                      node_id)
    try:
        return check_answer(run.schema_, response)
    except ValueError as exc:
        raise _refuse(f"gate {node_id!r}: {exc}", "bad-response", node_id) from None


def request_approval(snapshot: WorkflowSnapshot, node_id: str, summary: str | None = None) -> Change:
    """A fresh approval request on a gate whose previous request was rejected."""
    _known(snapshot, node_id)
    state = snapshot.nodes[node_id]
    previous = state.approval
    if state.status != "awaiting_approval" or previous is None or previous.decision != "rejected":
        raise _refuse(f"node {node_id!r} has no rejected approval to request again", "no-rejected-approval", node_id)
    fresh = Approval(kind=previous.kind, summary=summary or previous.summary, schema=previous.schema_,
                     check=previous.check, child_node=previous.child_node, request=previous.request + 1)

    def change(snap: WorkflowSnapshot) -> None:
        snap.nodes[node_id].approval = fresh
    return change


def request_input(snapshot: WorkflowSnapshot, node_id: str, prompt: str, schema: dict[str, Any]) -> Change:
    """Pause the running node ``node_id`` for typed input."""
    _known(snapshot, node_id)
    if snapshot.nodes[node_id].status != "running":
        raise _refuse(f"node {node_id!r} is not running", "node-not-running", node_id)

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        node.status, node.input_request = "awaiting_input", InputRequest(prompt=prompt, schema=schema)
    return change


def apply_input(snapshot: WorkflowSnapshot, node_id: str, response: Any, provided_by: str | None = None) -> Change:
    """Answer the input request of ``node_id``: the answer is coerced to the requested schema or
    refused with the reason; the node runs on with it recorded and the agent's next turn starts
    with an ``input_received`` stimulus."""
    _known(snapshot, node_id)
    state = snapshot.nodes[node_id]
    if state.status != "awaiting_input" or state.input_request is None:
        raise _refuse(f"node {node_id!r} is not awaiting input", "no-pending-input", node_id)
    try:
        answer = check_answer(coerce_input_schema(state.input_request.schema_), response)
    except ValueError as exc:
        raise _refuse(f"input for node {node_id!r}: {exc}", "bad-input", node_id) from None

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        assert node.input_request is not None
        node.input_request = node.input_request.model_copy(update={"response": answer, "provided_by": provided_by})
        node.status = "running"
        snap.stimuli.append({"type": "input_received", "node": node_id, "response": answer,
                             "provided_by": provided_by})
    return change


def _retry_refusal(snapshot: WorkflowSnapshot, node_id: str) -> WorkflowOperationError | None:
    """Why :func:`retry_node` refuses ``node_id`` (``None``: it can be retried)."""
    state = snapshot.nodes[node_id]
    if state.status != "failed":
        return _refuse(f"node {node_id!r} is {state.status}; only a failed node can be retried", "node-not-retryable",
                       node_id)
    if state.approval is not None and state.approval.kind == "check" and state.approval.decision == "rejected":
        return _refuse(f"node {node_id!r}: a rejected escalation is terminal (seed 001: no way back to available)",
                       "node-not-retryable", node_id)
    if snapshot.status == "cancelled":
        return _refuse("the run was cancelled", "run-cancelled", node_id)
    return None


def retryable(snapshot: WorkflowSnapshot) -> list[str]:
    """The failed nodes :func:`retry_node` would take, in definition order."""
    return [node_id for node_id in snapshot.nodes if _retry_refusal(snapshot, node_id) is None]


def run_ended(snapshot: WorkflowSnapshot) -> bool:
    """Whether the run has ended: no operation can move it on any more.

    ``complete`` and ``cancelled`` runs have ended. A ``blocked`` run has no failed node, no
    pending approval or input and no available work, so no host or agent operation moves it (only
    a cancel, which ends it too). A ``failed`` run is still open while one of its failed nodes can
    be retried (seed 001's ``retryNode``: a failed node goes back to admission); it has ended when
    every failed node is terminal (a check whose escalation a human rejected). A ``running`` or
    ``waiting`` run is open. (A changed definition cannot open an ended run again: a run is pinned
    to the digest of its definition, and ``WorkflowRun.load`` refuses any other.)
    """
    if snapshot.status == "failed":
        return not retryable(snapshot)
    return snapshot.status in ("complete", "cancelled", "blocked")


def retry_node(snapshot: WorkflowSnapshot, node_id: str) -> Change:
    """Return a failed node to admission under a new generation (a skipped node, and a check whose
    escalation a human rejected, are not retryable)."""
    _known(snapshot, node_id)
    refusal = _retry_refusal(snapshot, node_id)
    if refusal is not None:
        raise refusal

    def change(snap: WorkflowSnapshot) -> None:
        node = snap.nodes[node_id]
        node.status, node.error, node.approval, node.output = "pending", None, None, None
        node.generation += 1
    return change


def set_autonomous(value: bool) -> Change:
    """Turn autonomous mode on or off (mandatory approvals and gates still stop)."""
    def change(snapshot: WorkflowSnapshot) -> None:
        snapshot.autonomous = value
    return change


def cancel(reason: str = "run cancelled") -> Change:
    """Cancel the run: in-progress nodes fail under a new generation (stale results are discarded)."""
    def change(snapshot: WorkflowSnapshot) -> None:
        snapshot.status = "cancelled"
        for state in snapshot.nodes.values():
            if state.status in ("running", "awaiting_approval", "awaiting_input"):
                state.generation += 1
                state.status, state.error = "failed", reason
                state.error_history.append(reason)
    return change


def park_input(node_id: str, request: InputRequest) -> Change:
    """Park ``node_id`` at ``awaiting_input`` with ``request`` (a child's request, projected)."""
    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.status, state.input_request = "awaiting_input", request
    return change


def cold_restart(keep: frozenset[str] = frozenset()) -> Change:
    """After a crash: running work never committed returns to admission under a new generation,
    and so does a sub-flow parked on its (transient) child. Nodes in ``keep`` (agent nodes: their
    running state is the agent's committed progress, not a process in flight) stay as they are."""
    def change(snapshot: WorkflowSnapshot) -> None:
        for node_id, state in snapshot.nodes.items():
            if node_id in keep:
                continue
            projected = (state.status == "awaiting_approval" and state.approval and state.approval.kind == "sub-flow"
                         ) or (state.status == "awaiting_input" and state.input_request is not None
                               and state.input_request.child_node is not None)
            if state.status == "running" or projected:
                state.status, state.approval = "pending", None
                state.generation += 1
    return change


def in_doubt_attempts(state: NodeState) -> int:
    """How many of the node's latest attempts in a row were in doubt (each used one of its retries)."""
    count = 0
    for attempt in reversed(state.attempts):
        if not attempt.in_doubt:
            break
        count += 1
    return count


def resolve_in_doubt(graph: WorkflowGraph) -> Change:
    """After a crash: a function or check node stored ``running`` was in flight when its host
    stopped, so its command may have run, in part or in full, or not at all. An in-doubt attempt is
    recorded (failed, ``in_doubt``), and the node runs again only if its author declared the
    command safe to run again: a retry budget (``control.retries``) with a retry left, which the
    in-doubt attempt uses up (so a command that kills its worker every time stops). Otherwise
    the node fails (an optional node is skipped, as any terminal failure) with an ``in doubt``
    error; a person who has checked what the command did can retry it (:func:`retry_node`).
    Either way the lost attempt's generation is stale. (Sub-flow and subprompt nodes return to
    admission with :func:`cold_restart`: a subprompt is one model call, and a sub-flow restarts
    from its parent's boundary, seed 001.)"""
    def change(snapshot: WorkflowSnapshot) -> None:
        for node_id, state in snapshot.nodes.items():
            node = graph.nodes[node_id]
            if state.status != "running" or not isinstance(node.run, FunctionRun):
                continue
            again = node.control.retries > in_doubt_attempts(state)
            why = ("it runs again: a retry of its control.retries" if again
                   else "it is not run again on its own: it declares no retries (control.retries)"
                   if not node.control.retries
                   else "its retries (control.retries) were used by earlier in-doubt attempts")
            error = (f"in doubt: node {node_id!r} was running its command (generation {state.generation}) when its "
                     f"worker stopped, so the command may have run, in part or in full; {why}"
                     + ("" if again else ". Retry the node once you have checked what the command did"))
            attempt = Attempt(generation=state.generation, status="failed", error=error, in_doubt=True)
            if again:
                state.attempts.append(attempt)
                state.status, state.error = "pending", None
                state.error_history.append(error)
            else:
                fail_node(graph, node_id, error, attempt)(snapshot)
            state.generation += 1
    return change
