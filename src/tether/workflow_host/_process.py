"""Function and check nodes on the process executor: the request, and what the outcome means.

- Bindings (``contract.input``) reach the process as environment variables; their origins stay
  on the request. The parent environment is inherited through the executor's allow-list plus
  the node's ``run.env`` patterns.
- Captures land in ``fields.<name>``; attempts and their captures stay in the node's history.
- A check's clean exit outside ``successExit`` is a fail *verdict* with evidence: ``onFail:
  escalate`` (the default) parks the node with an approval naming the check, its exit status
  and its provenance; ``onFail: fail`` fails it. A spawn failure or a timeout has no verdict and
  is a plain node failure, whatever ``onFail`` says.
- ``gate.approval`` on the node: ``mandatory`` always parks the finished node for a human;
  ``optional`` parks it unless the run is autonomous.
"""

from __future__ import annotations

from pathlib import Path

from tether.executors import (
    DEFAULT_ALLOW,
    Binding,
    CheckVerdict,
    EnvPolicy,
    ProcessRequest,
    ProcessResult,
    RetryOutcome,
    check_verdict,
)
from tether.executors.provenance import ObtainedBy, Origin
from tether.workflow import Approval, Attempt, NodeOutput, WorkflowGraph, WorkflowSnapshot, ops
from tether.workflow._contract import CheckRun, FunctionRun
from tether.workflow._derive import contract_problem

__all__ = ["build_request", "complete_or_park", "describe_failure", "record_attempt", "settle_outcome",
           "spawn_failure"]


def build_request(graph: WorkflowGraph, node_id: str, bindings: dict[str, Binding], workspace: Path) -> ProcessRequest:
    """The executor request of function/check node ``node_id``.

    Raises :class:`ValueError` (pydantic) when a binding cannot become an environment variable.
    """
    node = graph.nodes[node_id]
    run = node.run
    assert isinstance(run, FunctionRun)
    capture = {}
    if run.capture is not None:
        capture = {s: t for s, t in (("stdout", run.capture.stdout), ("stderr", run.capture.stderr)) if t}
    return ProcessRequest(
        node=node_id,
        runtime=run.runtime,
        command=run.command if isinstance(run.command, str) else tuple(run.command),
        cwd=workspace / run.cwd if run.cwd else workspace,
        inputs=bindings,
        inherit_env=EnvPolicy(allow=(*DEFAULT_ALLOW, *run.env)),
        success_exit=tuple(run.success_exit),
        timeout=node.control.timeout_sec,
        capture=capture,
    )


def describe_failure(result: ProcessResult) -> str:
    """Why an attempt failed, in a phrase."""
    if result.timed_out:
        return f"timed out after {result.process.command!r} ran past its timeout"
    if result.abandoned:
        return "the executor did not settle after its abort and was abandoned"
    if result.aborted:
        return "aborted"
    if result.signal is not None:
        return f"killed by signal {result.signal}"
    return f"exit status {result.exit_code} (success: {list(result.process.success_exit)})"


def _attempt(result: ProcessResult, generation: int, verdict: CheckVerdict | None, error: str | None) -> Attempt:
    return Attempt(
        generation=generation, status="failed" if error else "complete", error=error, exit_code=result.exit_code,
        timed_out=result.timed_out, fields=dict(result.fields),
        verdict=verdict.model_dump(mode="json") if verdict is not None else None,
        process=result.process.model_dump(mode="json"),
    )


def spawn_failure(graph: WorkflowGraph, node_id: str, generation: int, error: str) -> ops.Change:
    """A spawn failure: a plain node failure with no verdict (never escalates)."""
    attempt = Attempt(generation=generation, status="failed", error=error, spawn_failed=True)
    return ops.fail_node(graph, node_id, error, attempt)


def settle_outcome(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str, generation: int,
                   request: ProcessRequest, outcome: RetryOutcome) -> list[ops.Change]:
    """The changes that settle ``node_id`` after its attempts (earlier failed attempts recorded first)."""
    node = graph.nodes[node_id]
    run = node.run
    changes: list[ops.Change] = []
    for earlier in outcome.attempts[:-1]:
        changes.append(record_attempt(node_id, _attempt(earlier, generation, None, describe_failure(earlier))))
    final = outcome.final
    origins = {name: binding.origins for name, binding in request.inputs.items()}
    is_check = isinstance(run, CheckRun)
    verdict = check_verdict(request, final) if is_check else None
    if final.passed:
        fields = dict(final.fields)
        problem = contract_problem(graph, node_id, fields)
        if problem:
            changes.append(ops.fail_node(graph, node_id, problem, _attempt(final, generation, verdict, problem)))
            return changes
        attempt = _attempt(final, generation, verdict, None)
        changes.append(complete_or_park(graph, snapshot, node_id, NodeOutput(fields=fields), origins=origins,
                                        obtained_by="runtime", attempt=attempt))
        return changes
    error = describe_failure(final)
    if is_check and verdict is not None:
        assert isinstance(run, CheckRun)
        error = f"check {node_id!r} failed: {error}"
        attempt = _attempt(final, generation, verdict, error)
        if run.on_fail == "escalate":
            label = f", provenance {verdict.provenance}" if verdict.provenance else ""
            summary = f"check {node_id!r} failed with exit status {verdict.exit_code}{label}"
            check = {"node": node_id, "exit_code": verdict.exit_code, "provenance": verdict.provenance,
                     "inputs": verdict.inputs}
            changes.append(ops.park(node_id, Approval(kind="check", summary=summary, check=check),
                                    input_origins=origins, obtained_by="runtime", attempt=attempt, error=error))
            return changes
        changes.append(ops.fail_node(graph, node_id, error, attempt))
        return changes
    attempt = _attempt(final, generation, None, error)
    changes.append(ops.fail_node(graph, node_id, f"node {node_id!r}: {error}", attempt))
    return changes


def complete_or_park(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str, output: NodeOutput, *,
                     origins: dict[str, tuple[Origin, ...]] | None, obtained_by: ObtainedBy,
                     attempt: Attempt) -> ops.Change:
    """Complete a runtime-run node, or park it for a human when its ``gate.approval`` says so."""
    node = graph.nodes[node_id]
    approval = node.gate.approval
    if approval == "mandatory" or (approval == "optional" and not snapshot.autonomous):
        summary = f"{node.label}: finished; approve to continue"
        return ops.park(node_id, Approval(kind="checkpoint", summary=summary), output=output,
                        input_origins=origins, obtained_by=obtained_by, attempt=attempt)
    return ops.complete_node(node_id, output, obtained_by=obtained_by, input_origins=origins, attempt=attempt)


def record_attempt(node_id: str, attempt: Attempt) -> ops.Change:
    """Record a failed attempt that a later one of the same node superseded."""
    def change(snapshot: WorkflowSnapshot) -> None:
        state = snapshot.nodes[node_id]
        state.attempts.append(attempt)
        if attempt.error:
            state.error_history.append(attempt.error)
    return change
