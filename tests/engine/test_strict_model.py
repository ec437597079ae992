"""``tether.testing.StrictModel`` answers from what the customer means and what each request offers:
a value only where the request's schema offers that field and accepts it, a score only for a flow
the request scores, an intent only where the request lists it; and it reports the rest."""

from __future__ import annotations

import pytest

from tether import Agent, Field, Flow, Message, collect, end, enum_check, on_message, reply
from tether.models.types import ChatMessage, ModelRequest, ResponseFormat
from tether.testing import Meaning, ScriptExhausted, StrictModel

orders = Flow("orders", "Check an order", nodes=[
    collect("ask", fields=["order_number"], ask="Which order?"),
    reply("said", response="Order ${order_number} is on its way.", next=end()),
], on=[on_message("where is my order")])
refunds = Flow("refunds", "Get a refund", nodes=[
    collect("why", fields=["reason"], ask="Why?"),
    reply("ok", response="Refund opened: ${reason}.", next=end()),
], on=[on_message("refund")])
desk = Agent("Desk", fields={"order_number": Field("string"), "reason": Field("string", extract="asked"),
                             "size": Field("enum", enum=("small", "large"))},
             flows=[orders, refunds])


async def test_routes_and_fills_what_the_request_offers() -> None:
    model = StrictModel()
    model.means("where is my order?", flows={"orders": 90, "refunds": 0})
    model.means("it's A-7", values={"order_number": "A-7"})
    first = await desk.with_model(model).turn(None, Message("where is my order?"))
    assert first.text == "Which order?"
    second = await desk.with_model(model).turn(first.session, Message("it's A-7"))
    assert second.text == "Order A-7 is on its way."
    assert model.unsaid() == []
    assert model.count("understand") == 2


async def test_a_value_the_request_does_not_offer_is_reported_not_said() -> None:
    model = StrictModel()
    model.means("where is my order?", flows={"orders": 90})
    model.means("A-7, and it was broken", values={"order_number": "A-7", "reason": "broken"})
    first = await desk.with_model(model).turn(None, Message("where is my order?"))
    second = await desk.with_model(model).turn(first.session, Message("A-7, and it was broken"))
    assert second.text == "Order A-7 is on its way."
    assert "reason" not in second.session.data  # the model never got to say it
    [unsaid] = model.unsaid()
    assert (unsaid.message, unsaid.item, unsaid.calls) == ("A-7, and it was broken", "values.reason", ("understand",))
    assert "order_number" in unsaid.offered
    assert "could not say values.reason" in str(unsaid)


async def test_a_message_no_call_was_made_for_is_not_reported() -> None:
    sizes = Flow("sizes", "Pick a size", nodes=[
        collect("size", fields=["size"], ask="Small or large?", resolvers=[enum_check("size", ["small", "large"])]),
        reply("ok", response="A ${size} one.", next=end()),
    ], on=[on_message()])
    model = StrictModel()
    model.means("large please", values={"size": "large"})
    result = await Agent("Solo", fields={"size": Field("enum", enum=("small", "large"))},
                         flows=[sizes]).with_model(model).turn(None, Message("large please"))
    assert result.text == "A large one." and model.count() == 0  # a resolver read it: no call
    assert model.unsaid() == []


def _understand(schema_properties: dict[str, object], instructions: str = "") -> ModelRequest:
    schema = {"type": "object", "properties": schema_properties, "required": list(schema_properties)}
    return ModelRequest(call="understand", system="judge", instructions=instructions,
                        messages=(ChatMessage("user", "forget it"),),
                        response_format=ResponseFormat("understand", schema))


async def test_an_intent_only_where_the_request_lists_it() -> None:
    model = StrictModel()
    model.means("forget it", intent="cancel")
    listed = await model.complete(_understand({"intent": {"type": ["string", "null"],
                                                          "enum": ["cancel", "chitchat", None]}}))
    assert listed.data == {"intent": "cancel"}
    assert model.unsaid() == []

    other = StrictModel()
    other.means("forget it", intent="cancel")
    unlisted = await other.complete(_understand({"intent": {"type": ["string", "null"], "enum": ["chitchat", None]}}))
    assert unlisted.data == {"intent": None}
    assert [u.item for u in other.unsaid()] == ["intent"]
    assert other.unsaid()[0].offered == ("intent chitchat",)


async def test_a_value_the_schema_rejects_is_not_said() -> None:
    model = StrictModel()
    model.means("forget it", Meaning(values={"size": "medium"}))
    reply_ = await model.complete(_understand(
        {"fields": {"type": "object", "properties": {"size": {"type": ["string", "null"],
                                                               "enum": ["small", "large", None]}}}}))
    assert reply_.data == {"fields": {"size": None}}
    assert [u.item for u in model.unsaid()] == ["values.size"]


async def test_branches_by_their_text_and_a_question() -> None:
    model = StrictModel()
    model.means("forget it", branches={"the customer is angry": True}, asks=False)
    reply_ = await model.complete(_understand(
        {"asks": {"type": ["boolean", "null"]},
         "branches": {"type": "object", "properties": {"q1": {"type": ["boolean", "null"]}}}},
        instructions="branches:\n- q1: the customer is angry"))
    assert reply_.data == {"asks": False, "branches": {"q1": True}}
    assert model.unsaid() == []


async def test_extract_and_speak_calls_are_built_from_their_schemas() -> None:
    from tether import collect as collect_

    trip = Flow("trip", "Plan a trip", nodes=[
        collect_("where", fields=["city"], ask="Where to?"),
        reply("tip", instructions="Suggest one thing to see in ${city}.", next=end()),
    ], on=[on_message()])
    model = StrictModel()
    model.means("Lisbon maybe", values={"city": "Lisbon"}, reply="See the Belém tower.")
    agent = Agent("Tess", fields={"city": Field("string")}, flows=[trip]).with_model(model)
    first = await agent.turn(None, Message("hello"))
    second = await agent.turn(first.session, Message("Lisbon maybe"))
    assert second.session.data["city"] == "Lisbon"
    assert second.text == "See the Belém tower."
    assert model.unsaid() == []


async def test_a_call_it_cannot_build_needs_a_queued_reply() -> None:
    model = StrictModel()
    request = ModelRequest(call="decide", system="s", instructions="choose", messages=())
    with pytest.raises(ScriptExhausted, match="'decide' call needs a queued reply"):
        await model.complete(request)
    model.add("decide", "refund")
    assert (await model.complete(request)).text == "refund"
    assert model.unused() == {}
    summary = ModelRequest(call="summary", system="s", instructions="summarise", messages=())
    assert (await model.complete(summary)).text == "[summary]"
    model.add("summary", "A short summary.")
    assert (await model.complete(summary)).text == "A short summary."
