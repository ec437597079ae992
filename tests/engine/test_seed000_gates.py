"""Seed 000, "Post-run verification gates": predicate and judge gates evaluated when the flow
reaches a terminal transition; blocking vs advisory; a gate that fails to execute always blocks;
the verdicts travel on the flow-end event."""

from __future__ import annotations

import json
from typing import Any

from seed000_helpers import make_agent, say, scripted

from tether import action, end, escalate, goto, handoff, judge_gate, predicate_gate


def finishing(*gates: Any, move: Any = None, model: Any = None) -> Any:
    """A two-action flow ending with ``gates``; ``model`` is the gate judge (seed 000's flowGateJudge)."""
    start = action("start", lambda s, c: goto("finish", data={"total": 30, "secret": "s3cr3t", "email": "a@b.c"}))
    finish = action("finish", lambda s, c: move if move is not None else end("done"))
    return make_agent(start, finish, gates=list(gates)).with_gate_judge(model)


def flow_end(result: Any) -> Any:
    return next(e for e in result.events if e.type == "flow-end")


async def test_a_passing_predicate_gate_keeps_the_reason() -> None:
    result = await say(finishing(predicate_gate("total-positive", lambda scope: scope.state["total"] > 0)), None)
    assert result.ended[0].reason == "done"
    event = flow_end(result)
    assert event.gates == [{"id": "total-positive", "kind": "predicate", "severity": "blocking", "passed": True}]
    assert event.outcome is None
    assert result.llm_calls == 0


async def test_a_failing_blocking_gate_ends_with_failed_verification() -> None:
    result = await say(finishing(predicate_gate("cheap", lambda scope: scope.state["total"] < 10)), None)
    assert result.ended[0].reason == "failed-verification"
    event = flow_end(result)
    assert event.outcome == "failed-verification"
    assert event.reason == "failed-verification"
    assert [(g["id"], g["passed"]) for g in event.gates] == [("cheap", False)]


async def test_an_advisory_failure_is_recorded_but_does_not_block() -> None:
    gate = predicate_gate("cheap", lambda scope: scope.state["total"] < 10, severity="advisory")
    result = await say(finishing(gate), None)
    assert result.ended[0].reason == "done"
    event = flow_end(result)
    assert event.outcome is None
    assert event.gates == [{"id": "cheap", "kind": "predicate", "severity": "advisory", "passed": False}]


async def test_a_predicate_that_raises_blocks_even_when_advisory() -> None:
    gate = predicate_gate("broken", lambda scope: scope.state["missing"] > 1, severity="advisory")
    result = await say(finishing(gate), None)
    assert result.ended[0].reason == "failed-verification"
    (verdict,) = flow_end(result).gates
    assert verdict["passed"] is False and "KeyError" in verdict["execution_error"]


async def test_the_predicate_scope_has_input_state_results_and_request_context() -> None:
    scopes: list[Any] = []
    gate = predicate_gate("look", lambda scope: scopes.append(scope) or True)
    await say(finishing(gate), None)
    (scope,) = scopes
    assert scope.state["total"] == 30
    assert scope.results == {} and scope.request_context == {}
    assert scope.input == scope.state  # no run input: the state stands in


async def test_gates_run_on_handoff_and_escalate_too() -> None:
    gate = predicate_gate("never", lambda scope: False)
    for move in (handoff("billing"), escalate("upset")):
        result = await say(finishing(gate, move=move), None)
        assert result.ended[0].reason == "failed-verification"
        assert flow_end(result).outcome == "failed-verification"


async def test_a_judge_gate_uses_one_judge_call_over_only_the_allow_listed_paths() -> None:
    model = scripted(judge=[{"pass": True, "reason": "total is fine"}])
    gate = judge_gate("judged", inputs=["state.total", "state.email"], rubric="The total must be positive.")
    result = await say(finishing(gate, model=model), None)
    assert result.ended[0].reason == "done"
    (verdict,) = flow_end(result).gates
    assert (verdict["id"], verdict["kind"], verdict["passed"], verdict["reason"]) == (
        "judged", "judge", True, "total is fine")
    (call,) = model.calls
    assert call.call == "judge" and call.request.response_format is not None
    prompt = "\n".join(m.content for m in call.request.messages)
    assert "The total must be positive." in prompt
    payload = json.loads(prompt.split("Run record:\n", 1)[1])
    assert payload == {"state": {"total": 30, "email": "a@b.c"}}
    assert "s3cr3t" not in prompt and "s3cr3t" not in call.request.system + call.request.instructions
    assert result.llm_calls == 1 and model.unused() == {}


async def test_a_failing_blocking_judge_verdict_blocks() -> None:
    model = scripted(judge=[{"pass": False, "reason": "too expensive"}])
    result = await say(finishing(judge_gate("judged", inputs=["state.total"]), model=model), None)
    assert result.ended[0].reason == "failed-verification"
    assert flow_end(result).gates[0]["reason"] == "too expensive"
    assert result.llm_calls == 1 and model.unused() == {}


async def test_a_judge_gate_without_a_model_is_an_execution_error() -> None:
    gate = judge_gate("judged", inputs=["state.total"], severity="advisory")
    result = await say(finishing(gate), None)
    assert result.ended[0].reason == "failed-verification"
    (verdict,) = flow_end(result).gates
    assert verdict["passed"] is False and "execution_error" in verdict
    assert result.llm_calls == 0


async def test_an_invalid_judge_verdict_is_an_execution_error() -> None:
    model = scripted(judge=[{"verdict": "yes"}])
    result = await say(finishing(judge_gate("judged", inputs=["state.total"], severity="advisory"), model=model),
                       None)
    assert result.ended[0].reason == "failed-verification"
    assert "execution_error" in flow_end(result).gates[0]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_the_gate_input_is_the_run_input_when_there_is_one() -> None:
    from tether import Agent, Flow, Start
    from tether.testing import FakeClock, SequentialIds

    scopes: list[Any] = []
    flow = Flow("manual", nodes=[action("a", lambda s, c: end("done"))],
                gates=[predicate_gate("look", lambda scope: scopes.append(scope) or True)])
    agent = Agent("Tester", flows=[flow], idle="silent").with_clock(FakeClock(), SequentialIds("s"))
    await agent.turn(None, Start("manual", input={"order": "A1"}))
    assert scopes[0].input == {"order": "A1"}
