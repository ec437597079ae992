"""Stored workflow runs operated from another process (the HTTP server, say).

- :func:`waiting_on` says what a stored run waits on, as data: approvals, input requests, agent
  work, work for a worker, failed nodes, what blocks it.
- :func:`act_on_run` acts on a stored run as a person: approve or reject a pending approval,
  answer an input request, retry a failed node, cancel the run. It holds the run's lease (a run
  a process drives right now is refused with ``run-busy``), checks the action against the stored
  run before anything is written (a refusal changes nothing), loads the run with the definition it
  was launched with, applies the action and writes a ``workflow.action`` event in the same save.
  It does not drive the run on: a worker takes the work the action made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tether.errors import SessionLeaseTimeout, WorkflowDefinitionError, WorkflowOperationError
from tether.stores.base import Store
from tether.stores.records import session_tenant
from tether.workflow import WorkflowGraph, WorkflowSnapshot, ops
from tether.workflow_host._files import load_workflow_file, workflow_directory_resolver
from tether.workflow_host._run import WorkflowRun
from tether.workflow_host._store import stored_run

__all__ = ["ACTIONS", "Action", "RunAction", "act_on_run", "waiting_on"]

Action = Literal["approve", "reject", "input", "retry", "cancel"]
ACTIONS: tuple[Action, ...] = ("approve", "reject", "input", "retry", "cancel")

ACT_WAIT = 2.0
"""Seconds :func:`act_on_run` waits for the run's lease before it answers ``run-busy``."""


def waiting_on(snapshot: WorkflowSnapshot) -> list[dict[str, Any]]:
    """What the run waits on, most pressing first, each a dict with a ``kind``:

    - ``approval`` (``node``, ``summary``, ``approval``: the approval's kind, ``schema``, ``decision``
      once a gate's was rejected and waits for a fresh request),
    - ``input`` (``node``, ``prompt``, ``schema``),
    - ``agent`` (``nodes``: agent work, for a driver with a model),
    - ``worker`` (``nodes``: runtime work a worker takes),
    - ``failed`` (``node``, ``error``, ``retryable``),
    - ``blocked`` (``node``, ``why``);

    empty once the run has ended."""
    found: list[dict[str, Any]] = []
    for node_id, state in snapshot.nodes.items():
        if state.status == "awaiting_approval" and state.approval is not None:
            found.append({"kind": "approval", "node": node_id, "summary": state.approval.summary,
                          "approval": state.approval.kind, "schema": state.approval.schema_,
                          "decision": state.approval.decision})
        elif state.status == "awaiting_input" and state.input_request is not None:
            found.append({"kind": "input", "node": node_id, "prompt": state.input_request.prompt,
                          "schema": state.input_request.schema_})
    if found or snapshot.status in ("complete", "cancelled"):
        return found
    at = {status: [n for n, s in snapshot.nodes.items() if s.status == status] for status in ("running", "available")}
    movable = [n for n in at["available"]
               if not (snapshot.nodes[n].blocked_by or snapshot.nodes[n].failed_conditions)]
    if snapshot.status == "waiting":  # only agent nodes are left available (the run's roll-up)
        return [{"kind": "agent", "nodes": movable}]
    if snapshot.status == "running":
        answered = {stimulus.get("node") for stimulus in snapshot.stimuli}  # the agent's next turn starts with them
        rejected = {n for n in at["running"] if (a := snapshot.nodes[n].approval) is not None
                    and a.decision == "rejected"}  # back with the agent, to revise
        agent = [n for n in at["running"] if n in answered or n in rejected]
        worker = [n for n in [*at["running"], *movable] if n not in agent]
        return ([{"kind": "agent", "nodes": agent}] if agent else []) + (
            [{"kind": "worker", "nodes": worker}] if worker else [])
    retryable = set(ops.retryable(snapshot))
    found += [{"kind": "failed", "node": n, "error": s.error, "retryable": n in retryable}
              for n, s in snapshot.nodes.items() if s.status == "failed"]
    found += [{"kind": "blocked", "node": n, "why": "; ".join(s.failed_conditions)
               or f"waits for {', '.join(s.blocked_by)}"}
              for n, s in snapshot.nodes.items()
              if s.status in ("pending", "available") and (s.failed_conditions or (s.status == "available"
                                                                                     and s.blocked_by))]
    return found


