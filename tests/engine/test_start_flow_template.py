"""Seed 003 ``Next = {flow: template, input?}``: the flow a run chains into is rendered from a
template (``{input.topic}``, ``{field}``, ``{context.x}``), strings in ``input`` too; a result that
names no flow of the agent is a clear error naming the flow, the step and the template."""

from __future__ import annotations

from typing import Any

import pytest

from tether import Agent, Flow, FlowDefinitionError, Start, action, end, goto, reply, start_flow
from tether.testing import FakeClock, SequentialIds


def agent_with(router: Flow) -> Agent:
    billing = Flow("billing", nodes=[reply("hi", response="billing here for ${input.who}", next=end("billed"))])
    sales = Flow("sales", nodes=[reply("hi", response="sales here", next=end("sold"))])
    return Agent("Bot", flows=[router, billing, sales], idle="silent").with_clock(FakeClock(), SequentialIds("s"))


async def test_a_static_flow_template_renders_from_the_runs_input() -> None:
    router = Flow("router", nodes=[action("route", lambda s, c: None, then=start_flow("{input.topic}"))])
    result = await agent_with(router).turn(None, Start("router", {"topic": "sales"}, key="k"))
    assert [s.flow for s in result.started] == ["router", "sales"]
    assert result.text == "sales here"
    assert [(e.flow, e.reason) for e in result.ended] == [("router", "flow"), ("sales", "sold")]


async def test_a_returned_flow_template_renders_from_the_state_and_input_strings_are_rendered() -> None:
    def route(state: Any, ctx: Any) -> Any:
        return start_flow("{dept}", {"who": "{name}"})

    router = Flow("router", nodes=[action("pick", lambda s, c: goto("route", data={"dept": "billing",
                                                                                   "name": "Ana"})),
                                   action("route", route)])
    result = await agent_with(router).turn(None, Start("router", key="k"))
    assert [s.flow for s in result.started] == ["router", "billing"]
    assert result.text == "billing here for Ana"


def degraded_error(result: Any) -> str:
    """The error of the run the turn degraded: the parent never left for a flow (one flow end)."""
    (error,) = [e for e in result.events if e.type == "error"]
    assert [e.reason for e in result.events if e.type == "flow-end"] == ["error_degraded"]
    return str(error.error)


async def test_a_template_that_names_no_flow_is_an_error_naming_the_step() -> None:
    router = Flow("router", nodes=[action("route", lambda s, c: None, then=start_flow("{input.topic}"))])
    result = await agent_with(router).turn(None, Start("router", {"topic": "refunds"}, key="k"))
    message = degraded_error(result)  # the author's bug degrades the run
    assert "'router'" in message and "'route'" in message and "{input.topic}" in message and "'refunds'" in message
    assert "is not a flow of the agent" in message


async def test_a_template_that_renders_empty_is_the_same_error() -> None:
    router = Flow("router", nodes=[action("route", lambda s, c: None, then=start_flow("{input.topic}"))])
    result = await agent_with(router).turn(None, Start("router", key="k"))
    assert "has no value for {input.topic}" in degraded_error(result)  # never rendered ""


def test_a_static_literal_flow_the_agent_lacks_is_refused_when_the_agent_is_built() -> None:
    router = Flow("router", nodes=[action("route", lambda s, c: None, then=start_flow("nope"))])
    with pytest.raises(FlowDefinitionError) as info:
        agent_with(router)
    assert [(i.code, i.flow, i.node, i.path) for i in info.value.issues] == [("unknown-flow", "router", "route",
                                                                             "then")]


async def test_a_returned_literal_flow_is_not_rendered_and_an_unknown_one_stays_flow_gone() -> None:
    router = Flow("router", nodes=[action("route", lambda s, c: start_flow("nope"))])
    result = await agent_with(router).turn(None, Start("router", key="k"))
    assert [(s.flow, s.code) for s in result.skipped] == [("nope", "flow-gone")]
