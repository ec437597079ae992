"""Inline sub-flows: a ``sub-flow`` node runs another workflow as a transient child run.

- The child is resolved by id through the parent's resolver; ``passContext`` merges the parent
  run input (the keys the child declares) ahead of the node's bindings.
- The sub-flow tree is checked when a root run is registered (:func:`check_subflows`): an unknown
  or invalid child, a cycle across workflows (named ``a -> b -> a``) or more than
  :data:`MAX_SUBFLOW_DEPTH` nested workflows is a :class:`WorkflowDefinitionError` before
  anything runs. Ancestry is tracked in memory at run time too, as a second line: a resolver
  whose answers changed since registration still cannot loop.
- The child's gates and escalated checks are projected onto the parent node (``approval.kind =
  "sub-flow"``, ``child_node``); deciding the parent's approval decides the child's, and the
  child runs on. The child snapshot itself is never saved: a cold restart sends the parent node
  back to admission and the child starts again from the durable parent boundary.
- The child shares the parent's executor and models: its subprompts run, and the agent gets
  turns on its agent nodes; an agent's ``request_approval`` is projected like a gate, and its
  ``request_input`` is projected as the parent node's input request (``child_node``): answering
  the parent answers the child, which runs on.
- Child completion completes the parent node (the child's run output becomes its fields); any
  other end fails it (or skips it when optional).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import DefinitionIssue, TetherError, WorkflowDefinitionError, WorkflowOperationError
from tether.workflow import NodeOutput, WorkflowGraph, WorkflowSnapshot, ops
from tether.workflow._contract import SubflowRun
from tether.workflow._state import Approval

if TYPE_CHECKING:
    from tether.workflow_host._host import RunHost

__all__ = ["MAX_SUBFLOW_DEPTH", "Spawn", "SubflowHost", "check_subflows", "tree_digest"]

Spawn = Callable[[WorkflowGraph, str, dict[str, Any]], "RunHost"]
"""Makes a sub-flow's child run: ``(child graph, child run id, child input)``; the parent run
passes it down, sharing its executor, workspace, resolver, budget, models and ancestry."""

MAX_SUBFLOW_DEPTH = 16
"""The most workflows one chain of inline sub-flows may hold (the root included)."""


class _Invalid(Exception):
    pass


def _problem(issues: list[DefinitionIssue], where: dict[str, str]) -> Callable[[str, str], None]:
    """Records a problem at ``where`` (flow, node, path)."""
    def add(code: str, message: str) -> None:
        issues.append(DefinitionIssue(code, message, flow=where["flow"], node=where["node"], path=where["path"]))
    return add


def check_subflows(root: WorkflowGraph, resolve: Callable[[str], WorkflowGraph] | None) -> None:
    """Check the sub-flow tree under ``root``: every child resolves and is valid, no workflow
    reaches itself through sub-flows, and no chain nests more than :data:`MAX_SUBFLOW_DEPTH`
    workflows. Raises :class:`WorkflowDefinitionError` naming the workflow, node and path."""
    issues: list[DefinitionIssue] = []
    loaded: dict[str, WorkflowGraph | None] = {root.id: root}
    height: dict[str, int] = {}  # explored workflows: how many nest below them, themselves included

    def load(flow: str) -> WorkflowGraph | None:
        if flow not in loaded:
            loaded[flow] = None
            if resolve is not None:
                try:
                    loaded[flow] = resolve(flow)
                except KeyError:
                    pass
                except TetherError as exc:
                    raise _Invalid(exc.message) from None
        return loaded[flow]

    def visit(graph: WorkflowGraph, chain: tuple[str, ...]) -> int:
        if len(chain) > MAX_SUBFLOW_DEPTH:
            too_deep.append(" -> ".join(chain))
            return 1
        deepest = 1
        for index, node in enumerate(graph.workflow.nodes):
            run = node.run
            if not isinstance(run, SubflowRun):
                continue
            where = {"flow": graph.id, "node": node.id, "path": f"nodes.{index}.run.flow"}
            problem = _problem(issues, where)
            if run.flow in chain:
                problem("subflow-cycle", f"sub-flow cycle: {' -> '.join((*chain[chain.index(run.flow):], run.flow))}")
                continue
            try:
                child = load(run.flow)
            except _Invalid as exc:
                problem("subflow-invalid", f"sub-flow {run.flow!r} is invalid: {exc}")
                continue
            if child is None:
                problem("unknown-subflow", f"sub-flow {run.flow!r}: no such workflow")
                continue
            if child.id != run.flow:
                problem("subflow-id-mismatch", f"sub-flow {run.flow!r} resolved to a workflow with id {child.id!r}")
                continue
            below = height[child.id] if child.id in height else visit(child, (*chain, child.id))
            deepest = max(deepest, below + 1)
        height[graph.id] = deepest
        return deepest

    too_deep: list[str] = []
    if visit(root, (root.id,)) > MAX_SUBFLOW_DEPTH or too_deep:
        chain = too_deep[0] if too_deep else root.id
        issues.append(DefinitionIssue("subflow-too-deep", f"sub-flows nest deeper than {MAX_SUBFLOW_DEPTH} workflows "
                                      f"({chain})", flow=root.id, path="nodes"))
    if issues:
        unique = list(dict.fromkeys(issues))
        raise WorkflowDefinitionError(unique, title=f"workflow {root.id!r}: its sub-flows are invalid")


def tree_digest(root: WorkflowGraph, resolve: Callable[[str], WorkflowGraph]) -> str:
    """The digest a run of ``root`` is pinned to: ``root.digest`` for a workflow without sub-flows,
    else ``sha256:`` of its digest with the tree digest of every workflow its sub-flow nodes run,
    so a changed child definition (at any depth) changes it. The tree must be valid
    (:func:`check_subflows`)."""
    known: dict[str, str] = {}

    def digest(graph: WorkflowGraph) -> str:
        if graph.id not in known:
            flows = sorted({node.run.flow for node in graph.workflow.nodes if isinstance(node.run, SubflowRun)})
            if not flows:
                known[graph.id] = graph.digest
            else:
                tree = {"workflow": graph.digest, "subflows": {flow: digest(resolve(flow)) for flow in flows}}
                canonical = json.dumps(tree, sort_keys=True, separators=(",", ":"))
                known[graph.id] = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
        return known[graph.id]

    return digest(root)


class SubflowHost:
    """The transient children of one parent run, by parent node id."""

    def __init__(self, parent: RunHost, spawn: Spawn) -> None:
        self.parent = parent
        self.spawn = spawn
        self.children: dict[str, tuple[int, RunHost]] = {}

    def drop_all(self) -> None:
        """Forget every child (cancel, hydrate)."""
        self.children.clear()

    def _refusal(self, flow: str) -> str | None:
        ancestry = self.parent.ancestry
        if flow in ancestry:
            return f"sub-flow cycle: {' -> '.join((*ancestry[ancestry.index(flow):], flow))}"
        if len(ancestry) + 1 > MAX_SUBFLOW_DEPTH:
            return f"sub-flow {flow!r} would nest deeper than {MAX_SUBFLOW_DEPTH} workflows"
        return None

    async def start(self, node_id: str) -> bool:
        """Start the child of available node ``node_id``; ``False`` when it must wait for a binding."""
        parent = self.parent
        run = parent.graph.nodes[node_id].run
        assert isinstance(run, SubflowRun)
        error = self._refusal(run.flow)
        child_graph = None
        if error is None:
            try:
                child_graph = parent.resolve(run.flow)
            except KeyError:
                error = f"sub-flow {run.flow!r}: no such workflow"
            except TetherError as exc:
                error = f"sub-flow {run.flow!r} is invalid: {exc.message}"
        if error is not None or child_graph is None:
            await parent.apply(ops.fail_node(parent.graph, node_id, error or "sub-flow unavailable"))
            return True
        bindings = await parent.resolve_or_fail(node_id)
        if bindings is None:
            return parent.node(node_id).status != "available"
        declared = child_graph.workflow.input
        child_input: dict[str, Any] = (
            {k: v for k, v in parent.snapshot.input.items() if k in declared} if run.pass_context else {}
        )
        child_input.update({name: binding.value for name, binding in bindings.items()})
        try:
            child = self.spawn(child_graph, f"{parent.run_id}/{node_id}", child_input)
        except TetherError as exc:
            await parent.apply(ops.fail_node(parent.graph, node_id, f"sub-flow {run.flow!r}: {exc.message}"))
            return True
        await parent.apply(ops.start_node(node_id))
        self.children[node_id] = (parent.node(node_id).generation, child)
        await self._advance(node_id)
        return True

    async def _advance(self, node_id: str) -> None:
        parent = self.parent
        generation, child = self.children[node_id]
        await child.advance()
        if parent.node(node_id).generation != generation or node_id not in self.children:
            return  # stale: the parent was cancelled or hydrated meanwhile
        snapshot = child.snapshot
        flow = child.graph.id
        if snapshot.status == "complete":
            del self.children[node_id]
            output = NodeOutput(fields=dict(snapshot.output or {}), summary=f"sub-flow {flow!r} complete")
            await parent.apply(ops.complete_node(node_id, output, obtained_by="runtime", input_origins=None))
            return
        parked = next((n for n in child.graph.order if snapshot.nodes[n].status == "awaiting_approval"), None)
        approval = snapshot.nodes[parked].approval if parked else None
        if snapshot.status == "waiting" and parked is not None and approval is not None:
            projected = Approval(kind="sub-flow", summary=approval.summary, schema=approval.schema_,
                                 check=approval.check, child_node=parked, request=approval.request,
                                 decision=approval.decision, feedback=approval.feedback)
            await parent.apply(ops.park(node_id, projected))
            return
        asking = next((n for n in child.graph.order if snapshot.nodes[n].status == "awaiting_input"), None)
        request = snapshot.nodes[asking].input_request if asking else None
        if asking is not None and request is not None:
            await parent.apply(ops.park_input(node_id, request.model_copy(update={"child_node": asking})))
            return
        del self.children[node_id]
        await parent.apply(ops.fail_node(parent.graph, node_id, f"sub-flow {flow!r} {_ending(snapshot)}"))

    async def forward_input(self, node_id: str, response: Any, *, provided_by: str | None) -> WorkflowSnapshot:
        """Answer the child's input request projected on ``node_id``, record it, and run the child on."""
        parent = self.parent
        entry = self.children.get(node_id)
        request = parent.node(node_id).input_request
        if entry is None or request is None or request.child_node is None:
            raise WorkflowOperationError(f"sub-flow node {node_id!r} has no live child (drain to restart it)",
                                         code="no-live-child", node=node_id)
        child = entry[1]
        await child.apply_input(request.child_node, response, provided_by=provided_by)
        coerced = child.node(request.child_node).input_request  # the answer as the child stored it
        answered = request.model_copy(update={"response": coerced.response if coerced else response,
                                              "provided_by": provided_by})

        def record(snapshot: WorkflowSnapshot) -> None:
            node = snapshot.nodes[node_id]
            node.input_request, node.status = answered, "running"
        await parent.apply(record)
        await self._advance(node_id)
        return parent.snapshot

    async def forward_approval(self, node_id: str, decision: Literal["approved", "rejected"], *,
                               feedback: str | None, decided_by: str | None, response: Any) -> WorkflowSnapshot:
        """Decide the child's approval projected on ``node_id``, record it, and run the child on."""
        parent = self.parent
        entry = self.children.get(node_id)
        state = parent.node(node_id)
        if entry is None or state.approval is None or state.approval.child_node is None:
            raise WorkflowOperationError(f"sub-flow node {node_id!r} has no live child (drain to restart it)",
                                         code="no-live-child", node=node_id)
        _, child = entry
        await child.apply_approval(state.approval.child_node, decision, feedback=feedback, decided_by=decided_by,
                                   response=response)
        decided = state.approval.model_copy(update={"decision": decision, "feedback": feedback,
                                                    "decided_by": decided_by, "response": response})

        def record(snapshot: WorkflowSnapshot) -> None:
            node = snapshot.nodes[node_id]
            node.approvals.append(decided)
            node.approval, node.status = decided, "running"
        await parent.apply(record)
        await self._advance(node_id)
        return parent.snapshot


def _ending(snapshot: WorkflowSnapshot) -> str:
    failed = [(n, s.error) for n, s in snapshot.nodes.items() if s.status == "failed"]
    if failed:
        node, error = failed[0]
        return f"failed at node {node!r}: {error}"
    if snapshot.status == "waiting":
        return "is waiting for agent work and no model is configured"
    held = [f"{n}: {'; '.join(s.failed_conditions)}" if s.failed_conditions else f"{n} waits for {s.blocked_by[0]}"
            for n, s in snapshot.nodes.items()
            if (s.status in ("pending", "available") and s.failed_conditions)
            or (s.status == "available" and s.blocked_by)]
    return f"ended {snapshot.status} without completing" + (f" ({'; '.join(held)})" if held else "")
