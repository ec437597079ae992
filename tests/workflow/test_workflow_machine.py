"""The pure state machine: admission, routers (frontier waves, pruning), gates, guards, mutate."""

from __future__ import annotations

from typing import Any

import pytest
from workflow_helpers import definition, fn, node

from tether.errors import WorkflowExpressionError, WorkflowOperationError
from tether.workflow import Attempt, NodeOutput, WorkflowSnapshot, load_workflow, mutate, new_snapshot, ops
from tether.workflow_host import WorkflowRun


def router(node_id: str, *routes: tuple[str, str | None], **fields: Any) -> dict[str, Any]:
    return node(node_id, {"kind": "router", "routes": [{"when": w, "target": t} for w, t in routes]}, **fields)


def gate(node_id: str, **fields: Any) -> dict[str, Any]:
    return node(node_id, {"kind": "gate", "prompt": f"approve {node_id}?", "schema": {"kind": "text"}}, **fields)


def statuses(run: WorkflowRun) -> dict[str, str]:
    return {node_id: state.status for node_id, state in run.snapshot.nodes.items()}


async def drained(data: dict[str, Any], **options: Any) -> WorkflowRun:
    run = WorkflowRun(data, **options)
    await run.drain()
    return run


async def test_first_matching_route_wins_and_only_exclusive_losers_are_skipped() -> None:
    data = definition(
        [router("r", ("input.n > 5", "big"), ("input.n > 1", "mid"), ("default", "small")),
         fn("big"), fn("mid"), fn("small"), fn("big2"), fn("join")],
        [("r", "big"), ("r", "mid"), ("r", "small"), ("big", "big2"), ("big2", "join"), ("mid", "join")],
        input={"n": 3},
    )
    run = await drained(data)
    assert run.node("r").output is not None and run.node("r").output.selected == ["mid"]
    assert statuses(run) == {"r": "complete", "big": "skipped", "mid": "complete", "small": "skipped",
                             "big2": "skipped", "join": "complete"}
    assert run.node("big2").skip_reason == "pruned" and run.status == "complete"


async def test_a_default_with_a_null_target_selects_nothing() -> None:
    data = definition([router("r", ("input.go", "a"), ("default", None)), fn("a"), fn("b")],
                      [("r", "a"), ("r", "b")], input={"go": False})
    run = await drained(data)
    assert run.node("r").output.selected == []  # type: ignore[union-attr]
    assert statuses(run) == {"r": "complete", "a": "skipped", "b": "complete"}


async def test_route_targets_are_held_until_the_router_settles_even_without_edges() -> None:
    data = definition([fn("first"), router("r", ("first.status == 'complete' && input.go", "a"), ("default", "b")),
                       fn("a"), fn("b")], [("first", "r")], input={"go": True})
    graph = load_workflow(data)
    snapshot = new_snapshot(graph, "r1")
    assert snapshot.nodes["a"].status == "pending" and snapshot.nodes["a"].blocked_by == ["router:r"]
    run = await drained(data)
    assert statuses(run) == {"first": "complete", "r": "complete", "a": "complete", "b": "skipped"}


async def test_nested_routers_settle_in_later_waves() -> None:
    data = definition(
        [router("outer", ("input.kind == 'x'", "inner"), ("default", "other")),
         router("inner", ("input.level >= 2", "deep"), ("default", "shallow")),
         fn("deep"), fn("shallow"), fn("other")],
        [("outer", "inner"), ("outer", "other"), ("inner", "deep"), ("inner", "shallow")],
        input={"kind": "x", "level": 1},
    )
    run = await drained(data)
    assert statuses(run) == {"outer": "complete", "inner": "complete", "deep": "skipped", "shallow": "complete",
                             "other": "skipped"}
    data["input"] = {"kind": "y", "level": 5}
    run = await drained(data)
    assert statuses(run) == {"outer": "complete", "inner": "skipped", "deep": "skipped", "shallow": "skipped",
                             "other": "complete"}


async def test_a_router_made_losing_in_the_same_wave_never_completes() -> None:
    data = definition([router("a", ("true", "x"), ("default", "b")), router("b", ("true", "y"), ("default", None)),
                       fn("x"), fn("y")], [])
    run = await drained(data)
    assert statuses(run) == {"a": "complete", "b": "skipped", "x": "complete", "y": "skipped"}


async def test_optional_and_parallel_edges_do_not_prune() -> None:
    data = definition([router("r", ("false", "a"), ("default", None)), fn("a"), fn("soft")], [])
    data["edges"] = [{"id": "r-a", "source": "r", "target": "a", "type": "flow"},
                     {"id": "a-soft", "source": "a", "target": "soft", "type": "optional"}]
    run = await drained(data)
    assert statuses(run) == {"r": "complete", "a": "skipped", "soft": "complete"}


async def test_an_unmatched_router_does_not_starve_unrelated_work() -> None:
    data = definition([router("r", ("input.n > 10", "a")), fn("a"), fn("unrelated")], [("r", "a")], input={"n": 1})
    run = await drained(data)
    assert statuses(run) == {"r": "available", "a": "pending", "unrelated": "complete"}