@dataclass(frozen=True, slots=True)
class RunAction:
    """What a person does to a stored run (see :func:`act_on_run`).

    ``node``: the node acted on (every action but ``cancel``); ``by``: who (recorded as the
    decision's or the answer's author, and on the event); ``feedback``: with ``approve`` or
    ``reject``; ``response``: a gate's response with ``approve``, the answer with ``input``;
    ``reason``: with ``cancel``."""

    action: Action
    node: str | None = None
    by: str | None = None
    feedback: str | None = None
    response: Any = None
    reason: str | None = None

    def event(self) -> dict[str, Any]:
        """The ``workflow.action`` event it is recorded with."""
        event: dict[str, Any] = {"type": "workflow.action", "action": self.action}
        for name in ("node", "by", "feedback", "reason"):
            if getattr(self, name) is not None:
                event[name] = getattr(self, name)
        return event


def _check(graph: WorkflowGraph, snapshot: WorkflowSnapshot, act: RunAction) -> None:
    """Refuse ``act`` on the stored run before anything is written (the same checks the action makes)."""
    if act.action == "cancel":
        if ops.run_ended(snapshot):
            raise WorkflowOperationError(f"run {snapshot.run_id!r} has ended ({snapshot.status}): there is nothing "
                                         "to cancel", code="run-ended")
        return
    if act.node is None:
        raise WorkflowOperationError(f"{act.action} needs a node", code="node-needed")
    if act.action in ("approve", "reject"):
        ops.apply_approval(graph, snapshot, act.node, "approved" if act.action == "approve" else "rejected",
                           feedback=act.feedback, decided_by=act.by, response=act.response)
    elif act.action == "input":
        ops.apply_input(snapshot, act.node, act.response, act.by)
    else:
        ops.retry_node(snapshot, act.node)


async def act_on_run(store: Store, run_id: str, act: RunAction, *, tenant: str | None = None,
                     wait: float = ACT_WAIT) -> WorkflowSnapshot:
    """Apply ``act`` to stored run ``run_id`` (of ``tenant``, when given) and return the run after it.

    Raises :class:`~tether.errors.WorkflowOperationError`, with nothing written: ``unknown-run``
    (no such run, or another tenant's), ``run-busy`` (a process holds the run's lease: it drives
    the run now), ``run-ended``, ``unknown-node``, ``no-pending-approval``, ``no-pending-input``,
    ``node-not-retryable``, ``bad-response``, ``bad-input``, ``override-needs-feedback`` and the
    other refusals of :mod:`tether.workflow.ops`; ``definition-needed`` or ``definition-changed``
    when the run's workflow file cannot be loaded as the run was started."""
    try:
        async with store.lease(run_id, timeout=wait):
            document = await store.load(run_id)
            snapshot = stored_run(document) if document is not None else None
            if document is None or snapshot is None or (tenant is not None
                                                        and session_tenant(document.metadata) != tenant):
                raise WorkflowOperationError(f"no workflow run {run_id!r}", code="unknown-run")
            launch = document.metadata.get("launch")
            launch = launch if isinstance(launch, Mapping) else {}
            if not isinstance(launch.get("file"), str):
                raise WorkflowOperationError(
                    f"run {run_id!r} was started from a definition given in code: only its own process can act "
                    "on it", code="definition-needed")
            path = Path(launch["file"])
            try:
                graph = load_workflow_file(path)
            except WorkflowDefinitionError as exc:  # a missing or broken file: say so, as WorkflowRun.load would
                raise WorkflowOperationError(f"run {run_id!r} was started from {path}, which does not load now: "
                                             f"{exc.message}", code="definition-needed") from None
            _check(graph, snapshot, act)
            run = await WorkflowRun.load(store, run_id, graph, workspace=Path(str(launch.get("workspace") or ".")),
                                         resolve=workflow_directory_resolver(path.parent))
            run.note(act.event())
            await _apply(run, act)
            return run.snapshot
    except SessionLeaseTimeout:
        raise WorkflowOperationError(f"run {run_id!r} is being driven by another process (a worker, or tether "
                                     "workflow run): try again when it waits", code="run-busy") from None


async def _apply(run: WorkflowRun, act: RunAction) -> None:
    node = act.node or ""
    if act.action in ("approve", "reject"):
        await run.apply_approval(node, "approved" if act.action == "approve" else "rejected", feedback=act.feedback,
                                 decided_by=act.by, response=act.response)
    elif act.action == "input":
        await run.apply_input(node, act.response, provided_by=act.by)
    elif act.action == "retry":
        await run.retry_node(node)
    else:
        await run.cancel(act.reason or f"cancelled by {act.by or 'an operator'}")
