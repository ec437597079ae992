"""Definition-time checks, and the compiled graph the state machine runs on.

:func:`compile_workflow` checks everything the pydantic models cannot (unique ids, edges over
existing nodes, acyclicity pathed at the closing edge, route targets, checks that claim to be
optional, bounded expressions, binding names) and returns a :class:`WorkflowGraph` holding the
compiled expressions. Every problem is collected and raised at once as
:class:`~tether.errors.WorkflowDefinitionError`, each with a dot path.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from tether.errors import DefinitionIssue, WorkflowDefinitionError
from tether.workflow._answers import form_problems
from tether.workflow._contract import (
    DEFAULT_ROUTE,
    AgentRun,
    CheckRun,
    FormSchema,
    FunctionRun,
    GateRun,
    Node,
    RouterRun,
    SubpromptRun,
    Workflow,
)
from tether.workflow._expr import Expression, Template, compile_expression, compile_template

__all__ = ["CompiledRoute", "WorkflowGraph", "compile_workflow"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAPTURE = re.compile(r"fields\.[A-Za-z0-9_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class CompiledRoute:
    """A route with its compiled condition (``None`` for the ``default`` catch-all)."""

    when: Expression | None
    target: str | None


@dataclass
class WorkflowGraph:
    """A validated workflow with its edges indexed and its expressions compiled."""

    workflow: Workflow
    order: list[str]
    nodes: dict[str, Node]
    hard_preds: dict[str, list[str]] = field(default_factory=dict)
    guards: dict[str, list[tuple[Expression, str | None]]] = field(default_factory=dict)
    bindings: dict[str, dict[str, Template]] = field(default_factory=dict)
    routes: dict[str, list[CompiledRoute]] = field(default_factory=dict)
    route_owners: dict[str, list[str]] = field(default_factory=dict)
    outputs: dict[str, Template] = field(default_factory=dict)
    instructions: dict[str, Template] = field(default_factory=dict)
    consumed: set[str] = field(default_factory=set)

    @property
    def id(self) -> str:
        """The workflow id."""
        return self.workflow.id

    @cached_property
    def digest(self) -> str:
        """``sha256:`` of the normalized definition (canonical JSON): the same for the same
        definition whatever its text (YAML or JSON, comments, key order, snake_case or camelCase
        keys, v1 or v2 form), different once anything in it changes. A run is pinned to it
        (``WorkflowSnapshot.workflow_digest``). It is taken over the camelCase form
        (:meth:`~tether.workflow.Workflow.camel_dict`) whatever form the file is written in, so a
        run pinned before files were written snake_case resumes under the same definition."""
        data = self.workflow.camel_dict()
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    @cached_property
    def position(self) -> dict[str, int]:
        """Each node's index in definition order."""
        return {node_id: index for index, node_id in enumerate(self.order)}

    @cached_property
    def dependents(self) -> dict[str, frozenset[str]]:
        """The nodes whose derived state reads each node: its hard successors, the targets of
        its routes (when it is a router) and the nodes whose guards, bindings, routes or
        instruction read its output. A change of a node can change the admission of these only."""
        found: dict[str, set[str]] = {node_id: set() for node_id in self.order}
        for node_id, preds in self.hard_preds.items():
            for pred in preds:
                found[pred].add(node_id)
        for target, owners in self.route_owners.items():
            for owner in owners:
                found[owner].add(target)
        for node_id in self.order:
            for producer in self.reads(node_id):
                found[producer].add(node_id)
        return {node_id: frozenset(ids) for node_id, ids in found.items()}

    def reads(self, node_id: str) -> frozenset[str]:
        """Every node whose output ``node_id``'s guards, bindings or routes read."""
        found: set[str] = set()
        for expr, _ in self.guards[node_id]:
            found |= expr.reads_nodes
        for template in self.bindings[node_id].values():
            for expr in template.expressions:
                found |= expr.reads_nodes
        for route in self.routes.get(node_id, []):
            if route.when is not None:
                found |= route.when.reads_nodes
        if node_id in self.instructions:
            for expr in self.instructions[node_id].expressions:
                found |= expr.reads_nodes
        return frozenset(found)


