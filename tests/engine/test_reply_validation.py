"""Model replies are held to what the call offered and to the exact schema that was sent
(understand, extract, decide), with jsonschema."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from pydantic import Field as PydanticField
from seed000_helpers import make_agent, say

from tether import Agent, Field, Flow, ModelError, collect, decide, end, on_message, reply
from tether.engine.graph.reply_check import check_reply
from tether.testing import FakeClock, ScriptedModel, SequentialIds


def _router(model: ScriptedModel, **fields: Field) -> Agent:
    def flow(name: str, phrase: str) -> Flow:
        return Flow(name, name, nodes=[reply(f"{name}_talk", response=f"{name} here", next=end("done"))],
                    collect=[n for n in fields if n.startswith(name)], on=[on_message(phrase)])

    return Agent("Ava", fields=dict(fields), flows=[flow("pizza", "order a pizza"), flow("track", "track an order")],
                 idle="silent").with_model(model).with_clock(FakeClock(), SequentialIds("s"))


def _warnings(result: Any) -> list[dict[str, Any]]:
    return [e.as_dict() for e in result.events if e.type == "warning"]


async def test_a_score_above_the_schema_maximum_is_dropped_not_clamped() -> None:
    model = ScriptedModel(understand=[{"flows": {"pizza": 1001, "track": 30}}])
    result = await _router(model).turn(None, "hmm")
    assert result.started == []  # 1001 is not 100: pizza has no score, track's 30 is below 40
    (warning,) = _warnings(result)
    assert warning["call"] == "understand" and warning["dropped"] == ["flows.pizza"]
    assert "1001" in warning["message"]
    assert result.session is not None and "flows.pizza" in result.session.warn[-1].message


@pytest.mark.parametrize("bad", ["90", 90.5, True, -1])
async def test_a_score_of_the_wrong_type_is_dropped_and_the_other_stands(bad: Any) -> None:
    model = ScriptedModel(understand=[{"flows": {"pizza": bad, "track": 80}}])
    result = await _router(model).turn(None, "where is it")
    assert [s.flow for s in result.started] == ["track"]
    assert _warnings(result)[0]["dropped"] == ["flows.pizza"]


async def test_keys_the_call_did_not_offer_are_dropped_with_a_warning() -> None:
    model = ScriptedModel(understand=[{"flows": {"pizza": 10, "track": 10, "ghost": 99},
                                       "fields": {"pizza_size": "large", "track_confirmed": True},
                                       "mentions": {"pizza": True}}])
    agent = _router(model, pizza_size=Field("string", extract="anywhere"),
                    track_confirmed=Field("boolean", extract="asked"))
    result = await agent.turn(None, "large please")
    assert result.session is not None
    assert result.session.data == {"pizza_size": "large"}  # the ask-only boolean was never offered
    (warning,) = _warnings(result)
    assert sorted(warning["dropped"]) == ["fields.track_confirmed", "flows.ghost", "mentions"]
    assert ("unknown-field", "track_confirmed: not offered") in [(o.code, o.detail) for o in result.outcomes]
    assert result.started == []


async def test_a_reply_that_is_not_an_object_is_an_empty_judgement_and_the_call_counts() -> None:
    model = ScriptedModel(understand=[["flows", 99]])
    result = await _router(model).turn(None, "pizza")
    assert result.started == [] and result.llm_calls == 1
    assert _warnings(result)[0]["dropped"] == ["$"]


class Booking(BaseModel):
    guests: Annotated[int, PydanticField(ge=1, le=12)]
    name: str | None = None


async def test_extract_drops_values_outside_the_schema_that_was_sent() -> None:
    model = ScriptedModel(extract=[{"guests": 40, "name": "Ada", "table": "by the window"}])
    node = collect("book", schema=Booking, required=["guests", "name"])
    result = await say(make_agent(node, model=model), None, "40 people, Ada")
    (warning,) = _warnings(result)
    assert warning["call"] == "extract" and sorted(warning["dropped"]) == ["guests", "table"]
    codes = {(o.code, (o.detail or "").split(":")[0]) for o in result.outcomes if o.code}
    assert {("bad-value", "guests"), ("unknown-field", "table")} <= codes
    (run,) = result.session.runs
    assert run.status == "asking"  # guests is still missing: the step asks again


class Intent(BaseModel):
    intent: str
    priority: Annotated[int, PydanticField(ge=1, le=3)]


@pytest.mark.parametrize("reply_", [{"intent": "cancel", "priority": "2"}, {"intent": "cancel", "priority": True},
                                    {"intent": "cancel", "priority": 2, "extra": 1}])
async def test_a_decide_reply_is_held_to_the_sent_schema_or_refused_whole(reply_: dict[str, Any]) -> None:
    extra_allowed = "extra" in reply_
    route = decide("route", schema=Intent, decide=lambda data, state: end(data.intent))
    model = ScriptedModel(decide=[reply_])
    agent = make_agent(route, model=model)
    if extra_allowed:  # pydantic's schema allows additional properties: accepted
        assert (await say(agent, None)).ended[0].reason == "cancel"
        return
    with pytest.raises(ModelError) as caught:
        await say(agent, None)
    assert caught.value.kind == "invalid" and "decide node 'route' of flow 'f'" in caught.value.message


def test_check_reply_drops_entries_not_sections() -> None:
    schema = {"type": "object", "additionalProperties": False, "required": ["a", "b"],
              "properties": {"a": {"type": "object", "additionalProperties": False, "required": ["x", "y"],
                                   "properties": {"x": {"type": "integer"}, "y": {"enum": ["p", "q"]}}},
                             "b": {"type": ["boolean", "null"]}}}
    kept, dropped = check_reply({"a": {"x": "1", "y": "q", "z": 0}, "b": True}, schema, entry_depth=2)
    assert kept == {"a": {"y": "q"}, "b": True}
    assert sorted((d.path, d.code) for d in dropped) == [("a.x", "bad-value"), ("a.z", "unknown-field")]
    kept, dropped = check_reply({"a": {"x": 1, "y": "r"}}, schema, entry_depth=2)
    assert kept == {"a": {"x": 1}} and [(d.path, d.code) for d in dropped] == [("a.y", "not-in-enum")]
    kept, dropped = check_reply({"a": 5, "b": True}, schema, entry_depth=2)
    assert kept == {"b": True} and [d.path for d in dropped] == ["a"]
    kept, dropped = check_reply({"a": {"x": 1}}, schema, entry_depth=0)
    assert kept is None and [d.path for d in dropped] == ["$"]
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    assert check_reply({"b": deep}, schema, entry_depth=2)[0] is None
