"""Choices on collect and decide nodes (kuralle §1.2, §1.13, §1.18): entering such a node emits
``interactive {node_id, options, prompt}``; a message that is exactly a choice's label is taken
with no model call; otherwise a decide's model call is constrained to the ids plus ``__none``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, Choice, Field, Flow, FlowDefinitionError, Message, Start, collect, decide, end, goto, reply
from tether.testing import FakeClock, ScriptedModel, SequentialIds

SIZES = ["Small", ("L", "Large"), Choice("xl", "Extra large", "for sharing")]


def by_size(data: Any, state: Any) -> Any:
    return {"Small": goto("small"), "L": goto("large"), "xl": goto("large")}.get(data.choice, "stay")


def pizza_agent(model: Any = None, *, prompt: str | None = "Which size?", first: Any = None) -> Agent:
    size = decide("size", choices=SIZES, prompt=prompt, decide=by_size, instructions="Which size did they pick?")
    small = reply("small", response="A small one!", next=end("small"))
    large = reply("large", response="A large one!", next=end("large"))
    nodes = [first, size, small, large] if first is not None else [size, small, large]
    agent = Agent("Bot", flows=[Flow("pizza", nodes=nodes)], idle="silent",
                  fields={"name": Field("string")})
    agent = agent.with_clock(FakeClock(), SequentialIds("s"))
    return agent.with_model(model) if model is not None else agent


def interactive(result: Any) -> list[Any]:
    return [e for e in result.events if e.type == "interactive"]


async def test_entering_a_decide_with_choices_emits_interactive_and_waits_for_the_pick() -> None:
    model = ScriptedModel()
    result = await pizza_agent(model).turn(None, Start("pizza", key="k"))
    (event,) = interactive(result)
    assert event.as_dict()["node"] == "size" and event.prompt == "Which size?"
    assert event.options == [{"id": "Small", "label": "Small"}, {"id": "L", "label": "Large"},
                             {"id": "xl", "label": "Extra large", "description": "for sharing"}]
    types = [e.type for e in result.events]
    assert types.index("interactive") == types.index("node-enter") + 1
    assert result.text == "Which size?"  # the prompt is said, so a text channel sees the question too
    assert result.session.runs[0].status == "asking" and result.session.runs[0].node == "size"
    assert result.llm_calls == 0 and model.calls == []


@pytest.mark.parametrize("text", ["Large", "large", "  LARGE! ", "L", "extra large."])
async def test_a_message_that_is_a_choice_label_skips_the_decide_call(text: str) -> None:
    model = ScriptedModel()  # no queue: any call fails the test
    agent = pizza_agent(model)
    first = await agent.turn(None, Start("pizza", key="k"))
    result = await agent.turn(first.session, Message(text))
    assert result.text == "A large one!"
    assert result.llm_calls == 0 and model.calls == []
    assert any(o.code == "choice-matched" for o in result.outcomes)


async def test_a_choice_decide_needs_no_model_at_all() -> None:
    agent = pizza_agent()
    first = await agent.turn(None, Start("pizza", key="k"))
    result = await agent.turn(first.session, Message("Small"))
    assert result.text == "A small one!"


async def test_with_no_model_a_message_that_names_no_choice_asks_for_a_pick_and_waits() -> None:
    agent = pizza_agent()  # no model: the decide node cannot read "the biggest one"
    first = await agent.turn(None, Start("pizza", key="k"))
    result = await agent.turn(first.session, Message("the biggest one you have"))
    assert result.text == "Sorry, I didn't catch that. Please answer Small, Large or Extra large."
    assert any(o.code == "choice-unmatched" for o in result.outcomes)
    assert result.session.runs[0].status == "asking" and result.session.runs[0].node == "size"
    assert not [e for e in result.events if e.type == "error"]
    again = await agent.turn(result.session, Message("nope"))  # a second miss is asked again, not deduplicated
    assert again.text == result.text
    picked = await agent.turn(again.session, Message("Extra large"))
    assert picked.text == "A large one!"


async def test_a_decide_prompt_fills_its_placeholders() -> None:
    agent = pizza_agent(prompt="Which size for ${input.table}?")
    first = await agent.turn(None, Start("pizza", key="k", input={"table": "table 4"}))
    assert first.text == "Which size for table 4?"
    (event,) = interactive(first)
    assert event.prompt == "Which size for table 4?"


async def test_a_collect_question_fills_its_placeholders() -> None:
    ask_name = collect("ask_name", fields=["name"], question="Hello! Your name, please? (${input.shop})")
    first = await pizza_agent(ScriptedModel(), first=ask_name).turn(None, Start("pizza", key="k",
                                                                               input={"shop": "Via Roma"}))
    assert first.text == "Hello! Your name, please? (Via Roma)"


async def test_any_other_message_asks_the_model_constrained_to_the_choice_ids() -> None:
    model = ScriptedModel(decide=[{"choice": "xl"}])
    agent = pizza_agent(model)
    first = await agent.turn(None, Start("pizza", key="k"))
    result = await agent.turn(first.session, Message("the biggest one you have, we are six"))
    assert result.text == "A large one!"
    (call,) = model.calls
    assert call.call == "decide"
    assert call.request.response_format.schema["properties"]["choice"]["enum"] == ["Small", "L", "xl", "__none"]
    assert model.unused() == {}


async def test_none_of_the_choices_lets_the_author_stay() -> None:
    model = ScriptedModel(decide=[{"choice": "__none"}])
    agent = pizza_agent(model, prompt=None)
    first = await agent.turn(None, Start("pizza", key="k"))
    assert first.text == ""  # no prompt: nothing is said, the interactive event carries the options
    result = await agent.turn(first.session, Message("what toppings do you have?"))
    assert result.session.runs[0].node == "size" and result.session.runs[0].status == "asking"


async def test_a_choice_decide_reached_after_the_message_was_used_waits_instead_of_deciding() -> None:
    model = ScriptedModel(extract=[{"name": "Ana"}])
    ask_name = collect("ask_name", fields=["name"], ask="Your name?")
    agent = pizza_agent(model, first=ask_name)
    first = await agent.turn(None, Start("pizza", key="k"))
    assert first.text == "Your name?"
    result = await agent.turn(first.session, Message("Ana"))
    assert result.text == "Which size?"
    assert [c.call for c in model.calls] == ["extract"]  # no decide call on the already-used message
    assert result.session.runs[0].node == "size"
    events = [e.type for e in result.events]
    assert events[events.index("flow-transition"):events.index("flow-transition") + 3] == [
        "flow-transition", "node-enter", "interactive"]


async def test_a_collect_with_choices_announces_them_and_a_tapped_label_fills_its_field() -> None:
    class Size(BaseModel):
        size: str

    pick = collect("pick", schema=Size, ask="Which size?", choices=["Small", ("L", "Large")],
                   on_complete=lambda data, state: goto("done", data=data))
    done = reply("done", response="Size ${size}.", next=end())
    agent = Agent("Bot", flows=[Flow("f", nodes=[pick, done])], idle="silent").with_clock(
        FakeClock(), SequentialIds("s")).with_model(ScriptedModel())
    first = await agent.turn(None, Start("f", key="k"))
    (event,) = interactive(first)
    assert (event.node, event.prompt) == ("pick", "Which size?")
    assert [o["label"] for o in event.options] == ["Small", "Large"]
    result = await agent.turn(first.session, Message("large"))
    assert result.text == "Size L."
    assert result.llm_calls == 0


# --------------------------------------------------------------------------- definition


def test_choices_on_a_collect_of_two_fields_are_refused() -> None:
    class Two(BaseModel):
        a: str
        b: str

    node = collect("c", schema=Two, choices=["x", "y"])
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[node])
    assert [(i.code, i.node, i.path) for i in info.value.issues] == [("invalid-option", "c", "nodes.0.choices")]


def test_a_decide_schema_without_a_choice_field_is_refused() -> None:
    class Yes(BaseModel):
        yes: bool

    node = decide("d", schema=Yes, choices=["a"], decide=lambda d, s: end())
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[node])
    assert [(i.code, i.path) for i in info.value.issues] == [("invalid-option", "nodes.0.schema")]


@pytest.mark.parametrize("choices", [["a", "A"], ["a", 3], [("x", "")], ["__none"]],
                         ids=["confusable", "not-a-choice", "blank-label", "reserved"])
def test_bad_choices_are_refused_with_a_code(choices: list[Any]) -> None:
    node = decide("d", choices=choices, decide=lambda d, s: end())
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[node])
    assert {(i.code, i.path) for i in info.value.issues} == {("invalid-option", "nodes.0.choices")}


def test_a_decide_with_neither_schema_nor_choices_is_refused_when_defined() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        decide("d", decide=lambda d, s: end())
    assert info.value.code == "invalid-option" and info.value.issues[0].node == "d"


async def test_a_model_pick_outside_the_choices_is_refused_by_the_sent_schema() -> None:
    from tether.errors import ModelError

    model = ScriptedModel(decide=[{"choice": "medium"}])
    agent = pizza_agent(model)
    first = await agent.turn(None, Start("pizza", key="k"))
    with pytest.raises(ModelError) as info:
        await agent.turn(first.session, Message("something in between"))
    assert info.value.kind == "invalid" and "'size'" in info.value.message


def test_choices_for_an_enum_field_must_be_among_its_values() -> None:
    node = collect("pick", fields=["size"], choices=["S", ("XL", "Extra large")])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", fields={"size": Field("string", enum=("S", "M", "L"))}, flows=[Flow("f", nodes=[node])])
    assert [(i.code, i.node, i.path) for i in info.value.issues] == [("invalid-option", "pick", "choices")]
    assert "'XL'" in str(info.value)
    Agent("Bot", fields={"size": Field("string", enum=("S", "XL"))}, flows=[Flow("f", nodes=[node])])
