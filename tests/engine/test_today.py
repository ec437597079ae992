"""``${today}`` in any text the engine renders, and a date field's schema says what day today
is: a model cannot read "next Friday" as a date without it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tether import Agent, Field, Flow, Message, agent, collect, end, on_message, reply
from tether.errors import FlowDefinitionError
from tether.testing import FakeClock, ScriptedModel, SequentialIds

THURSDAY = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


def clocked(bot: Agent) -> Agent:
    return bot.with_clock(FakeClock(THURSDAY), SequentialIds("s"))


async def test_today_fills_a_reply_and_a_field_of_that_name_wins() -> None:
    flow = Flow("f", "d", nodes=[reply("r", response="It is ${today}.", next=end("told"))], on=[on_message()])
    result = await clocked(Agent("A", flows=[flow])).turn(None, Message("hi"))
    assert result.text == "It is Thursday, 2026-12-03."
    own = Flow("f", "d", nodes=[collect("c", fields=["today"], ask="Which day?", question="Which day?"),
                                reply("r", response="It is ${today}.", next=end("told"))], on=[on_message()])
    bot = clocked(Agent("A", flows=[own], fields={"today": Field("string")}))
    asked = await bot.turn(None, Message("hi"))
    assert asked.text == "Which day?"


async def test_an_agent_steps_prompt_reads_today() -> None:
    model = ScriptedModel(agent=["Which dates?"])
    step = agent("dates", prompt="Today is ${today}. Ask for the dates.")
    bot = clocked(Agent("A", flows=[Flow("f", "d", nodes=[step], on=[on_message()])]).with_model(model))
    await bot.turn(None, Message("a room please"))
    (request,) = [c.request for c in model.calls if c.call == "agent"]
    assert request.system == "Today is Thursday, 2026-12-03. Ask for the dates."


def test_an_unknown_placeholder_is_still_refused() -> None:
    flow = Flow("f", "d", nodes=[reply("r", response="It is ${tday}.", next=end("told"))], on=[on_message()])
    with pytest.raises(FlowDefinitionError, match=r"\$\{tday\}"):
        Agent("A", flows=[flow])


async def test_a_date_fields_schema_says_what_day_today_is() -> None:
    model = ScriptedModel(extract=[{"arrival": "2026-12-11"}])
    step = collect("when", fields=["arrival"], ask="When do you arrive?")
    done = reply("ok", response="Arriving ${arrival}.", next=end("ok"))
    fields = {"arrival": Field("date", description="The arrival date"), "name": Field("string")}
    bot = clocked(Agent("A", fields=fields, flows=[Flow("f", "d", nodes=[step, done], on=[on_message()])]))
    result = await bot.with_model(model).turn(None, Message("next friday"))
    assert result.text == "Arriving 2026-12-11."
    (request,) = [c.request for c in model.calls]
    (submit,) = request.tools  # the extraction call's one tool: its parameters are the fields' schemas
    arrival = submit.parameters["properties"]["arrival"]
    assert arrival["description"] == "The arrival date (today is Thursday, 2026-12-03)"


async def test_the_understand_calls_date_field_says_what_day_today_is() -> None:
    model = ScriptedModel(understand=[{"flows": {"book": 90, "cancel": 0}, "fields": {"arrival": "2026-12-11"}}])
    book = Flow("book", "Book a room", nodes=[collect("when", fields=["arrival"], ask="When?"),
                                               reply("ok", response="Arriving ${arrival}.", next=end("ok"))],
                on=[on_message("book")])
    cancel = Flow("cancel", "Cancel a booking", nodes=[reply("no", response="Cancelled.", next=end("x"))],
                  on=[on_message("cancel my booking")])
    fields = {"arrival": Field("date", description="The arrival date")}
    bot = clocked(Agent("A", fields=fields, flows=[book, cancel]))
    result = await bot.with_model(model).turn(None, Message("book a room for next friday"))
    assert result.text == "Arriving 2026-12-11."
    (request,) = [c.request for c in model.calls]
    schema = request.response_format.schema  # type: ignore[union-attr]
    assert schema["properties"]["fields"]["properties"]["arrival"]["description"] == \
        "The arrival date (today is Thursday, 2026-12-03)"
