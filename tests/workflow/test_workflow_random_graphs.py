"""Property test: random workflow DAGs of function, check, router and gate nodes always drain to a
consistent state (real processes for function and check nodes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from workflow_helpers import definition, fn, node

from tether.executors import SubprocessExecutor
from tether.workflow import WorkflowGraph, WorkflowSnapshot
from tether.workflow_host import WorkflowRun

KINDS = ("ok", "fail", "check", "router", "gate")


@st.composite
def workflows(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(min_value=1, max_value=8))
    ids = [f"n{i}" for i in range(size)]
    nodes: list[dict[str, Any]] = []
    for index, node_id in enumerate(ids):
        kind = draw(st.sampled_from(KINDS))
        later = ids[index + 1:]
        if kind == "router" and later:
            targets = draw(st.lists(st.sampled_from(later), min_size=1, max_size=3, unique=True))
            routes = [{"when": f"input.pick == {i}", "target": t} for i, t in enumerate(targets)]
            routes.append({"when": "default", "target": draw(st.sampled_from([None, *targets]))})
            nodes.append(node(node_id, {"kind": "router", "routes": routes}))
        elif kind == "gate":
            nodes.append(node(node_id, {"kind": "gate", "prompt": "ok?", "schema": {"kind": "text"}}))
        elif kind == "check":
            nodes.append(fn(node_id, draw(st.sampled_from(["true", "exit 1"])), kind="check",
                            run={"onFail": draw(st.sampled_from(["escalate", "fail"]))}))
        else:
            nodes.append(fn(node_id, "true" if kind != "fail" else "exit 1",
                            control={"optional": draw(st.booleans())}))
    edges = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if draw(st.booleans())]
    return definition(nodes, edges, input={"pick": draw(st.integers(min_value=0, max_value=3))})


def check_admission(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> None:
    """Checked on every mutation: nothing starts before its hard predecessors and routers settled."""
    for node_id, state in snapshot.nodes.items():
        if state.status in ("running", "awaiting_approval", "complete") or (
            state.status == "failed" and state.attempts
        ):
            assert all(snapshot.nodes[p].status in ("complete", "skipped") for p in graph.hard_preds[node_id]), node_id
            for owner in graph.route_owners.get(node_id, []):
                assert snapshot.nodes[owner].status in ("complete", "skipped"), (node_id, owner)


def check_invariants(run: WorkflowRun) -> None:
    snapshot, graph = run.snapshot, run.graph
    for node_id, state in snapshot.nodes.items():
        assert state.status != "running", node_id
        if state.status == "complete":
            assert all(snapshot.nodes[p].status in ("complete", "skipped") for p in graph.hard_preds[node_id])
            for owner in graph.route_owners.get(node_id, []):
                assert snapshot.nodes[owner].status in ("complete", "skipped")
        if state.skip_reason == "pruned":
            for owner in graph.route_owners.get(node_id, []):
                output = snapshot.nodes[owner].output
                assert output is None or node_id not in (output.selected or [])
        if state.status == "available":
            assert graph.nodes[node_id].run.kind == "router", node_id  # only an undecided router may wait
    settled = all(s.status in ("complete", "skipped") for s in snapshot.nodes.values())
    assert (snapshot.status == "complete") == settled


async def _drain_approving(data: dict[str, Any], workspace: Path) -> str:
    run = WorkflowRun(data, executor=SubprocessExecutor(grace=0.2), workspace=workspace)
    run.on_change = lambda snapshot: check_admission(run.graph, snapshot)
    for _ in range(20):  # approve whatever parks, until nothing does
        await run.drain()
        check_invariants(run)
        parked = [n for n, s in run.snapshot.nodes.items() if s.status == "awaiting_approval"]
        if not parked:
            break
        for node_id in parked:
            await run.apply_approval(node_id, "approved", feedback="accepted in the property test")
    return run.status


@settings(max_examples=40)
@given(data=workflows())
def test_random_workflows_drain_to_a_consistent_state(tmp_path_factory: Any, data: dict[str, Any]) -> None:
    status = asyncio.run(_drain_approving(data, tmp_path_factory.mktemp("ws")))
    assert status in ("complete", "failed", "blocked"), status
