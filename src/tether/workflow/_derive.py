"""Derived state and the one ``mutate`` pipeline every change goes through.

:func:`mutate` clones the snapshot, applies the change, recomputes the derived state
(:func:`derive`: admission, router holds, branch pruning, guards, the run status, the run
output), counts the mutation and calls ``on_change`` once with the new snapshot.

Admission of a node that is neither settled nor in progress:

1. it is *held* while a router that may route to it has not settled (complete or skipped);
2. it is *pruned* (``skipped``, ``skip_reason="pruned"``) when it lost a route or descends from
   pruned nodes through hard edges only: no router selected it, none is still unsettled, and no
   other hard predecessor is live. Optional and parallel edges never prune;
3. it is ``pending`` while a hard (``flow``) predecessor is neither complete nor skipped;
4. its ``contract.requires`` guards are evaluated; a guard reading an unfinished producer
   waits, a false guard is reported in ``failed_conditions`` (apart from ``blocked_by``), a
   guard reading a skipped producer is an ``expression_error`` the host fails the node with;
5. otherwise it is ``available``.

An available node the runtime owns (router, function, check, subprompt, sub-flow) may still be
unable to move (:func:`_diagnose`): a route, binding or instruction reading a producer that has not
completed waits for it (``blocked_by`` names the producer), and a router whose routes are all false
and that has no ``default`` never settles (seed 001 keeps it unsettled; ``failed_conditions`` says
which routes were false and what they read). Neither is work for the run's roll-up: a run left with
only such nodes is ``waiting`` (agent work), ``failed`` (a failed node) or ``blocked``, never
``running``.

A mutation derives incrementally: only the nodes the change touched and the nodes that read them
(:attr:`WorkflowGraph.dependents`: hard successors, route targets, readers of their output), and
in turn the dependents of every node pruned on the way, are recomputed; the run's roll-up reads a
:class:`~tether.workflow._nodes.NodeIndex` kept up to date node by node. The result is the one a
full derive gives (a property test checks it): admission only ever reads those nodes, expressions
see a producer only once it is complete or skipped, and pruning is monotone, so its fixpoint does
not depend on the order nodes are visited in.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from tether.errors import WorkflowExpressionError
from tether.executors.provenance import Binding, Origin
from tether.workflow._contract import AgentRun, GateRun, RouterRun, SubpromptRun
from tether.workflow._expr import Expression, Template, Wait
from tether.workflow._graph import WorkflowGraph
from tether.workflow._nodes import NodeIndex, NodeMap
from tether.workflow._state import SETTLED, NodeState, NodeStatus, RunStatus, WorkflowSnapshot

__all__ = [
    "ACTIVE",
    "Unmatched",
    "changed_nodes",
    "clone_snapshot",
    "contract_problem",
    "derive",
    "index_of",
    "mutate",
    "new_snapshot",
    "origins_of",
    "resolve_bindings",
    "scope",
    "select_route",
]

ACTIVE = frozenset({"running", "awaiting_approval", "awaiting_input"})
_OPEN = frozenset({"pending", "available"})


def new_snapshot(graph: WorkflowGraph, run_id: str, run_input: dict[str, Any] | None = None,
                 *, autonomous: bool = False, digest: str | None = None) -> WorkflowSnapshot:
    """A fresh run of ``graph``: the declared input defaults overlaid with ``run_input``, pinned to
    ``digest`` (default ``graph.digest``; a host pins a run with sub-flows to their digests too)."""
    unknown = sorted(set(run_input or {}) - set(graph.workflow.input))
    if unknown:
        raise WorkflowExpressionError(
            f"workflow {graph.id!r} declares no input {', '.join(map(repr, unknown))} "
            f"(declared: {', '.join(graph.workflow.input) or 'none'})", code="unknown-input")
    snapshot = WorkflowSnapshot(
        run_id=run_id, workflow_id=graph.id, workflow_version=graph.workflow.version,
        workflow_digest=digest or graph.digest, autonomous=autonomous,
        input={**graph.workflow.input, **(run_input or {})}, nodes={node_id: NodeState() for node_id in graph.order},
    )
    derive(graph, snapshot)
    return snapshot


class _NodeViews(Mapping[str, dict[str, Any]]):
    """Each node's ``{"status", "output"}`` as expressions read it, built on first read."""

    def __init__(self, nodes: Mapping[str, NodeState]) -> None:
        self._nodes = nodes
        self._views: dict[str, dict[str, Any]] = {}

    def __getitem__(self, node_id: str) -> dict[str, Any]:
        view = self._views.get(node_id)
        if view is None:
            state = _get(self._nodes, node_id)
            output = state.output.model_dump(mode="json") if state.output is not None else {"fields": {}}
            view = self._views[node_id] = {"status": state.status, "output": output}
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(dict.keys(self._nodes) if isinstance(self._nodes, dict) else self._nodes.keys())

    def __len__(self) -> int:
        return len(self._nodes)


