"""``tether.testing.understood`` builds the understand reply a multi-flow agent's request asks for,
by flow id, field name and branch text, and fails a test that names what was not asked."""

from __future__ import annotations

import pytest

from tether import Agent, Field, Flow, Message, collect, end, on_message, reply
from tether.flow.nodes import branch
from tether.testing import ScriptedModel, understood

orders = Flow("orders", "Check an order", nodes=[
    collect("ask", fields=["order_number"], ask="Which order?",
            branches=[branch("human", when="the customer is angry")]),
    reply("said", response="Order ${order_number} is on its way.", next=end()),
    reply("human", response="Let me get a person.", next=end()),
], on=[on_message("where is my order")])
refunds = Flow("refunds", "Get a refund", nodes=[
    collect("why", fields=["reason"], ask="Why?"),
    reply("ok", response="Refund for ${reason}.", next=end()),
], on=[on_message("refund")])
agent = Agent("A", fields={"order_number": Field("string"), "reason": Field("string", extract="asked")},
              flows=[orders, refunds])


async def test_routes_then_fills_the_step_being_answered() -> None:
    model = ScriptedModel(understand=[understood(flows={"orders": 90, "refunds": 0}),
                                      understood(values={"order_number": "A-7"})])
    first = await agent.with_model(model).turn(None, Message("where is my order"))
    assert first.text == "Which order?"
    second = await agent.with_model(model).turn(first.session, Message("it's A-7"))
    assert second.text == "Order A-7 is on its way." and model.unused() == {}
    # what the helper answered: every key of the envelope the request sent, null where not given
    sent = model.calls[1].request
    assert understood(values={"order_number": "A-7"})(sent) == {
        "flows": {"orders": None, "refunds": None},
        "branches": {"q1": None},
        "collect": {"c1": {"order_number": "A-7"}},
        "asks": None,
        "intent": None,
    }


async def test_a_branch_is_named_by_its_text() -> None:
    model = ScriptedModel(understand=[understood(flows={"orders": 90}),
                                      understood(branches={"the customer is angry": True})])
    first = await agent.with_model(model).turn(None, Message("where is my order"))
    second = await agent.with_model(model).turn(first.session, Message("this is ridiculous"))
    assert second.text == "Let me get a person."


async def test_naming_what_the_request_does_not_ask_fails_the_test() -> None:
    model = ScriptedModel(understand=[understood(flows={"shipping": 80})])
    with pytest.raises(AssertionError, match=r"does not ask about flow 'shipping'; it asks: .*'orders'"):
        await agent.with_model(model).turn(None, Message("where is my order"))
    model = ScriptedModel(understand=[understood(values={"reason": "late"})])
    with pytest.raises(AssertionError, match="does not ask about field 'reason'"):
        await agent.with_model(model).turn(None, Message("where is my order"))


async def test_a_flow_whose_id_needs_an_alias_is_named_by_its_id() -> None:
    spaced = Flow("track order", "Track an order", nodes=[reply("where", response="On its way.", next=end())],
                  on=[on_message("track my order")])
    other = Flow("refunds", "Get a refund", nodes=[reply("ok", response="Refund opened.", next=end())],
                 on=[on_message("refund")])
    model = ScriptedModel(understand=[understood(flows={"track order": 95, "refunds": 0})])
    result = await Agent("T", flows=[spaced, other]).with_model(model).turn(None, Message("where is it?"))
    assert result.text == "On its way."
    assert "track order" not in model.calls[0].request.response_format.schema["properties"]["flows"]["properties"]
