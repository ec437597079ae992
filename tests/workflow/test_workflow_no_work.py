"""A run with nothing it can run never looks busy.

Seed 001: a router with no matching route and no ``default`` stays unsettled ("a valid unmatched
router does not starve unrelated work"), and a node whose route, binding or instruction reads a
producer that has not completed waits for it ("missing declared runtime output waits for its
producer"). Neither is work the runtime can do: the run's status says what is left (the agent's
work ``waiting``, a failed node ``failed``, nothing at all ``blocked``), never ``running``, and
the node says why it does not move (``failed_conditions`` / ``blocked_by``).
"""

from __future__ import annotations

from typing import Any

from workflow_helpers import definition, fn, node

from tether.workflow import load_workflow, new_snapshot, ops
from tether.workflow_host import WorkflowRun


def router(node_id: str, *routes: tuple[str, str | None], **fields: Any) -> dict[str, Any]:
    return node(node_id, {"kind": "router", "routes": [{"when": w, "target": t} for w, t in routes]}, **fields)


def agent(node_id: str) -> dict[str, Any]:
    return node(node_id, {"kind": "agent", "instruction": f"do {node_id}"})


async def drained(data: dict[str, Any]) -> WorkflowRun:
    run = WorkflowRun(data)
    await run.drain()
    return run


async def test_an_unmatched_router_with_nothing_else_to_run_blocks_the_run_and_says_why() -> None:
    data = definition([router("r", ("input.tier == 'max'", "a"), ("input.n > 10", "b")), fn("a"), fn("b")],
                      [("r", "a"), ("r", "b")], input={"tier": "min", "n": 1})
    run = await drained(data)
    assert run.status == "blocked"
    state = run.node("r")
    assert state.status == "available"  # unsettled, as the seed says: it is not failed
    assert state.failed_conditions == [
        "router 'r' matched no route and has no default: input.tier == 'max' and input.n > 10 are false "
        '(input = {"n": 1, "tier": "min"})']
    assert ops.run_ended(run.snapshot) and ops.retryable(run.snapshot) == []
    assert run.node("a").status == run.node("b").status == "pending"  # held: never selected


async def test_the_unmatched_reason_names_the_node_outputs_the_routes_read() -> None:
    data = definition([fn("probe", "printf no", capture="answer"),
                       router("r", ("probe.output.fields.answer == 'yes'", "a")), fn("a")], [("r", "a")])
    run = await drained(data)
    assert run.status == "blocked"
    assert run.node("r").failed_conditions == [
        "router 'r' matched no route and has no default: probe.output.fields.answer == 'yes' is false "
        '(probe.output.fields = {"answer": "no"})']


async def test_an_unmatched_router_is_not_agent_work() -> None:
    data = definition([router("r", ("input.n > 10", "a")), fn("a"), agent("write")], [("r", "a")], input={"n": 1})
    run = await drained(data)
    assert run.status == "waiting"  # the agent's turn is what is left, not the router
    assert run.node("r").status == "available" and run.node("r").failed_conditions


async def test_a_route_waiting_for_a_failed_producer_leaves_the_run_failed_not_running() -> None:
    data = definition([fn("probe", "false"), router("r", ("probe.output.fields.x == 'y'", "a"), ("default", None)),
                       fn("a")], [])
    run = await drained(data)
    assert run.status == "failed" and ops.retryable(run.snapshot) == ["probe"]
    assert run.node("r").status == "available" and run.node("r").blocked_by == ["probe"]


async def test_a_binding_waiting_for_a_producer_that_can_never_run_blocks_the_run() -> None:
    data = definition([fn("never", contract={"requires": [{"expr": "input.go", "message": "go is off"}]}),
                       fn("use", "true", contract={"input": {"x": "${never.output.summary}"}})],
                      [], input={"go": False})
    run = await drained(data)
    assert run.status == "blocked"  # was "running" for ever
    assert run.node("use").status == "available" and run.node("use").blocked_by == ["never"]


async def test_a_binding_waiting_for_a_failed_producer_leaves_the_run_failed() -> None:
    data = definition([fn("bad", "false"), fn("use", "true", contract={"input": {"x": "${bad.output.summary}"}})])
    run = await drained(data)
    assert run.status == "failed" and run.node("use").blocked_by == ["bad"]


def test_a_router_that_can_decide_is_runtime_work_until_it_settles() -> None:
    graph = load_workflow(definition([router("r", ("input.n > 10", "a"), ("default", None)), fn("a")],
                                     input={"n": 1}))
    snapshot = new_snapshot(graph, "r1")
    assert snapshot.status == "running" and snapshot.nodes["r"].failed_conditions == []


async def test_a_sub_flow_whose_child_matches_no_route_fails_its_node_saying_why() -> None:
    child = definition([router("r", ("input.n > 10", "a")), fn("a")], [("r", "a")], input={"n": 1})
    child["id"] = "child"
    parent = definition([node("sub", {"kind": "sub-flow", "flow": "child"})])
    run = WorkflowRun(parent, resolve={"child": child})
    await run.drain()
    assert run.status == "failed"
    assert run.node("sub").error == (
        "sub-flow 'child' ended blocked without completing (r: router 'r' matched no route and has no default: "
        'input.n > 10 is false (input = {"n": 1}))')
