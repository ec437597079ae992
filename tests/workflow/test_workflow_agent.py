"""Agent nodes and the agent's flow tools, driven by a scripted model: every tool and its
refusals, the corrective re-prompt, the mandatory-approval refusal, the stimulus sequence, the
turn budget, serialized turns and the journal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from workflow_helpers import definition, fn, node

from tether.errors import ModelError, WorkflowOperationError
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.stores import MemoryStore
from tether.testing import FunctionModel, ScriptedModel
from tether.workflow import ops
from tether.workflow._agent import HANDOFF_FIELD_CAP, HANDOFF_VALUE_CAP
from tether.workflow_host import WorkflowRun
from tether.workflow_host._agent import FLOW_TOOLS

NAME = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}


def agent(node_id: str, instruction: str = "do the work", *, fields: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    contract = dict(extra.pop("contract", {}))
    if fields is not None:
        contract["output"] = {"fields": fields}
    return node(node_id, {"kind": "agent", "instruction": instruction}, contract=contract, **extra)


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id=f"call-{name}", name=name, arguments=arguments),),
                         finish_reason="tool_calls")


async def turn(data: dict[str, Any], *replies: Any, run: WorkflowRun | None = None, **options: Any
               ) -> tuple[WorkflowRun, ScriptedModel, list[dict[str, Any]]]:
    """One agent turn with ``replies`` (tool calls, then a closing text unless a call ends the turn)."""
    model = ScriptedModel(agent=list(replies))
    if run is None:
        run = WorkflowRun(data, model=model, **options)
    else:
        run.models = type(run.models)(default=model)
        run._models.clear()
    report = await run.agent.turn()
    return run, model, [result for _, _, result in report.calls]


def test_the_model_is_offered_exactly_the_flow_tools() -> None:
    names = [tool.name for tool in FLOW_TOOLS]
    assert names == ["get_state", "get_globals", "get_available", "validate_node", "build_handoff", "start_node",
                     "complete_node", "skip_node", "fail_node", "request_approval", "request_input"]
    for tool in FLOW_TOOLS:
        assert tool.parameters["type"] == "object" and tool.parameters["additionalProperties"] is False
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])


async def test_start_and_complete_a_node_with_validated_fields() -> None:
    data = definition([agent("ask", fields=NAME), fn("after")], [("ask", "after")])
    run, model, got = await turn(data, call("start_node", node_id="ask"),
                                 call("complete_node", node_id="ask", summary="named", fields={"name": "Ana"}), "done")
    assert [r["ok"] for r in got] == [True, True]
    state = run.node("ask")
    assert state.status == "complete" and state.obtained_by == "agent"
    assert state.output is not None and (state.output.fields, state.output.summary) == ({"name": "Ana"}, "named")
    assert run.node("after").status == "complete" and run.status == "complete"  # drained inside the turn
    request = model.calls[0].request
    offered = [t.name for t in FLOW_TOOLS if t.name != "skip_node"]  # no optional agent node to skip here
    assert request.call == "agent" and [t.name for t in request.tools] == offered
    assert json.loads(request.messages[0].content)["ready_agent_nodes"] == ["ask"]


async def test_writes_are_refused_with_reasons_and_change_nothing() -> None:
    data = definition([agent("ask"), agent("later"), node("sign", {"kind": "gate", "prompt": "ok?",
                                                                    "schema": {"kind": "text"}}), fn("job"),
                       agent("maybe", control={"optional": True})],
                      [("ask", "later")])
    run = WorkflowRun(data)
    await run.drain()
    before = run.snapshot
    run, _, got = await turn(data, call("start_node", node_id="nope"), call("start_node", node_id="sign"),
                             call("start_node", node_id="later"), call("complete_node", node_id="ask", summary="x"),
                             call("skip_node", node_id="ask"), call("fail_node", node_id="ask", message="m",
                                                                    recoverable=False),
                             call("request_input", node_id="ask", prompt="name?"), call("launch_rockets"), "done",
                             run=run)
    assert [(r["ok"], r["code"]) for r in got] == [
        (False, "unknown-node"), (False, "not-an-agent-node"), (False, "wrong-status"), (False, "wrong-status"),
        (False, "not-optional"), (False, "wrong-status"), (False, "wrong-status"), (False, "unknown-tool")]
    assert "node 'sign' is a gate node" in got[1]["error"] and "'later' is pending" in got[2]["error"]
    assert {n: s.status for n, s in run.snapshot.nodes.items()} == {n: s.status for n, s in before.nodes.items()}


async def test_one_corrective_reprompt_then_failure() -> None:
    data = definition([agent("ask", fields=NAME)])
    run, _, got = await turn(data, call("start_node", node_id="ask"),
                             call("complete_node", node_id="ask", summary="x", fields={"name": ""}),
                             call("build_handoff", node_id="ask"),
                             call("complete_node", node_id="ask", summary="x", fields={"nom": "Ana"}), "gave up")
    correction = got[1]
    assert correction["ok"] is False and correction["code"] == "output-contract"
    assert "output does not match its contract at name" in correction["correction"]
    assert "call complete_node again (this is the one correction)" in correction["correction"]
    assert "output does not match its contract at name" in got[2]["correction"]  # the handoff shows it
    assert got[3]["ok"] is False and got[3]["status"] == "failed"
    state = run.node("ask")
    assert state.status == "failed" and state.corrections == 1 and "after one correction" in (state.error or "")

    fixed, _, got = await turn(data, call("start_node", node_id="ask"),
                               call("complete_node", node_id="ask", summary="x", fields="Ana"),
                               call("complete_node", node_id="ask", summary="x", fields={"name": "Ana"}), "ok")
    assert "fields must be a JSON object" in got[1]["correction"]
    assert fixed.node("ask").status == "complete" and fixed.node("ask").output.fields == {"name": "Ana"}  # type: ignore[union-attr]


async def test_the_agent_cannot_complete_a_mandatory_approval_node() -> None:
    data = definition([agent("release", fields=NAME, gate={"approval": "mandatory"})])
    run, _, got = await turn(data, call("start_node", node_id="release"),
                             call("complete_node", node_id="release", summary="done", fields={"name": "v2"}),
                             call("request_approval", node_id="release", summary="ship v2?", fields={"name": "v2"}),
                             autonomous=True)
    assert got[1]["ok"] is False and got[1]["code"] == "approval-required"
    assert "mandatory approval gate: the agent cannot complete it" in got[1]["error"]
    assert got[2]["ok"] is True and run.node("release").status == "awaiting_approval"
    with pytest.raises(WorkflowOperationError):  # the agent's own tools cannot approve either
        await run.apply(ops.request_approval(run.snapshot, "release"))
    await run.apply_approval("release", "rejected", feedback="bump the version", decided_by="ana")
    assert run.node("release").status == "running"
    assert run.snapshot.stimuli[-1] == {"type": "approval_received", "node": "release", "decision": "rejected",
                                        "feedback": "bump the version", "decided_by": "ana"}
    run, model, got = await turn(data, call("build_handoff", node_id="release"),
                                 call("request_approval", node_id="release", summary="ship v3?",
                                      fields={"name": "v3"}), run=run)
    assert json.loads(model.calls[0].request.messages[0].content)["stimuli"][0]["decision"] == "rejected"
    assert got[0]["rejected"] == {"feedback": "bump the version", "decided_by": "ana"}
    assert run.node("release").approval.request == 2 and run.snapshot.stimuli == []  # type: ignore[union-attr]
    await run.apply_approval("release", "approved", decided_by="ana")
    state = run.node("release")
    assert state.status == "complete" and state.output.fields == {"name": "v3"}  # type: ignore[union-attr]


async def test_skip_only_optional_nodes_and_fail_recoverably_within_retries() -> None:
    data = definition([agent("extra", control={"optional": True}), agent("work", control={"retries": 1}),
                       agent("final")])
    run, _, got = await turn(data, call("skip_node", node_id="extra", reason="not needed"),
                             call("start_node", node_id="work"),
                             call("fail_node", node_id="work", message="flaky api", recoverable=True),
                             call("start_node", node_id="work"),
                             call("fail_node", node_id="work", message="flaky again", recoverable=True),
                             call("start_node", node_id="final"),
                             call("fail_node", node_id="final", message="impossible", recoverable=False), "stop")
    assert all(r["ok"] for r in got)
    assert run.node("extra").status == "skipped" and run.node("extra").skip_reason == "agent"
    assert got[2]["status"] == "available"  # the one retry
    work = run.node("work")
    assert work.status == "failed" and [a.status for a in work.attempts] == ["failed", "failed"]
    assert work.error == "node 'work': flaky again"
    assert run.node("final").status == "failed"


async def test_request_input_is_typed_and_the_answer_is_coerced_or_refused() -> None:
    form = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]}
    data = definition([agent("ask")])
    run, _, got = await turn(data, call("start_node", node_id="ask"),
                             call("request_input", node_id="ask", prompt="how old?", schema={"type": "number"}),
                             call("request_input", node_id="ask", prompt="how old?", schema=form))
    assert got[1]["ok"] is False and got[1]["code"] == "bad-input-schema"
    assert got[2]["ok"] is True and run.node("ask").status == "awaiting_input"
    assert run.node("ask").input_request.schema_["kind"] == "form"  # type: ignore[union-attr]
    before = run.snapshot
    with pytest.raises(WorkflowOperationError, match="form field 'age': -1 is less than the minimum of 0"):
        await run.apply_input("ask", {"age": -1})
    with pytest.raises(WorkflowOperationError, match="form field 'age' is required"):
        await run.apply_input("ask", {})
    assert run.snapshot is before
    await run.apply_input("ask", {"age": 41}, provided_by="ana")
    assert run.node("ask").status == "running"
    assert run.snapshot.stimuli == [{"type": "input_received", "node": "ask", "response": {"age": 41},
                                     "provided_by": "ana"}]


async def test_read_only_tools() -> None:
    long = "x" * (HANDOFF_VALUE_CAP + 50)
    wide = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(HANDOFF_FIELD_CAP + 5)}}
    data = definition(
        [agent("prep", fields=wide),
         fn("bare", f"printf {long}", capture="text", contract={"output": {"fields": {"type": "object"}}}),
         agent("write", "Write about ${input.topic}", contract={
             "input": {"topic": "${input.topic}", "text": "${bare.output.fields.text}"},
             "requires": [{"expr": "input.topic != ''", "message": "a topic is needed"}]}),
         agent("later")],
        [("prep", "write"), ("bare", "write"), ("write", "later")], input={"topic": "tides"})
    produced = {f"f{i}": "v" for i in range(HANDOFF_FIELD_CAP + 5)} | {"undeclared": "hidden"}
    run, _, _ = await turn(data, call("start_node", node_id="prep"),
                           call("complete_node", node_id="prep", summary="prepared", fields=produced), "ok")
    run, _, got = await turn(data, call("get_available"), call("get_globals"), call("get_state"),
                             call("validate_node", node_id="later"), call("validate_node", node_id="bare"),
                             call("build_handoff", node_id="write"), "ok", run=run)
    available, globals_, state, later, bare, handoff = got
    assert available["nodes"] == ["write"]
    assert globals_["run_input"] == {"topic": "tides"} and globals_["autonomous"] is False
    assert state["nodes"]["later"] == {"kind": "agent", "status": "pending", "blocked_by": ["write"]}
    assert later["runnable"] is False and later["blocked_by"] == ["write"]
    assert bare["runnable"] is False and bare["owner"] == "runtime" and bare["status"] == "complete"
    assert handoff["instruction"] == "Write about tides"
    assert handoff["bindings"]["topic"] == {"value": "tides", "origins": [{"kind": "flow-input", "path": "input"}]}
    text = handoff["bindings"]["text"]
    assert text["value"] == "x" * HANDOFF_VALUE_CAP + "... [50 more characters]"
    assert text["origins"][0]["kind"] == "node-output" and text["origins"][0]["node"] == "bare"
    upstream = {p["node"]: p for p in handoff["predecessors"]}
    assert list(upstream["prep"]["fields"]) == [f"f{i}" for i in range(HANDOFF_FIELD_CAP)]  # declared, 20 at most
    assert upstream["prep"]["summary"] == "prepared"
    assert upstream["bare"]["fields"] == {}  # a contract without properties publishes none


async def test_request_approval_asks_again_on_a_rejected_gate() -> None:
    data = definition([node("sign", {"kind": "gate", "prompt": "sign?", "schema": {"kind": "text"}}), agent("a")])
    run = WorkflowRun(data)
    await run.drain()
    await run.apply_approval("sign", "rejected", feedback="fix the notes")
    assert run.snapshot.stimuli[-1]["type"] == "approval_received"
    run, _, got = await turn(data, call("request_approval", node_id="sign", summary="notes fixed, sign?"), run=run)
    assert got[0]["ok"] is True
    approval = run.node("sign").approval
    assert approval is not None and (approval.request, approval.summary, approval.decision) == (
        2, "notes fixed, sign?", None)


async def test_the_stimulus_sequence_across_turns() -> None:
    data = definition([agent("ask", fields=NAME, gate={"approval": "mandatory"})])
    model = ScriptedModel(agent=[
        call("start_node", node_id="ask"), call("request_input", node_id="ask", prompt="your name?"),
        call("build_handoff", node_id="ask"),
        call("request_approval", node_id="ask", summary="name is Ana", fields={"name": "Ana"}),
    ])
    run = WorkflowRun(data, model=model)
    await run.advance()
    assert run.node("ask").status == "awaiting_input"
    await run.apply_input("ask", "Ana")
    await run.advance()
    assert run.node("ask").status == "awaiting_approval"
    await run.apply_approval("ask", "approved", decided_by="ana")
    assert run.status == "complete"
    openings = [json.loads(c.request.messages[0].content) for c in model.calls]
    assert "stimuli" not in openings[0]
    assert openings[2]["stimuli"] == [{"type": "input_received", "node": "ask", "response": "Ana",
                                       "provided_by": None}]
    handoff = json.loads(model.calls[3].request.messages[-1].content)
    assert handoff["input"] == {"prompt": "your name?", "response": "Ana"}
    assert run.snapshot.stimuli == [{"type": "approval_received", "node": "ask", "decision": "approved",
                                     "feedback": None, "decided_by": "ana"}]
    assert run.snapshot.model_calls == 4


async def test_a_turn_is_bounded_to_eight_tool_rounds() -> None:
    data = definition([agent("a")])
    model = ScriptedModel(agent=[call("get_state")] * 9)
    run = WorkflowRun(data, model=model)
    with pytest.raises(WorkflowOperationError, match="more than 8 rounds of tool calls") as raised:
        await run.agent.turn()
    assert raised.value.code == "agent-turn-budget" and model.count("agent") == 9
    assert run.snapshot.model_calls == 9
    short = WorkflowRun(data, model=ScriptedModel(agent=[call("get_state"), call("get_state")]), max_tool_rounds=1)
    with pytest.raises(WorkflowOperationError, match="more than 1 rounds"):
        await short.agent.turn()


async def test_agent_turns_on_one_run_are_serialized() -> None:
    inside = {"now": 0, "most": 0}

    async def reply(request: ModelRequest) -> str:
        inside["now"] += 1
        inside["most"] = max(inside["most"], inside["now"])
        await asyncio.sleep(0.01)
        inside["now"] -= 1
        return "nothing to do yet"

    run = WorkflowRun(definition([agent("a")]), model=FunctionModel(reply))
    await asyncio.gather(*(run.agent.turn() for _ in range(4)))
    assert inside["most"] == 1 and run.snapshot.model_calls == 4


async def test_an_undeclared_agent_tier_fails_the_node_and_no_model_is_a_clear_error() -> None:
    data = definition([node("a", {"kind": "agent", "instruction": "x", "model": "deep"})])
    run = WorkflowRun(data, model=ScriptedModel())
    await run.advance()
    assert run.node("a").status == "failed" and "tier 'deep' is not configured" in (run.node("a").error or "")
    with pytest.raises(WorkflowOperationError, match="need a language model, and none is configured"):
        await WorkflowRun(definition([agent("a")])).agent.turn()


async def test_every_tool_call_and_result_is_journaled_in_the_store(backend: Any) -> None:
    store = await backend.make()
    data = definition([agent("ask", fields=NAME)])
    await turn(data, call("get_available"), call("start_node", node_id="ask"), call("start_node", node_id="ask"),
               call("complete_node", node_id="ask", summary="s", fields={"name": "Ana"}), "done",
               store=store, run_id="r1")
    journal = await store.journal("r1")
    assert [(e.kind, e.name, e.status, e.node_id) for e in journal] == [
        ("flow-tool", "get_available", "finished", None), ("flow-tool", "start_node", "finished", "ask"),
        ("flow-tool", "start_node", "error", "ask"), ("flow-tool", "complete_node", "finished", "ask")]
    assert journal[2].error == "node 'ask' is running; this needs it available"
    assert journal[3].request == {"call_id": "call-complete_node",
                                  "arguments": {"node_id": "ask", "summary": "s", "fields": {"name": "Ana"}}}
    assert journal[3].result["status"] == "complete" and len({e.key for e in journal}) == 4


async def test_a_sub_flow_runs_its_subprompt_and_agent_nodes_and_projects_the_agent_approval() -> None:
    child = definition([node("draft", {"kind": "subprompt", "instruction": "draft a note"}),
                        agent("review", fields=NAME, gate={"approval": "mandatory"})], [("draft", "review")],
                       output={"name": "${review.output.fields.name}"})
    child["id"] = "child"
    parent = definition([node("sub", {"kind": "sub-flow", "flow": "child"})])
    model = ScriptedModel(subprompt=["A short note."], agent=[
        call("start_node", node_id="review"),
        call("request_approval", node_id="review", summary="note reviewed", fields={"name": "note"})])
    run = WorkflowRun(parent, model=model, resolve={"child": child})
    await run.advance()
    state = run.node("sub")
    assert state.status == "awaiting_approval" and state.approval is not None
    assert (state.approval.kind, state.approval.child_node, state.approval.summary) == ("sub-flow", "review",
                                                                                       "note reviewed")
    await run.apply_approval("sub", "approved", decided_by="ana")
    assert run.status == "complete" and run.node("sub").output.fields == {"name": "note"}  # type: ignore[union-attr]


async def test_a_crash_mid_turn_loses_no_committed_tool_call_and_repeats_none() -> None:
    store = MemoryStore()
    data = definition([agent("first", fields=NAME), agent("second")], [("first", "second")])

    def crash(request: ModelRequest) -> Any:
        raise RuntimeError("the worker died")

    model = ScriptedModel(agent=[call("start_node", node_id="first"),
                                 call("complete_node", node_id="first", summary="s", fields={"name": "Ana"}),
                                 call("start_node", node_id="second"), crash])
    run = WorkflowRun(data, model=model, store=store, run_id="r1")
    with pytest.raises(RuntimeError, match="the worker died"):
        await run.agent.turn()
    restarted = await WorkflowRun.load(store, "r1", data, model=ScriptedModel(agent=[
        call("get_available"), call("complete_node", node_id="first", summary="again", fields={"name": "Bo"}),
        call("complete_node", node_id="second", summary="done"), "all done"]))
    first, second = restarted.node("first"), restarted.node("second")
    assert first.status == "complete" and first.output.fields == {"name": "Ana"}  # type: ignore[union-attr]
    assert second.status == "running"  # the agent's committed start survives the restart
    report = await restarted.agent.turn()
    assert [(name, result["ok"]) for name, _, result in report.calls] == [
        ("get_available", True), ("complete_node", False), ("complete_node", True)]
    assert report.calls[1][2]["code"] == "wrong-status"  # the completed node cannot be done twice
    assert restarted.status == "complete" and first.output.fields == {"name": "Ana"}  # type: ignore[union-attr]
    journal = [(e.name, e.status) for e in await store.journal("r1")]
    assert journal[:3] == [("start_node", "finished"), ("complete_node", "finished"), ("start_node", "finished")]


async def test_a_child_agents_input_request_is_projected_and_answered_through_the_parent() -> None:
    child = definition([agent("pick", fields={"type": "object", "properties": {"size": {"type": "string"}}})],
                       output={"size": "${pick.output.fields.size}"})
    child["id"] = "child"
    parent = definition([node("sub", {"kind": "sub-flow", "flow": "child"})])

    def with_the_answer(request: ModelRequest) -> ModelResponse:
        size = json.loads(request.messages[0].content)["stimuli"][0]["response"]
        return call("complete_node", node_id="pick", summary="picked", fields={"size": size})

    model = ScriptedModel(agent=[
        call("start_node", node_id="pick"),
        call("request_input", node_id="pick", prompt="Which size?", schema={"kind": "choice", "options": ["S", "M"]}),
        with_the_answer, "done"])
    run = WorkflowRun(parent, model=model, resolve={"child": child})
    await run.advance()
    state = run.node("sub")
    assert state.status == "awaiting_input" and state.input_request is not None
    assert (state.input_request.prompt, state.input_request.child_node) == ("Which size?", "pick")
    with pytest.raises(WorkflowOperationError, match="'XL' is not one of"):
        await run.apply_input("sub", "XL")
    assert run.node("sub").status == "awaiting_input"
    await run.apply_input("sub", "M", provided_by="ana")
    assert run.status == "complete" and run.node("sub").output.fields == {"size": "M"}  # type: ignore[union-attr]
    assert run.node("sub").input_request.response == "M"  # type: ignore[union-attr]


async def test_a_failed_model_call_keeps_the_rejection_feedback_for_the_next_turn() -> None:
    data = definition([agent("release", fields=NAME)])
    store = MemoryStore()
    run, _, _ = await turn(data, call("start_node", node_id="release"),
                           call("request_approval", node_id="release", summary="ship v2?", fields={"name": "v2"}),
                           store=store, run_id="r")
    await run.apply_approval("release", "rejected", feedback="bump the version", decided_by="ana")
    feedback = run.snapshot.stimuli

    def down(request: ModelRequest) -> ModelResponse:
        raise ModelError("the provider is down", kind="network", provider="scripted")
    run.models = type(run.models)(default=FunctionModel(down))
    run._models.clear()
    with pytest.raises(ModelError):
        await run.agent.turn()
    assert run.snapshot.stimuli == feedback and len(feedback) == 1  # kept, in memory and in the store
    assert (await WorkflowRun.load(store, "r", data)).snapshot.stimuli == feedback

    run, model, _ = await turn(data, call("request_approval", node_id="release", summary="ship v3?",
                                          fields={"name": "v3"}), run=run)
    assert json.loads(model.calls[0].request.messages[0].content)["stimuli"] == feedback
    assert run.snapshot.stimuli == []  # taken once the model answered
