"""The runtime's ``gate_judge=`` judges the judge gates of every agent that has no gate judge of
its own; a gate judge naming an unknown provider is refused before any session I/O."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Start, action, end, goto, judge_gate
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel, SequentialIds


def gated_agent(**agent_options: Any) -> Agent:
    start = action("start", lambda s, c: goto("finish", data={"total": 30}))
    finish = action("finish", lambda s, c: end("done"))
    flow = Flow("f", nodes=[start, finish], gates=[judge_gate("judged", inputs=["state.total"])])
    return Agent("Bot", flows=[flow], idle="silent", **agent_options).with_clock(FakeClock(), SequentialIds("s"))


async def test_the_runtime_gate_judge_serves_agents_without_their_own() -> None:
    judge = ScriptedModel(judge=[{"pass": True, "reason": "runtime judge"}])
    runtime = Runtime(gated_agent(model=ScriptedModel()), store=MemoryStore(), gate_judge=judge, clock=FakeClock())
    response = await runtime.run("Bot", start=Start("f", key="k"))
    assert response.success, response.message
    assert [c.call for c in judge.calls] == ["judge"] and judge.unused() == {}


async def test_an_agents_own_gate_judge_wins_over_the_runtimes() -> None:
    mine = ScriptedModel(judge=[{"pass": True, "reason": "mine"}])
    runtime_judge = ScriptedModel()
    runtime = Runtime(gated_agent(gate_judge=mine), store=MemoryStore(), gate_judge=runtime_judge, clock=FakeClock())
    response = await runtime.run("Bot", start=Start("f", key="k"))
    assert response.success, response.message
    assert [c.call for c in mine.calls] == ["judge"] and runtime_judge.calls == []


async def test_an_unknown_gate_judge_provider_is_refused_before_any_session_io() -> None:
    store = MemoryStore()
    runtime = Runtime(gated_agent(), store=store, gate_judge="nosuchprovider:judge-1", clock=FakeClock())
    response = await runtime.run("Bot", start=Start("f", key="k"))
    assert not response.success and "gate_judge" in response.message
    assert await store.list() == []