def scope(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> dict[str, Any]:
    """What expressions read: ``input``, ``defaults`` and each node's status and output (each
    node's view is built when an expression first reads it)."""
    defaults = graph.workflow.defaults.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"input": snapshot.input, "defaults": defaults, "nodes": _NodeViews(snapshot.nodes)}


def _get(nodes: Mapping[str, NodeState], node_id: str) -> NodeState:
    """``nodes[node_id]`` for reading: never copies (see :class:`~tether.workflow._nodes.NodeMap`)."""
    return dict.__getitem__(nodes, node_id) if isinstance(nodes, dict) else nodes[node_id]


def _owners(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> tuple[list[str], list[str], bool]:
    """(unsettled owners, losing owners, selected by a settled owner) of ``node_id``."""
    unsettled, losing, selected = [], [], False
    for owner in graph.route_owners.get(node_id, []):
        state = _get(snapshot.nodes, owner)
        if state.status == "complete":
            if state.output is not None and node_id in (state.output.selected or []):
                selected = True
            else:
                losing.append(owner)
        elif state.status == "skipped" and state.skip_reason == "pruned":
            losing.append(owner)
        elif state.status != "skipped":
            unsettled.append(owner)
    return unsettled, losing, selected


def _prune(graph: WorkflowGraph, snapshot: WorkflowSnapshot, affected: set[str]) -> None:
    """Prune to the fixpoint, starting from ``affected`` (grown by the dependents of every pruned
    node): a node is pruned when it lost every route to it or descends from pruned nodes."""
    nodes = snapshot.nodes
    queue = deque(affected)
    while queue:
        node_id = queue.popleft()
        if _get(nodes, node_id).status not in _OPEN:
            continue
        unsettled, losing, selected = _owners(graph, snapshot, node_id)
        preds = graph.hard_preds[node_id]
        pruned_preds = [p for p in preds if _get(nodes, p).skip_reason == "pruned"]
        if selected or unsettled or not (losing or pruned_preds):
            continue
        if all(p in losing or p in pruned_preds for p in preds):
            state = nodes[node_id]
            state.status, state.skip_reason = "skipped", "pruned"
            state.blocked_by, state.failed_conditions = [], []
            affected |= graph.dependents[node_id]
            queue.extend(graph.dependents[node_id])


def _admit(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str, view: dict[str, Any]) -> bool:
    """Admit open node ``node_id`` (and say why an available one the runtime owns cannot move);
    the state is written only when something changed. Returns whether it was."""
    current = _get(snapshot.nodes, node_id)
    unsettled, _, _ = _owners(graph, snapshot, node_id)
    blocked_by = [f"router:{owner}" for owner in unsettled]
    blocked_by += [p for p in graph.hard_preds[node_id] if _get(snapshot.nodes, p).status not in SETTLED]
    failed_conditions: list[str] = []
    expression_error: str | None = None
    skipped_producer: str | None = None
    if not blocked_by:
        for expr, message in graph.guards[node_id]:
            try:
                value = expr.evaluate(view, node=node_id)
            except WorkflowExpressionError as exc:
                expression_error, skipped_producer = exc.message, exc.skipped_producer
                break
            if isinstance(value, Wait):
                blocked_by.append(value.producer)
            elif value is not True:
                failed_conditions.append(message or f"requires {expr.source}")
    blocked = blocked_by or failed_conditions or expression_error
    status: NodeStatus = "pending" if blocked else "available"
    if status == "available":
        blocked_by, failed_conditions = _diagnose(graph, snapshot, node_id, view)
    if (current.status, current.blocked_by, current.failed_conditions, current.expression_error,
            current.skipped_producer) == (status, blocked_by, failed_conditions, expression_error, skipped_producer):
        return False
    state = snapshot.nodes[node_id]
    state.status, state.blocked_by, state.failed_conditions = status, blocked_by, failed_conditions
    state.expression_error, state.skipped_producer = expression_error, skipped_producer
    return True


@dataclass(frozen=True)
class Unmatched:
    """No route of a router holds and it has no ``default``: ``reason`` names the router, the
    false routes and the values they read. Final: every producer a false route read has
    completed, so the routes can never change their answer."""

    reason: str


def select_route(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str,
                 view: dict[str, Any] | None = None) -> int | Wait | Unmatched:
    """The index of the route router ``node_id`` takes (routes in authored order, the first whose
    ``when`` holds, or the ``default``); :class:`Wait` while a route reads an unfinished producer;
    :class:`Unmatched` when no route holds and there is no default.

    Raises :class:`WorkflowExpressionError` when a route fails to evaluate or is not a boolean.
    """
    view = scope(graph, snapshot) if view is None else view
    routes = graph.routes[node_id]
    for index, route in enumerate(routes):
        if route.when is None:
            return index
        value = route.when.evaluate(view, node=node_id)
        if isinstance(value, Wait):
            return value
        if not isinstance(value, bool):
            raise WorkflowExpressionError(
                f"route {route.when.source!r} of router {node_id!r} must be true or false, got {value!r}",
                node=node_id)
        if value:
            return index
    return Unmatched(_no_route(graph, snapshot, node_id, view))


_SEEN = 200  # characters of one value a no-route reason shows


def _no_route(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str, view: dict[str, Any]) -> str:
    exprs = [route.when for route in graph.routes[node_id] if route.when is not None]
    sources = [expr.source for expr in exprs]
    false = (f"{', '.join(sources[:-1])} and {sources[-1]} are false" if len(sources) > 1
             else f"{sources[0]} is false" if sources else "it has no routes")
    seen: dict[str, Any] = {}
    if any(expr.reads_input for expr in exprs):
        seen["input"] = snapshot.input
    if any(expr.reads_defaults for expr in exprs):
        seen["defaults"] = view["defaults"]
    for producer in sorted({p for expr in exprs for p in expr.reads_nodes}):
        seen[f"{producer}.output.fields"] = view["nodes"][producer]["output"]["fields"]
    shown = []
    for name, value in seen.items():
        text = json.dumps(value, sort_keys=True, default=str)
        shown.append(f"{name} = {text if len(text) <= _SEEN else text[: _SEEN - 1] + '…'}")
    values = f" ({'; '.join(shown)})" if shown else ""
    return f"router {node_id!r} matched no route and has no default: {false}{values}"


def _diagnose(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str,
              view: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Why available node ``node_id``, which the runtime owns, cannot run now, as ``(blocked_by,
    failed_conditions)`` (both empty when it can): a producer it reads waits, or a router matched
    no route. An expression that fails is left to the host, which fails the node."""
    run = graph.nodes[node_id].run
    if isinstance(run, AgentRun | GateRun):
        return [], []
    try:
        if isinstance(run, RouterRun):
            choice = select_route(graph, snapshot, node_id, view)
            if isinstance(choice, Wait):
                return [choice.producer], []
            if isinstance(choice, Unmatched):
                return [], [choice.reason]
            return [], []
        templates = list(graph.bindings[node_id].values())
        if isinstance(run, SubpromptRun) and node_id in graph.instructions:
            templates.append(graph.instructions[node_id])  # the host resolves it after the bindings
        for template in templates:
            value = template.resolve(view, node=node_id)
            if isinstance(value, Wait):
                return [value.producer], []
    except WorkflowExpressionError:
        pass
    return [], []


def _roll_up(snapshot: WorkflowSnapshot, index: NodeIndex) -> RunStatus:
    if snapshot.status == "cancelled":
        return "cancelled"
    if index.count("complete", "skipped") == len(snapshot.nodes):
        return "complete"
    if index.by_status["running"]:
        return "running"
    if index.count("awaiting_approval", "awaiting_input"):
        return "waiting"
    if index.runnable:
        return "running"  # runtime work the host does next
    if index.errors:
        return "running"  # the host fails those nodes next
    if index.agents:
        return "waiting"  # agent work: the agent's next turn
    return "failed" if index.by_status["failed"] else "blocked"


def _run_output(graph: WorkflowGraph, snapshot: WorkflowSnapshot, view: dict[str, Any]) -> dict[str, Any]:
    output: dict[str, Any] = {}
    for name, template in graph.outputs.items():
        try:
            value = template.resolve(view)
        except WorkflowExpressionError:
            continue
        if not isinstance(value, Wait):
            output[name] = value
    return output


def _node_map(snapshot: WorkflowSnapshot) -> NodeMap:
    """The snapshot's nodes as a :class:`~tether.workflow._nodes.NodeMap` (a plain dict, as a
    loaded snapshot has, is wrapped: same states, same order)."""
    nodes = snapshot.nodes
    if not isinstance(nodes, NodeMap):
        nodes = snapshot.nodes = NodeMap(nodes)
    return nodes


def index_of(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> NodeIndex:
    """The snapshot's :class:`~tether.workflow._nodes.NodeIndex` (built when it has none yet)."""
    nodes = _node_map(snapshot)
    if nodes.index is None:
        nodes.index = NodeIndex.build(graph, nodes)
    return nodes.index


def changed_nodes(snapshot: WorkflowSnapshot) -> frozenset[str] | None:
    """The nodes the mutation that made ``snapshot`` changed (``None``: unknown, any of them)."""
    return snapshot.nodes.changed if isinstance(snapshot.nodes, NodeMap) else None


def derive(graph: WorkflowGraph, snapshot: WorkflowSnapshot, changed: Iterable[str] | None = None) -> None:
    """Recompute the derived fields of ``snapshot`` in place (see the module docstring).

    ``changed``: the nodes a change modified since the snapshot was last derived; only they and
    the nodes their change can affect are recomputed. ``None``: every node.
    """
    nodes = _node_map(snapshot)
    if changed is None:
        affected = set(graph.order)
        nodes.index = None
    else:
        affected = set(changed)
        for node_id in changed:
            affected |= graph.dependents[node_id]
    index = index_of(graph, snapshot)
    _prune(graph, snapshot, affected)
    view = scope(graph, snapshot)
    for node_id in index.ordered(graph, affected):
        if _get(nodes, node_id).status in _OPEN:
            _admit(graph, snapshot, node_id, view)
    index.update(graph, nodes, affected)
    snapshot.status = _roll_up(snapshot, index)
    snapshot.output = _run_output(graph, snapshot, view) if snapshot.status == "complete" else None


def clone_snapshot(snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
    """A copy of ``snapshot`` a change may modify, without copying what it does not touch.

    The node map is a :class:`~tether.workflow._nodes.NodeMap` that shares every node state with
    ``snapshot`` and copies a state (and its lists) the first time it is accessed; records that are
    only ever replaced, never modified (outputs, attempts, approvals, origins), stay shared.
    """
    nodes = NodeMap.fork(snapshot.nodes)
    return snapshot.model_copy(update={"nodes": nodes, "input": copy.deepcopy(snapshot.input),
                                       "stimuli": list(snapshot.stimuli), "usage": dict(snapshot.usage)})


def mutate(graph: WorkflowGraph, snapshot: WorkflowSnapshot, change: Callable[[WorkflowSnapshot], None],
           on_change: Callable[[WorkflowSnapshot], None] | None = None) -> WorkflowSnapshot:
    """Clone ``snapshot``, apply ``change``, derive, count, and call ``on_change`` once.

    The input snapshot is never modified; if ``change`` raises, nothing changed. The new
    snapshot records which nodes changed (:func:`changed_nodes`): the ones the change or the
    derive wrote; all of them when the change replaced the node map or the run input.
    """
    clone = clone_snapshot(snapshot)
    nodes = clone.nodes
    assert isinstance(nodes, NodeMap)
    change(clone)
    if clone.nodes is nodes and clone.input == snapshot.input:
        derive(graph, clone, nodes.touched)
        nodes.changed = nodes.close()
    else:
        nodes.close()
        derive(graph, clone)
    clone.mutations += 1
    if on_change is not None:
        on_change(clone)
    return clone


def origins_of(expr: Expression, snapshot: WorkflowSnapshot) -> list[Origin]:
    origins: list[Origin] = []
    if expr.reads_input:
        origins.append(Origin(kind="flow-input", path="input"))
    if expr.reads_defaults:
        origins.append(Origin(kind="default", path="defaults"))
    for producer in sorted(expr.reads_nodes):
        state = snapshot.nodes[producer]
        recorded = state.input_origins
        nested = None if recorded is None else tuple(o for group in recorded.values() for o in group)
        origins.append(Origin(kind="node-output", node=producer, obtained_by=state.obtained_by, origins=nested))
    return origins or [Origin(kind="literal")]


def _binding(template: Template, snapshot: WorkflowSnapshot, view: dict[str, Any], node_id: str) -> Binding | Wait:
    value = template.resolve(view, node=node_id)
    if isinstance(value, Wait):
        return value
    if template.parts is None:
        return Binding(value=value, origins=(Origin(kind="literal"),))
    origins = [o for expr in template.expressions for o in origins_of(expr, snapshot)]
    return Binding(value=value, origins=tuple(origins))


def resolve_bindings(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> dict[str, Binding] | Wait:
    """The node's ``contract.input`` bindings with their origins, or :class:`Wait`.

    Raises :class:`WorkflowExpressionError` (with ``skipped_producer``) when a binding reads a
    skipped producer.
    """
    view = scope(graph, snapshot)
    bindings: dict[str, Binding] = {}
    for name, template in graph.bindings[node_id].items():
        binding = _binding(template, snapshot, view, node_id)
        if isinstance(binding, Wait):
            return binding
        bindings[name] = binding
    return bindings


def contract_problem(graph: WorkflowGraph, node_id: str, fields: dict[str, Any]) -> str | None:
    """Why ``fields`` breaks the node's declared output contract, when another node consumes it."""
    output = graph.nodes[node_id].contract.output
    if node_id not in graph.consumed or output is None or output.fields is None:
        return None
    errors = sorted(Draft202012Validator(output.fields).iter_errors(fields), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.path) or "fields"
    return f"output does not match the declared contract at {where}: {first.message}"