def _issue(workflow: Workflow | None, path: str, message: str, code: str, node: str | None = None) -> DefinitionIssue:
    return DefinitionIssue(code, message, flow=workflow.id if workflow else None, node=node, path=path)


def _closing_edge(workflow: Workflow) -> tuple[int, list[str]] | None:
    """The index of the edge that closes a cycle (depth-first in authored order) and the cycle."""
    outgoing: dict[str, list[int]] = {n.id: [] for n in workflow.nodes}
    for index, edge in enumerate(workflow.edges):
        if edge.source in outgoing and edge.target in outgoing:
            outgoing[edge.source].append(index)
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    for root in outgoing:
        if root in state:
            continue
        stack: list[tuple[str, Iterator[int]]] = [(root, iter(outgoing[root]))]
        path = [root]
        state[root] = 1
        while stack:
            current, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                stack.pop()
                path.pop()
                state[current] = 2
                continue
            target = workflow.edges[step].target
            if state.get(target) == 1:
                return step, [*path[path.index(target):], target]
            if target not in state:
                state[target] = 1
                path.append(target)
                stack.append((target, iter(outgoing[target])))
    return None


def _check_nodes(workflow: Workflow, ids: set[str], issues: list[DefinitionIssue]) -> None:
    seen: set[str] = set()
    for i, node in enumerate(workflow.nodes):
        where = f"nodes.{i}"
        if node.id in seen:
            issues.append(_issue(workflow, f"{where}.id", f'Duplicate node id "{node.id}"', "duplicate-node-id",
                                 node.id))
        seen.add(node.id)
        run = node.run
        if isinstance(run, CheckRun) and node.control.optional:
            issues.append(_issue(workflow, f"{where}.control.optional", "A check cannot be optional",
                                 "optional-check", node.id))
        if isinstance(run, GateRun) and isinstance(run.schema_, FormSchema):
            for problem in form_problems(run.schema_):
                issues.append(_issue(workflow, f"{where}.run.schema", problem, "bad-form-schema", node.id))
        if isinstance(run, FunctionRun):
            if run.capture is not None:
                for stream in ("stdout", "stderr"):
                    target = getattr(run.capture, stream)
                    if target is not None and not _CAPTURE.fullmatch(target):
                        issues.append(_issue(workflow, f"{where}.run.capture.{stream}",
                                             f"must be 'fields.<name>', got {target!r}", "bad-capture", node.id))
            for name in node.contract.input:
                if not _ENV_NAME.fullmatch(name):
                    issues.append(_issue(workflow, f"{where}.contract.input.{name}",
                                         "is not a valid environment variable name", "bad-binding-name", node.id))
        if isinstance(run, RouterRun):
            for j, route in enumerate(run.routes):
                rpath = f"{where}.run.routes.{j}"
                if route.target is not None and route.target not in ids:
                    issues.append(_issue(workflow, f"{rpath}.target", f'Unknown node "{route.target}"',
                                         "unknown-route-target", node.id))
                if route.target == node.id:
                    issues.append(_issue(workflow, f"{rpath}.target", "A router cannot route to itself",
                                         "router-self-target", node.id))
                if route.when.strip() == DEFAULT_ROUTE and j != len(run.routes) - 1:
                    issues.append(_issue(workflow, f"{rpath}.when", "The default route must be the last route",
                                         "default-route-not-last", node.id))


