"""Judge gates are judged by the gate judge configured for flows (seed 000: "requires
flowGateJudge ... an absent judge is an execution error"), set on the agent (``gate_judge=``) or
the runtime, never by the agent's own model."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Start, action, end, goto, judge_gate
from tether.testing import FakeClock, ScriptedModel, SequentialIds


def gated_agent(**agent_options: Any) -> Agent:
    start = action("start", lambda s, c: goto("finish", data={"total": 30}))
    finish = action("finish", lambda s, c: end("done"))
    flow = Flow("f", nodes=[start, finish], gates=[judge_gate("judged", inputs=["state.total"])])
    return Agent("Bot", flows=[flow], idle="silent", **agent_options).with_clock(FakeClock(), SequentialIds("s"))


def flow_end(result: Any) -> Any:
    return next(e for e in result.events if e.type == "flow-end")


async def test_the_agents_own_model_does_not_judge_a_gate() -> None:
    model = ScriptedModel(judge=[{"pass": True, "reason": "fine"}])
    result = await gated_agent(model=model).turn(None, Start("f", key="k"))
    (verdict,) = flow_end(result).gates
    assert verdict["passed"] is False and "no gate judge" in verdict["execution_error"]
    assert result.ended[0].reason == "failed-verification"
    assert model.calls == [] and result.llm_calls == 0


async def test_the_gate_judge_judges_and_the_agents_model_is_not_called() -> None:
    own, judge = ScriptedModel(), ScriptedModel(judge=[{"pass": True, "reason": "fine"}])
    result = await gated_agent(model=own, gate_judge=judge).turn(None, Start("f", key="k"))
    assert flow_end(result).gates[0]["passed"] is True and result.ended[0].reason == "done"
    assert [c.call for c in judge.calls] == ["judge"] and own.calls == []
    assert result.llm_calls == 1 and judge.unused() == {}


async def test_with_gate_judge_and_with_model_keep_each_other() -> None:
    judge = ScriptedModel(judge=[{"pass": False, "reason": "no"}])
    agent = gated_agent().with_gate_judge(judge).with_model(ScriptedModel())
    result = await agent.turn(None, Start("f", key="k"))
    assert flow_end(result).gates[0]["reason"] == "no" and result.ended[0].reason == "failed-verification"