async def test_a_route_waits_for_its_producer_and_is_decided_by_its_output() -> None:
    data = definition([fn("probe", "printf yes", capture="answer"),
                       router("r", ("probe.output.fields.answer == 'yes'", "a"), ("default", "b")), fn("a"), fn("b")],
                      [])
    run = await drained(data)
    assert statuses(run) == {"probe": "complete", "r": "complete", "a": "complete", "b": "skipped"}


async def test_a_non_boolean_route_fails_the_router_naming_it() -> None:
    run = await drained(definition([router("r", ("input.n", "a")), fn("a")], [], input={"n": 3}))
    assert run.node("r").status == "failed"
    assert "route 'input.n' of router 'r' must be true or false, got 3" in (run.node("r").error or "")


async def test_requires_guards_report_failed_conditions_apart_from_blockers() -> None:
    data = definition([fn("a"), fn("b", contract={"requires": [{"expr": "input.ready", "message": "not ready"}]})],
                      [("a", "b")], input={"ready": False})
    graph = load_workflow(data)
    snapshot = new_snapshot(graph, "r1")
    assert snapshot.nodes["b"].blocked_by == ["a"] and snapshot.nodes["b"].failed_conditions == []
    run = await drained(data)
    assert run.node("b").status == "pending" and run.node("b").failed_conditions == ["not ready"]
    assert run.node("b").blocked_by == [] and run.status == "blocked"


async def test_reading_a_skipped_producer_fails_the_consumer_naming_it() -> None:
    data = definition([router("r", ("false", "a"), ("default", None)),
                       fn("a", "printf x", capture="x"),
                       fn("use", contract={"input": {"X": "${a.output.fields.x}"}}),
                       fn("guarded", contract={"requires": [{"expr": "a.output.fields.x == 'x'"}]})],
                      [("r", "a")])
    run = await drained(data)
    assert run.node("a").status == "skipped"
    for consumer in ("use", "guarded"):
        assert run.node(consumer).status == "failed"
        assert "reads the output of node 'a', which was skipped" in (run.node(consumer).error or "")
    graph = load_workflow(data)
    with pytest.raises(WorkflowExpressionError) as info:
        graph.guards["guarded"][0][0].evaluate({"input": {}, "defaults": {}, "nodes": {
            n: {"status": "skipped" if n == "a" else "pending", "output": {"fields": {}}} for n in graph.order}})
    assert info.value.skipped_producer == "a"


async def test_a_run_whose_consumer_failed_on_a_skipped_producer_has_failed_not_running() -> None:
    data = definition([fn("a", "exit 1", control={"optional": True}),
                       fn("b", contract={"requires": [{"expr": "a.output.fields.x == 'x'"}]})], [("a", "b")])
    run = await drained(data)
    assert statuses(run) == {"a": "skipped", "b": "failed"}
    assert run.node("b").expression_error is not None  # kept as the reason it failed
    assert run.status == "failed"  # was "running": the kept error counted as work left for the host


async def test_an_optional_node_that_fails_is_skipped_and_releases_its_successors() -> None:
    data = definition([fn("flaky", "exit 1", control={"optional": True}), fn("next")], [("flaky", "next")])
    run = await drained(data)
    assert statuses(run) == {"flaky": "skipped", "next": "complete"}
    assert run.node("flaky").skip_reason == "optional" and run.node("flaky").attempts[-1].status == "failed"
    with pytest.raises(WorkflowOperationError) as info:
        await run.retry_node("flaky")
    assert info.value.code == "node-not-retryable"


async def test_gates_park_even_in_autonomous_mode_and_approval_completes_them() -> None:
    data = definition([gate("sign"), fn("ship")], [("sign", "ship")])
    run = await drained(data, autonomous=True)
    state = run.node("sign")
    assert state.status == "awaiting_approval" and run.status == "waiting"
    assert state.approval is not None and state.approval.summary == "approve sign?"
    assert state.approval.schema_ == {"kind": "text", "multiline": False}
    await run.apply_approval("sign", "approved", feedback="fine", decided_by="ana", response="ship it")
    await run.drain()
    assert statuses(run) == {"sign": "complete", "ship": "complete"}
    assert run.node("sign").output.fields == {"decision": "approved", "feedback": "fine",  # type: ignore[union-attr]
                                              "response": "ship it"}


async def test_a_rejected_gate_keeps_the_decision_and_allows_a_fresh_request() -> None:
    run = await drained(definition([gate("sign")], []))
    await run.apply_approval("sign", "rejected", feedback="missing notes", decided_by="ana")
    state = run.node("sign")
    assert state.status == "awaiting_approval"
    assert state.approval is not None and (state.approval.decision, state.approval.feedback) == (
        "rejected", "missing notes")
    with pytest.raises(WorkflowOperationError) as info:
        await run.apply_approval("sign", "approved", feedback="late")
    assert info.value.code == "no-pending-approval"
    await run.request_approval("sign", "notes added; approve?")
    assert run.node("sign").approval.request == 2  # type: ignore[union-attr]
    await run.apply_approval("sign", "approved", decided_by="bo")
    assert run.node("sign").status == "complete"
    assert [(a.request, a.decision) for a in run.node("sign").approvals] == [(1, "rejected"), (2, "approved")]