def _check_edges(workflow: Workflow, ids: set[str], issues: list[DefinitionIssue]) -> None:
    seen: set[str] = set()
    for i, edge in enumerate(workflow.edges):
        if edge.id in seen:
            issues.append(_issue(workflow, f"edges.{i}.id", f'Duplicate edge id "{edge.id}"', "duplicate-edge-id"))
        seen.add(edge.id)
        for end in ("source", "target"):
            name = getattr(edge, end)
            if name not in ids:
                issues.append(_issue(workflow, f"edges.{i}.{end}", f'Unknown node "{name}"', "unknown-edge-node"))
    if workflow.entry is not None and workflow.entry not in ids:
        issues.append(_issue(workflow, "entry", f'Unknown node "{workflow.entry}"', "unknown-entry"))
    closing = _closing_edge(workflow)
    if closing is not None:
        index, cycle = closing
        issues.append(_issue(workflow, f"edges.{index}",
                             f"flow graph must be acyclic (this edge closes {' -> '.join(cycle)})", "cycle"))


def _compile_expressions(workflow: Workflow, graph: WorkflowGraph, issues: list[DefinitionIssue]) -> None:
    ids = frozenset(graph.order)
    for i, node in enumerate(workflow.nodes):
        where = f"nodes.{i}"
        guards: list[tuple[Expression, str | None]] = []
        for j, guard in enumerate(node.contract.requires):
            try:
                guards.append((compile_expression(guard.expr, ids), guard.message))
            except ValueError as exc:
                issues.append(_issue(workflow, f"{where}.contract.requires.{j}.expr", str(exc), "bad-expression",
                                     node.id))
        bindings: dict[str, Template] = {}
        for name, value in node.contract.input.items():
            try:
                bindings[name] = compile_template(value, ids)
            except ValueError as exc:
                issues.append(_issue(workflow, f"{where}.contract.input.{name}", str(exc), "bad-expression", node.id))
        graph.guards[node.id] = guards
        graph.bindings[node.id] = bindings
        if isinstance(node.run, AgentRun | SubpromptRun):
            try:
                graph.instructions[node.id] = compile_template(node.run.instruction, ids)
            except ValueError as exc:
                issues.append(_issue(workflow, f"{where}.run.instruction", str(exc), "bad-expression", node.id))
        if isinstance(node.run, RouterRun):
            routes: list[CompiledRoute] = []
            for j, authored in enumerate(node.run.routes):
                if authored.when.strip() == DEFAULT_ROUTE:
                    routes.append(CompiledRoute(None, authored.target))
                    continue
                try:
                    routes.append(CompiledRoute(compile_expression(authored.when, ids), authored.target))
                except ValueError as exc:
                    issues.append(_issue(workflow, f"{where}.run.routes.{j}.when", str(exc), "bad-expression", node.id))
            graph.routes[node.id] = routes
            for route in routes:
                if route.target is not None:
                    graph.route_owners.setdefault(route.target, []).append(node.id)
    for name, value in workflow.output.items():
        try:
            graph.outputs[name] = compile_template(value, ids)
        except ValueError as exc:
            issues.append(_issue(workflow, f"output.{name}", str(exc), "bad-expression"))


def compile_workflow(workflow: Workflow) -> WorkflowGraph:
    """Check ``workflow`` and compile it; raise :class:`WorkflowDefinitionError` listing every problem."""
    ids = {node.id for node in workflow.nodes}
    issues: list[DefinitionIssue] = []
    _check_nodes(workflow, ids, issues)
    _check_edges(workflow, ids, issues)
    graph = WorkflowGraph(workflow=workflow, order=[n.id for n in workflow.nodes],
                          nodes={n.id: n for n in workflow.nodes})
    if not issues:
        _compile_expressions(workflow, graph, issues)
    if issues:
        raise WorkflowDefinitionError(issues, title=f"workflow {workflow.id!r} is invalid")
    graph.hard_preds = {node_id: [] for node_id in graph.order}
    for edge in workflow.edges:
        if edge.type == "flow":
            graph.hard_preds[edge.target].append(edge.source)
    for i, node_id in enumerate(graph.order):
        reads = graph.reads(node_id)
        if node_id in reads:
            raise WorkflowDefinitionError(_issue(workflow, f"nodes.{i}.contract",
                                                 "A node cannot read its own output", "self-reference", node_id))
        graph.consumed |= reads
    for template in graph.outputs.values():
        for expr in template.expressions:
            graph.consumed |= expr.reads_nodes
    return graph
