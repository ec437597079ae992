"""Agent field types list, enum and date: definition checks, wire schemas, coercion, and a collect
step that completes with them (a required list that is empty counts as missing)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from seed000_helpers import make_agent, say

from tether import Field, FlowDefinitionError, collect, end, reply
from tether.flow.fields import coerce, is_known
from tether.testing import ScriptedModel

ORDER_FIELDS = {
    "toppings": Field("list", description="pizza toppings"),
    "size": Field("enum", enum=("small", "large")),
    "day": Field("date"),
}


def _order_agent(model: ScriptedModel) -> Any:
    return make_agent(
        collect("order", fields=["toppings", "size", "day"], ask="What would you like?", on_complete="done"),
        reply("done", response="${toppings} on a ${size} pizza for ${day}", next=end("ok")),
        model=model, fields=ORDER_FIELDS)


def test_wire_schemas_of_the_new_types() -> None:
    assert ORDER_FIELDS["toppings"].wire_schema() == {
        "type": ["array", "null"], "items": {"type": "string"}, "description": "pizza toppings"}
    assert ORDER_FIELDS["size"].wire_schema() == {"enum": ["small", "large", None]}
    assert ORDER_FIELDS["day"].wire_schema() == {"type": ["string", "null"], "format": "date"}
    assert Field("list", items="integer", enum=(1, 2)).wire_schema() == {
        "type": ["array", "null"], "items": {"type": "integer", "enum": [1, 2]}}
    assert Field("string").wire_schema() == {"type": ["string", "null"]}  # unchanged


@pytest.mark.parametrize(("field", "value", "expected"), [
    (Field("list"), ["ham", "olives"], ["ham", "olives"]),
    (Field("list"), "ham, olives ,", ["ham", "olives"]),
    (Field("list", items="integer"), ["1", 2.0], [1, 2]),
    (Field("enum", enum=("small", "large")), " LARGE ", "large"),
    (Field("enum", enum=(1, 2)), 2, 2),
    (Field("date"), " 2026-03-01 ", "2026-03-01"),
])
def test_values_coerce(field: Field, value: Any, expected: Any) -> None:
    result = coerce("x", field, value)
    assert result.ok and result.value == expected


@pytest.mark.parametrize(("field", "value", "code", "detail"), [
    (Field("list"), {"a": 1}, "bad-value", "x: expected a list"),
    (Field("list", items="integer"), ["1", "two"], "bad-value", "x[1]: expected a integer"),
    (Field("list", items="enum", enum=("ham",)), ["ham", "kale"], "not-in-enum", "x[1]: 'kale' is not one of"),
    (Field("enum", enum=("small", "large")), "huge", "not-in-enum", "x: 'huge' is not one of"),
    (Field("enum", enum=(1, 2)), True, "not-in-enum", "x: True is not one of"),
    (Field("date"), "March 1st", "bad-value", "x: expected a date (YYYY-MM-DD)"),
    (Field("date"), "2026-02-30", "bad-value", "x: expected a date"),
])
def test_bad_values_are_named(field: Field, value: Any, code: str, detail: str) -> None:
    result = coerce("x", field, value)
    assert not result.ok and result.code == code and result.detail is not None and result.detail.startswith(detail)


def test_an_empty_list_is_not_a_known_value() -> None:
    assert not is_known([]) and is_known(["ham"]) and is_known(0) and is_known(False)


@pytest.mark.parametrize(("declared", "message"), [
    (Field("enum"), "type is 'enum' but enum= lists no allowed values"),
    (Field("list", items="enum"), "type is 'list' but enum= lists no allowed values"),
    (Field("list", items="list"), "items is 'list'; a list's items are one of"),  # type: ignore[arg-type]
    (Field("dict"), "type is 'dict'; a field's type is one of 'string', 'number', 'integer', 'boolean', "  # type: ignore[arg-type]
                    "'enum', 'date', 'list'"),
])
def test_bad_field_declarations_fail_at_definition(declared: Field, message: str) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        make_agent(reply("r", response="hi", next=end("ok")), fields={"f": declared})
    assert message in str(caught.value)


async def test_a_step_collecting_list_enum_and_date_fields_completes() -> None:
    model = ScriptedModel(extract=[{"toppings": ["ham", "olives"], "size": "Large", "day": "2026-03-01"}])
    result = await say(_order_agent(model), None, "ham and olives, large, on March 1st")
    assert result.session.data == {"toppings": ["ham", "olives"], "size": "large", "day": "2026-03-01"}
    assert "on a large pizza for 2026-03-01" in result.text


async def test_a_required_list_that_is_empty_counts_as_missing() -> None:
    model = ScriptedModel(extract=[{"toppings": [], "size": "small", "day": "2026-03-01"},
                                   {"toppings": ["mushrooms"]}])
    agent = _order_agent(model)
    first = await say(agent, None, "a small one on March 1st")
    assert first.text == "What would you like?"
    assert first.session.data.get("toppings", []) == [] and first.session.data["size"] == "small"
    second = await say(agent, first.session, "mushrooms")
    assert second.session.data["toppings"] == ["mushrooms"]
    assert second.text == 'mushrooms on a small pizza for 2026-03-01'  # a list reads as text


def _plain_pizza_agent(model: ScriptedModel | None = None, **toppings: Any) -> Any:
    from tether import enum_check, enum_list

    fields = {"toppings": Field("list", items="enum", enum=("ham", "olives"), **toppings),
              "size": Field("enum", enum=("small", "large"))}
    return make_agent(
        collect("order", fields=["size", "toppings"], ask={"size": "Small or large?", "toppings": "Which toppings?"},
                resolvers=[enum_check("size", ["small", "large"]), enum_list("toppings", ["ham", "olives"])],
                on_complete="done"),
        reply("done", response="A ${size} pizza with ${toppings}.", next=end("ok")), fields=fields,
        **({"model": model} if model is not None else {}))


async def test_a_list_that_allows_empty_is_answered_by_none() -> None:
    agent = _plain_pizza_agent(allow_empty=True)
    first = await say(agent, None, "a large one")
    assert first.text == "Which toppings?"
    done = await say(agent, first.session, "no toppings please")
    # the step completes with the empty list (how a text reads it is its author's: here, nothing)
    assert done.session.data["toppings"] == [] and done.text == "A large pizza with ."
    [update] = [e.as_dict() for e in done.events if e.type == "collect-update"]
    assert update["collected"] == {"size": "large", "toppings": []} and update["missing"] == []


async def test_with_a_model_an_empty_list_answers_a_list_that_allows_it() -> None:
    model = ScriptedModel(extract=[{"toppings": None}, {"toppings": []}])  # not said, then none
    agent = _plain_pizza_agent(model, allow_empty=True)
    first = await say(agent, None, "a large one")
    assert first.text == "Which toppings?" and "toppings" not in first.session.data
    done = await say(agent, first.session, "just the base please")  # the resolvers read nothing: the model does
    assert done.session.data["toppings"] == [] and done.text == "A large pizza with ."
    offered = model.calls[-1].request.tools[0].parameters["properties"]["toppings"]
    assert "an empty list when the customer wants none" in offered["description"]


async def test_a_list_that_needs_an_item_refuses_none_and_asks_again() -> None:
    agent = _plain_pizza_agent()
    first = await say(agent, None, "a large one")
    again = await say(agent, first.session, "no toppings please")
    assert again.text == "Which toppings?" and "toppings" not in again.session.data
    assert "bad-value" in again.codes()


@pytest.mark.parametrize("declared", [Field("string", allow_empty=True), Field("list", allow_empty="yes")])  # type: ignore[arg-type]
def test_allow_empty_is_a_boolean_for_a_list(declared: Field) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        make_agent(reply("r", response="hi", next=end("ok")), fields={"f": declared})
    assert "allow_empty is" in str(caught.value)


def test_a_misspelt_resolver_field_names_the_fields_the_node_gathers() -> None:
    from tether.flow.resolvers import whole_message

    with pytest.raises(FlowDefinitionError) as caught:
        make_agent(collect("order", fields=["toppings", "size"], resolvers=[whole_message("topings")]),
                   fields=ORDER_FIELDS)
    assert "unknown field 'topings' (fields: toppings, size)" in str(caught.value)


async def test_the_understand_call_harvests_list_enum_and_date_fields() -> None:
    from tether import Agent, Flow, on_message
    from tether.testing import FakeClock, SequentialIds

    def flow(name: str, phrase: str, collect: list[str]) -> Flow:
        return Flow(name, name, nodes=[reply(f"{name}_talk", response=f"{name} here", next=end("done"))],
                    collect=collect, on=[on_message(phrase)])

    said = {"toppings": ["ham", "olives"], "size": "LARGE", "day": "2026-03-01"}
    model = ScriptedModel(understand=[{"flows": {"pizza": 90, "track": 10}, "fields": said}])
    agent = Agent("Ava", fields=ORDER_FIELDS, idle="silent",
                  flows=[flow("pizza", "order a pizza", list(ORDER_FIELDS)), flow("track", "track an order", [])])
    agent = agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, "a large pizza with ham and olives for March 1")
    assert result.session is not None
    assert result.session.data == {"toppings": ["ham", "olives"], "size": "large", "day": "2026-03-01"}
    (call,) = model.calls
    assert call.request.response_format is not None
    sent = json.dumps(call.request.response_format.schema)  # the wire schemas the model was given
    assert '"type": ["array", "null"], "items": {"type": "string"}' in sent
    assert '{"enum": ["small", "large", null]}' in sent and '"format": "date"' in sent