async def test_node_approval_mandatory_stops_in_autonomous_mode_optional_does_not() -> None:
    data = definition([fn("must", gate={"approval": "mandatory"}), fn("may", gate={"approval": "optional"})], [])
    run = await drained(data, autonomous=True)
    assert statuses(run) == {"must": "awaiting_approval", "may": "complete"}
    manual = await drained(data, autonomous=False)
    assert statuses(manual) == {"must": "awaiting_approval", "may": "awaiting_approval"}
    await manual.set_autonomous_mode(True)
    assert manual.snapshot.autonomous
    await manual.apply_approval("must", "approved")
    await manual.apply_approval("may", "rejected", feedback="no")
    assert statuses(manual) == {"must": "complete", "may": "failed"}


async def test_gate_responses_are_checked_against_the_schema() -> None:
    data = definition([node("pick", {"kind": "gate", "prompt": "which?",
                                     "schema": {"kind": "choice", "options": ["a", "b"]}})], [])
    run = await drained(data)
    with pytest.raises(WorkflowOperationError, match="'c' is not one of"):
        await run.apply_approval("pick", "approved", response="c")
    assert run.node("pick").status == "awaiting_approval"
    await run.apply_approval("pick", "approved", response="b")
    assert run.node("pick").output.fields["response"] == "b"  # type: ignore[union-attr]


def test_mutate_clones_derives_counts_and_calls_on_change_once() -> None:
    graph = load_workflow(definition([fn("a"), fn("b")], [("a", "b")]))
    before = new_snapshot(graph, "r1")
    seen: list[WorkflowSnapshot] = []
    after = mutate(graph, before, ops.start_node("a"), seen.append)
    assert len(seen) == 1 and seen[0] is after
    assert before.nodes["a"].status == "available" and before.mutations == 0  # untouched
    assert after.nodes["a"].status == "running" and after.nodes["a"].generation == 1 and after.mutations == 1
    assert after.status == "running"

    def boom(snapshot: WorkflowSnapshot) -> None:
        snapshot.nodes["a"].status = "complete"
        raise RuntimeError("change failed")

    with pytest.raises(RuntimeError):
        mutate(graph, after, boom, seen.append)
    assert after.nodes["a"].status == "running" and len(seen) == 1

    attempt = Attempt(generation=1, status="complete")
    done = mutate(graph, after, ops.complete_node("a", NodeOutput(fields={"x": 1}), obtained_by="runtime",
                                                  input_origins={}, attempt=attempt))
    assert done.nodes["a"].attempts == [attempt] and after.nodes["a"].attempts == []  # lists are not shared
    assert done.nodes["b"].status == "available" and after.nodes["b"].blocked_by == ["a"]


def test_unknown_run_input_is_refused() -> None:
    graph = load_workflow(definition([fn("a")], [], input={"tier": "max"}))
    with pytest.raises(WorkflowExpressionError, match="declares no input 'teir'"):
        new_snapshot(graph, "r1", {"teir": "min"})


async def test_apply_input_answers_a_pending_input_request() -> None:
    run = WorkflowRun(definition([fn("a")], []))
    await run.apply(ops.start_node("a"))
    await run.apply(ops.request_input(run.snapshot, "a", "Which region?", {"kind": "choice", "options": ["eu"]}))
    assert run.node("a").status == "awaiting_input" and run.status == "waiting"
    await run.apply_input("a", "eu", provided_by="ana")
    assert run.node("a").status == "running"
    assert run.node("a").input_request.response == "eu"  # type: ignore[union-attr]
    with pytest.raises(WorkflowOperationError):
        await run.apply_input("a", "us")


async def test_a_skipped_router_admits_every_branch() -> None:
    data = definition([router("r", ("input.n", "a"), control={"optional": True}), fn("a"), fn("b")],
                      [("r", "a"), ("r", "b")], input={"n": 1})
    run = await drained(data)
    assert run.node("r").status == "skipped" and run.node("r").skip_reason == "optional"
    assert statuses(run) == {"r": "skipped", "a": "complete", "b": "complete"}


async def test_parallel_and_optional_edges_never_block() -> None:
    data = definition([fn("a", "exit 1"), fn("b"), fn("c")])
    data["edges"] = [{"id": "ab", "source": "a", "target": "b", "type": "parallel"},
                     {"id": "ac", "source": "a", "target": "c", "type": "optional"}]
    run = await drained(data)
    assert statuses(run) == {"a": "failed", "b": "complete", "c": "complete"} and run.status == "failed"


async def test_agent_work_is_left_available_for_the_agent_runtime() -> None:
    data = definition([fn("prep"), node("write", {"kind": "agent", "instruction": "Write the notes"}), fn("after")],
                      [("prep", "write"), ("write", "after")])
    run = await drained(data)
    assert statuses(run) == {"prep": "complete", "write": "available", "after": "pending"}
    assert run.status == "waiting"
