"""Property test: a mutation's incremental derive gives exactly what a full derive gives, on random
graphs (function, check, agent, gate and router nodes; hard, optional and parallel edges; guards,
bindings and routes reading other nodes) and random sequences of operations and arbitrary changes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from workflow_helpers import definition, fn, node

from tether.errors import TetherError
from tether.workflow import (
    NodeOutput,
    WorkflowGraph,
    WorkflowSnapshot,
    derive,
    load_workflow,
    mutate,
    new_snapshot,
    ops,
)
from tether.workflow._derive import changed_nodes
from tether.workflow._state import Approval

KINDS = ("function", "check", "agent", "gate", "router")


def _reads(draw: st.DrawFn, earlier: list[str]) -> str:
    """A boolean expression over the input or an earlier node's output."""
    if earlier and draw(st.booleans()):
        producer = draw(st.sampled_from(earlier))
        return f"{producer}.output.fields.v == {draw(st.integers(0, 2))}"
    return f"input.pick == {draw(st.integers(0, 2))}"


@st.composite
def workflows(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(min_value=1, max_value=10))
    ids = [f"n{i}" for i in range(size)]
    nodes: list[dict[str, Any]] = []
    for index, node_id in enumerate(ids):
        earlier, later = ids[:index], ids[index + 1:]
        kind = draw(st.sampled_from(KINDS))
        contract: dict[str, Any] = {}
        if earlier and draw(st.integers(0, 3)) == 0:
            contract["requires"] = [{"expr": _reads(draw, earlier)}]
        if earlier and kind == "function" and draw(st.integers(0, 3)) == 0:
            contract["input"] = {"X": f"${{{draw(st.sampled_from(earlier))}.output.fields.v}}"}
        if kind == "router" and later:
            targets = draw(st.lists(st.sampled_from(later), min_size=1, max_size=3, unique=True))
            routes = [{"when": _reads(draw, earlier), "target": t} for t in targets]
            if draw(st.booleans()):
                routes.append({"when": "default", "target": draw(st.sampled_from([None, *targets]))})
            nodes.append(node(node_id, {"kind": "router", "routes": routes}, contract=contract))
        elif kind == "gate":
            nodes.append(node(node_id, {"kind": "gate", "prompt": "ok?", "schema": {"kind": "text"}},
                              contract=contract))
        elif kind == "agent":
            nodes.append(node(node_id, {"kind": "agent", "instruction": "do it"}, contract=contract))
        elif kind == "check":
            nodes.append(fn(node_id, "true", kind="check", contract=contract))
        else:
            nodes.append(fn(node_id, "true", contract=contract, control={"optional": draw(st.booleans())}))
    edges = [(a, b, draw(st.sampled_from(["flow", "flow", "optional", "parallel"])))
             for i, a in enumerate(ids) for b in ids[i + 1:] if draw(st.integers(0, 2)) == 0]
    data = definition(nodes, input={"pick": draw(st.integers(0, 2))})
    data["edges"] = [{"id": f"{s}->{t}", "source": s, "target": t, "type": kind} for s, t, kind in edges]
    return data


def _change(draw: st.DrawFn, graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> ops.Change | None:
    """An operation the host or agent could apply now, or an arbitrary change of one node."""
    node_id = draw(st.sampled_from(graph.order))
    state = snapshot.nodes[node_id]
    output = NodeOutput(fields={"v": draw(st.integers(0, 2))})
    choice = draw(st.sampled_from(["start", "complete", "fail", "retry", "router", "park", "decide", "cancel",
                                   "restart", "arbitrary"]))
    try:
        if choice == "start" and state.status == "available":
            return ops.start_node(node_id)
        if choice == "complete" and state.status in ("running", "available"):
            return ops.complete_node(node_id, output, obtained_by="runtime", input_origins=None)
        if choice == "fail" and state.status in ("running", "available"):
            return ops.fail_node(graph, node_id, "boom")
        if choice == "retry":
            return ops.retry_node(snapshot, node_id)
        if choice == "router" and state.status == "available" and graph.routes.get(node_id):
            return ops.settle_router(graph, snapshot, node_id)
        if choice == "park" and state.status == "available":
            return ops.park(node_id, Approval(kind="gate", summary="ok?", schema={"kind": "text"}))
        if choice == "decide":
            return ops.apply_approval(graph, snapshot, node_id, draw(st.sampled_from(["approved", "rejected"])))
        if choice == "cancel" and draw(st.integers(0, 5)) == 0:
            return ops.cancel()
        if choice == "restart":
            return ops.cold_restart()
        if choice == "arbitrary":
            status = draw(st.sampled_from(["pending", "available", "running", "complete", "failed", "skipped"]))

            def arbitrary(snap: WorkflowSnapshot) -> None:
                changed = snap.nodes[node_id]
                changed.status, changed.output = status, output if status == "complete" else None
                changed.skip_reason = "optional" if status == "skipped" else None
            return arbitrary
    except TetherError:
        return None  # refused: changes nothing
    return None


def _reference(graph: WorkflowGraph, before: WorkflowSnapshot, change: ops.Change) -> WorkflowSnapshot:
    """``change`` applied to an independent copy of ``before``, then a full derive."""
    copy = WorkflowSnapshot.model_validate(before.model_dump(mode="json", by_alias=True))
    change(copy)
    derive(graph, copy)
    copy.mutations += 1
    return copy


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_incremental_derive_equals_a_full_derive(data: st.DataObject) -> None:
    graph = load_workflow(data.draw(workflows()))
    snapshot = new_snapshot(graph, "run")
    for _ in range(data.draw(st.integers(1, 30))):
        change = _change(data.draw, graph, snapshot)
        if change is None:
            continue
        try:
            expected = _reference(graph, snapshot, change)
        except TetherError:
            continue
        before = snapshot
        snapshot = mutate(graph, snapshot, change)
        dumped = before.model_dump(mode="json", by_alias=True)
        assert snapshot.model_dump(mode="json", by_alias=True) == expected.model_dump(mode="json", by_alias=True)
        changed = changed_nodes(snapshot)
        unchanged = [n for n in graph.order if changed is not None and n not in changed]
        assert all(snapshot.nodes[n] is before.nodes[n] for n in unchanged), "an unchanged node was copied"
        assert before.model_dump(mode="json", by_alias=True) == dumped, "the mutation modified its input"


def test_a_mutation_records_only_the_nodes_it_changed() -> None:
    data = definition([fn(f"n{i}") for i in range(6)], [(f"n{i}", f"n{i + 1}") for i in range(5)])
    graph = load_workflow(data)
    snapshot = new_snapshot(graph, "run")
    started = mutate(graph, snapshot, ops.start_node("n0"))
    assert changed_nodes(started) == {"n0"}
    done = mutate(graph, started, ops.complete_node("n0", NodeOutput(), obtained_by="runtime", input_origins=None))
    assert changed_nodes(done) == {"n0", "n1"}  # n1 became available; n2..n5 are untouched
    assert done.nodes["n1"].status == "available" and started.nodes["n1"].status == "pending"
    assert all(done.nodes[n] is snapshot.nodes[n] for n in ("n2", "n3", "n4", "n5"))
