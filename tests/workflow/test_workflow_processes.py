"""Function and check nodes on the real process executor, and inline sub-flows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from workflow_helpers import definition, fn, node

from tether.errors import WorkflowDefinitionError, WorkflowOperationError
from tether.executors import SubprocessExecutor
from tether.workflow_host import MAX_SUBFLOW_DEPTH, WorkflowRun

PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)), end='')"


def check(node_id: str, command: str, **fields: Any) -> dict[str, Any]:
    return fn(node_id, command, kind="check", **fields)


def gate(node_id: str) -> dict[str, Any]:
    return node(node_id, {"kind": "gate", "prompt": f"{node_id}?", "schema": {"kind": "text"}})


async def drained(data: dict[str, Any], executor: SubprocessExecutor, workspace: Path, **options: Any) -> WorkflowRun:
    run = WorkflowRun(data, executor=executor, workspace=workspace, **options)
    await run.drain()
    return run


async def test_bindings_become_env_captures_become_fields_and_origins_stay_on_the_request(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    data = definition([
        fn("env", PRINT_ENV, capture="env", run={"runtime": "python"},
           contract={"input": {"TIER": "${input.tier}", "COUNT": 3, "LABEL": "tier=${input.tier}"}}),
    ], [], input={"tier": "max"})
    run = await drained(data, executor, workspace)
    state = run.node("env")
    assert state.status == "complete"
    env = json.loads(str(state.output.fields["env"]))  # type: ignore[union-attr]
    assert (env["TIER"], env["COUNT"], env["LABEL"]) == ("max", "3", "tier=max")
    assert not any("origin" in key.lower() or "flow-input" in value for key, value in env.items())
    assert state.input_origins is not None
    assert state.input_origins["TIER"][0].kind == "flow-input" and state.input_origins["COUNT"][0].kind == "literal"
    assert state.obtained_by == "runtime" and len(state.attempts) == 1


async def test_the_parent_environment_is_an_allow_list_plus_declared_names(
    executor: SubprocessExecutor, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://prod")
    monkeypatch.setenv("SENTRY_DSN", "https://k@sentry")
    data = definition([fn("plain", PRINT_ENV, capture="env", run={"runtime": "python"}),
                       fn("declared", PRINT_ENV, capture="env", run={"runtime": "python", "env": ["DATABASE_URL"]})])
    run = await drained(data, executor, workspace)
    plain = json.loads(str(run.node("plain").output.fields["env"]))  # type: ignore[union-attr]
    declared = json.loads(str(run.node("declared").output.fields["env"]))  # type: ignore[union-attr]
    assert "DATABASE_URL" not in plain and "SENTRY_DSN" not in plain and "PATH" in plain
    assert declared["DATABASE_URL"] == "postgres://prod" and "SENTRY_DSN" not in declared


async def test_retries_run_one_after_another_until_a_pass(executor: SubprocessExecutor, workspace: Path) -> None:
    script = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; [ $n -ge 3 ]"
    run = await drained(definition([fn("flaky", script, control={"retries": 3})]), executor, workspace)
    state = run.node("flaky")
    assert state.status == "complete"
    assert [a.status for a in state.attempts] == ["failed", "failed", "complete"]
    assert (workspace / "count").read_text().strip() == "3"


async def test_a_timeout_fails_the_node_after_its_retries(executor: SubprocessExecutor, workspace: Path) -> None:
    data = definition([fn("slow", "sleep 30", control={"timeoutSec": 0.2, "retries": 1})])
    run = await drained(data, executor, workspace)
    state = run.node("slow")
    assert state.status == "failed" and "timed out" in (state.error or "")
    assert [a.timed_out for a in state.attempts] == [True, True]


async def test_a_passing_check_completes_dark_with_verified_flow_local_evidence(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    data = definition([check("ok", 'test "$TIER" = max', contract={"input": {"TIER": "${input.tier}"}})],
                      input={"tier": "max"})
    run = await drained(data, executor, workspace)
    state = run.node("ok")
    assert state.status == "complete" and state.approval is None
    verdict = state.attempts[-1].verdict
    assert verdict is not None and verdict["passed"] is True
    assert (verdict["provenance"], verdict["inputs"]) == ("verified", "flow-local")


async def test_a_failed_check_escalates_naming_the_check_exit_status_and_provenance(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    data = definition([check("lint", "exit 3", contract={"input": {"TIER": "${input.tier}"}}), fn("after")],
                      [("lint", "after")], input={"tier": "max"})
    run = await drained(data, executor, workspace, autonomous=True)
    state = run.node("lint")
    assert state.status == "awaiting_approval" and run.node("after").status == "pending"
    approval = state.approval
    assert approval is not None and approval.kind == "check"
    assert approval.check == {"node": "lint", "exit_code": 3, "provenance": "verified", "inputs": "flow-local"}
    assert approval.summary == "check 'lint' failed with exit status 3, provenance verified"

    with pytest.raises(WorkflowOperationError) as info:
        await run.apply_approval("lint", "approved", feedback="  ")
    assert info.value.code == "override-needs-feedback"
    await run.apply_approval("lint", "approved", feedback="known flaky linter", decided_by="ana")
    await run.drain()
    state = run.node("lint")
    assert state.status == "complete" and state.error is None and run.node("after").status == "complete"
    assert state.attempts[-1].verdict["passed"] is False  # type: ignore[index]
    assert state.error_history == ["check 'lint' failed: exit status 3 (success: [0])"]


async def test_an_override_is_refused_when_the_output_contract_is_not_met(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    contract = {"output": {"fields": {"type": "object", "required": ["score"],
                                      "properties": {"score": {"type": "string", "pattern": "^[0-9]+$"}}}}}
    data = definition([check("score", "printf bad; exit 1", capture="score", contract=contract),
                       fn("report", contract={"input": {"SCORE": "${score.output.fields.score}"}})],
                      [("score", "report")])
    run = await drained(data, executor, workspace)
    with pytest.raises(WorkflowOperationError) as info:
        await run.apply_approval("score", "approved", feedback="ship anyway")
    assert info.value.code == "override-output-contract"
    assert run.node("score").status == "awaiting_approval"
    await run.apply_approval("score", "rejected", feedback="no")
    assert run.node("score").status == "failed"
    with pytest.raises(WorkflowOperationError) as refused:  # seed 001: a rejected escalation has no way back
        await run.retry_node("score")
    assert refused.value.code == "node-not-retryable"
    assert run.node("score").status == "failed"


async def test_on_fail_fail_fails_the_check_without_an_approval(executor: SubprocessExecutor, workspace: Path) -> None:
    run = await drained(definition([check("gate", "exit 2", run={"onFail": "fail"})]), executor, workspace)
    state = run.node("gate")
    assert state.status == "failed" and state.approval is None
    assert state.attempts[-1].verdict["passed"] is False  # type: ignore[index]
    assert run.status == "failed"


async def test_spawn_failures_and_timeouts_never_escalate(executor: SubprocessExecutor, workspace: Path) -> None:
    data = definition([check("nowhere", "true", run={"cwd": "missing-dir"}),
                       check("slow", "sleep 30", control={"timeoutSec": 0.2})])
    run = await drained(data, executor, workspace)
    for node_id in ("nowhere", "slow"):
        state = run.node(node_id)
        assert state.status == "failed" and state.approval is None
        assert state.attempts[-1].verdict is None
    assert run.node("nowhere").attempts[-1].spawn_failed
    assert "does not exist" in (run.node("nowhere").error or "")


async def test_a_function_output_breaking_its_consumed_contract_fails(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    digits = {"type": "string", "pattern": "^[0-9]+$"}
    contract = {"output": {"fields": {"type": "object", "properties": {"n": digits}}}}
    data = definition([fn("count", "printf many", capture="n", contract=contract),
                       fn("use", contract={"input": {"N": "${count.output.fields.n}"}})], [("count", "use")])
    run = await drained(data, executor, workspace)
    assert run.node("count").status == "failed"
    assert "does not match the declared contract at n" in (run.node("count").error or "")
    assert run.node("count").attempts[-1].fields == {"n": "many"}  # diagnostics kept


async def test_provenance_through_a_passthrough_function_stays_asserted(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    data = definition([
        gate("ask"),
        fn("relay", 'printf "%s" "$ANSWER"', capture="value",
           contract={"input": {"ANSWER": "${ask.output.fields.response}"}}),
        check("verify", 'test "$VALUE" = 42', contract={"input": {"VALUE": "${relay.output.fields.value}"}}),
        fn("local", "printf 42", capture="value"),
        check("verify_local", 'test "$VALUE" = 42', contract={"input": {"VALUE": "${local.output.fields.value}"}}),
    ], [("ask", "relay"), ("relay", "verify"), ("local", "verify_local")])
    run = await drained(data, executor, workspace)
    await run.apply_approval("ask", "approved", response="42")
    await run.drain()
    assert run.node("verify").status == "complete" and run.node("verify_local").status == "complete"
    assert run.node("verify").attempts[-1].verdict["provenance"] == "asserted"  # type: ignore[index]
    assert run.node("verify_local").attempts[-1].verdict["provenance"] == "verified"  # type: ignore[index]
    assert run.node("verify_local").attempts[-1].verdict["inputs"] == "live"  # type: ignore[index]


async def test_a_snapshot_without_origins_reads_as_asserted(executor: SubprocessExecutor, workspace: Path) -> None:
    data = definition([fn("local", "printf 42", capture="value"),
                       check("verify", 'test "$VALUE" = 42',
                             contract={"input": {"VALUE": "${local.output.fields.value}"}})],
                      [("local", "verify")])
    first = await drained(definition(data["nodes"][:1]), executor, workspace)
    legacy = first.snapshot.model_dump(mode="json", by_alias=True)
    legacy["nodes"]["local"].pop("obtained_by")
    legacy["nodes"]["local"].pop("input_origins")
    legacy["nodes"]["verify"] = {"status": "pending"}  # written before that node's fields existed
    del legacy["workflow_digest"]  # and before runs were pinned to their definition
    run = WorkflowRun(data, executor=executor, workspace=workspace)
    await run.hydrate(legacy)
    await run.drain()
    assert run.node("verify").attempts[-1].verdict["provenance"] == "asserted"  # type: ignore[index]


async def test_cancel_aborts_the_running_attempt_and_discards_its_result(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    run = WorkflowRun(definition([fn("long", "sleep 30"), fn("next")], [("long", "next")]), executor=executor,
                      workspace=workspace)
    draining = asyncio.create_task(run.drain())
    while run.node("long").status != "running":
        await asyncio.sleep(0.01)
    await run.cancel()
    await asyncio.wait_for(draining, 10)
    state = run.node("long")
    assert run.status == "cancelled" and state.status == "failed" and state.error == "run cancelled"
    assert state.generation == 2 and state.attempts == []  # the stale attempt was discarded
    with pytest.raises(WorkflowOperationError) as info:
        await run.retry_node("long")
    assert info.value.code == "run-cancelled"


CHILD = definition([fn("inner", 'printf "%s-%s" "$TIER" "$EXTRA"', capture="out",
                       contract={"input": {"TIER": "${input.tier}", "EXTRA": "${input.extra}"}})],
                   input={"tier": "none", "extra": ""}, output={"result": "${inner.output.fields.out}"})
CHILD["id"] = "child"


def parent(**run: Any) -> dict[str, Any]:
    data = definition([node("sub", {"kind": "sub-flow", "flow": "child", **run}, contract={"input": {"extra": "x"}}),
                       fn("after", 'test "$R" = max-x', contract={"input": {"R": "${sub.output.fields.result}"}})],
                      [("sub", "after")], input={"tier": "max", "other": 1})
    data["id"] = "parent"
    return data


async def test_a_sub_flow_runs_inline_with_pass_context(executor: SubprocessExecutor, workspace: Path) -> None:
    run = await drained(parent(passContext=True), executor, workspace, resolve={"child": CHILD})
    assert run.node("sub").status == "complete" and run.node("after").status == "complete"
    assert run.node("sub").output.fields == {"result": "max-x"}  # type: ignore[union-attr]
    without = await drained(parent(), executor, workspace, resolve={"child": CHILD})
    assert without.node("sub").output.fields == {"result": "none-x"}  # type: ignore[union-attr]
    assert without.node("after").status == "failed"


async def test_a_child_gate_is_projected_onto_the_parent_node(executor: SubprocessExecutor, workspace: Path) -> None:
    child = definition([gate("approve"), fn("done", "printf ok", capture="v")], [("approve", "done")],
                       output={"v": "${done.output.fields.v}"})
    child["id"] = "child"
    data = definition([node("sub", {"kind": "sub-flow", "flow": "child"})])
    run = await drained(data, executor, workspace, resolve={"child": child}, autonomous=True)
    state = run.node("sub")
    assert state.status == "awaiting_approval" and state.approval is not None
    assert (state.approval.kind, state.approval.child_node, state.approval.summary) == ("sub-flow", "approve",
                                                                                       "approve?")
    await run.apply_approval("sub", "approved", decided_by="ana")
    assert run.node("sub").status == "complete" and run.node("sub").output.fields == {"v": "ok"}  # type: ignore[union-attr]


def test_sub_flow_cycles_and_unknown_flows_are_refused_when_the_run_is_registered() -> None:
    a = definition([fn("first"), node("to_b", {"kind": "sub-flow", "flow": "b"})])
    a["id"] = "a"
    b = definition([node("to_c", {"kind": "sub-flow", "flow": "c"})])
    b["id"] = "b"
    c = definition([node("to_a", {"kind": "sub-flow", "flow": "a"}), node("to_x", {"kind": "sub-flow", "flow": "x"})])
    c["id"] = "c"
    with pytest.raises(WorkflowDefinitionError) as raised:
        WorkflowRun(a, resolve={"a": a, "b": b, "c": c})
    found = [(i.code, i.flow, i.node, i.path, i.message) for i in raised.value.issues]
    assert found == [
        ("subflow-cycle", "c", "to_a", "nodes.0.run.flow", "sub-flow cycle: a -> b -> c -> a"),
        ("unknown-subflow", "c", "to_x", "nodes.1.run.flow", "sub-flow 'x': no such workflow"),
    ]
    with pytest.raises(WorkflowDefinitionError, match="sub-flow 'b': no such workflow"):
        WorkflowRun(a, resolve={})
    broken = definition([node("oops", {"kind": "gate", "prompt": "p", "schema": {"kind": "choice", "options": []}})])
    broken["id"] = "b"
    with pytest.raises(WorkflowDefinitionError, match=r"sub-flow 'b' is invalid: .*nodes\.0\.run\.schema\.options"):
        WorkflowRun(a, resolve={"b": broken})


async def test_the_run_time_ancestry_check_still_stops_a_cycle(executor: SubprocessExecutor,
                                                               workspace: Path) -> None:
    """A resolver whose answers change after registration still cannot make a run loop."""
    a = definition([node("to_b", {"kind": "sub-flow", "flow": "b"})])
    a["id"] = "a"
    b_ok = definition([fn("leaf")])
    b_ok["id"] = "b"
    b_loop = definition([node("to_a", {"kind": "sub-flow", "flow": "a"})])
    b_loop["id"] = "b"
    flows = {"a": a, "b": b_ok}
    run = WorkflowRun(a, executor=executor, workspace=workspace, resolve=lambda flow: flows[flow])
    flows["b"] = b_loop
    await run.drain()
    assert run.node("to_b").status == "failed"
    assert "sub-flow cycle: a -> b -> a" in (run.node("to_b").error or "")


def chain(depth: int) -> dict[str, dict[str, Any]]:
    flows = {}
    for level in range(depth):
        last = level == depth - 1
        data = definition([fn("leaf")] if last else [node("down", {"kind": "sub-flow", "flow": f"w{level + 1}"})])
        data["id"] = f"w{level}"
        flows[data["id"]] = data
    return flows


async def test_sub_flows_nest_at_most_sixteen_deep(executor: SubprocessExecutor, workspace: Path) -> None:
    ok = chain(MAX_SUBFLOW_DEPTH)
    run = await drained(ok["w0"], executor, workspace, resolve=ok)
    assert run.status == "complete"
    deep = chain(MAX_SUBFLOW_DEPTH + 1)
    with pytest.raises(WorkflowDefinitionError, match="sub-flows nest deeper than 16 workflows") as raised:
        WorkflowRun(deep["w0"], executor=executor, workspace=workspace, resolve=deep)
    assert [issue.code for issue in raised.value.issues] == ["subflow-too-deep"]


async def test_a_live_hydrate_discards_the_running_attempt_and_reruns_it(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    once = f"if [ -e {workspace}/ran ]; then printf second; exit 0; fi; touch {workspace}/ran; exec sleep 30"
    run = WorkflowRun(definition([fn("job", once, capture="out")]), executor=executor, workspace=workspace)
    before = run.snapshot
    draining = asyncio.create_task(run.drain())
    while not (workspace / "ran").exists():  # the first attempt is live
        await asyncio.sleep(0.01)
    await run.hydrate(before)  # e.g. the host reloaded the stored state
    await asyncio.wait_for(draining, 10)
    state = run.node("job")
    assert state.status == "complete" and state.output.fields == {"out": "second"}  # type: ignore[union-attr]
    assert [a.generation for a in state.attempts] == [state.generation] and state.generation == 3


def meet(name: str, other: str, workspace: Path) -> str:
    """A command that succeeds only if ``other`` starts while it runs (no timing assertion: a
    sequential drain makes the first one fail after its wait runs out)."""
    return (f"touch {workspace}/{name}.started; i=0; while [ ! -e {workspace}/{other}.started ]; do "
            f"i=$((i+1)); [ $i -gt 400 ] && exit 1; sleep 0.05; done")


async def test_a_parallel_group_runs_its_available_members_together(executor: SubprocessExecutor,
                                                                    workspace: Path) -> None:
    group = {"control": {"parallelGroup": "build"}}
    data = definition([fn("left", meet("left", "right", workspace), **group),
                       fn("right", meet("right", "left", workspace), **group),
                       fn("after")], [("left", "after"), ("right", "after")])
    run = await drained(data, executor, workspace)
    assert {n: s.status for n, s in run.snapshot.nodes.items()} == {"left": "complete", "right": "complete",
                                                                    "after": "complete"}


async def test_nodes_outside_a_group_never_overlap(executor: SubprocessExecutor, workspace: Path) -> None:
    alone = f"[ ! -e {workspace}/busy ] && touch {workspace}/busy && sleep 0.2 && rm {workspace}/busy"
    data = definition([fn("one", alone), fn("two", alone), fn("three", alone, control={"parallelGroup": "g"})])
    run = await drained(data, executor, workspace)
    assert run.status == "complete"
