"""The model loop of an agent step: attempts (empty reply, check_response), the tool-round bound,
on_response, structured output and content type, the call count apart from the turn budget, and
the journal that keeps a re-dispatch from calling the model or a tool twice."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tether import Agent, Flow, Message, agent, go, on_message, stay, tool
from tether.models.types import ModelResponse
from tether.testing import FakeClock, ScriptedModel, SequentialIds

from .helpers import Chat, calls

charged: list[int] = []


@tool
def charge(amount: int) -> Any:
    """Charge the card."""
    charged.append(amount)
    return go("done").with_state({"charged": amount})


@tool
def ping() -> Any:
    """Ping."""
    return stay("pong")


def bot(**options: Any) -> Agent:
    step = agent("pay", prompt="Take the payment.", tools=[charge, ping], **options)
    done = agent("done", prompt="Say thanks.")
    return Agent("Pay", flows=[Flow("pay", nodes=[step, done], on=[on_message()])])


async def test_an_empty_reply_is_retried_with_the_corrective_message_500ms_later() -> None:
    model = ScriptedModel(agent=["", "How much?"])
    chat = Chat(bot(), model)
    result = await chat.say("hi")
    assert result.text == "How much?" and chat.sleeps == [0.5]
    retry = model.calls[1].request.messages
    assert retry[-1].role == "user" and retry[-1].content == "Follow system prompt and respond properly."
    assert result.agent_calls == 2 and result.llm_calls == 2


async def test_check_response_asks_for_attempts_then_the_step_fails_naming_the_finish_reason() -> None:
    checked: list[str] = []

    def reject_all(response: ModelResponse) -> bool:
        checked.append(response.text)
        return True  # True asks for another attempt

    model = ScriptedModel(agent=[ModelResponse(text=f"try {i}", finish_reason="length") for i in range(3)])
    chat = Chat(bot(check_response=reject_all), model)
    result = await chat.say("hi")
    assert checked == ["try 0", "try 1", "try 2"] and chat.sleeps == [0.5, 0.5]
    assert result.text == chat.agent.failure_reply and [e.reason for e in result.ended] == ["error_degraded"]
    assert chat.session is not None
    assert "LLM call failed. Reason:length. Error:check_response asked for another attempt" in \
        chat.session.error[-1].message


async def test_check_response_false_accepts_and_attempts_are_configurable() -> None:
    model = ScriptedModel(agent=["", "", "", "", "fifth"])
    chat = Chat(bot(retry_attempts=5, retry_delay=0.25), model)
    result = await chat.say("hi")
    assert result.text == "fifth" and chat.sleeps == [0.25] * 4


async def test_tool_rounds_are_bounded_with_a_clear_error() -> None:
    model = ScriptedModel(agent=["Hi", *[calls(("ping", {})) for _ in range(9)]])
    chat = Chat(bot(), model)
    await chat.say("hi")
    result = await chat.say("ping forever")
    assert result.text == chat.agent.failure_reply and model.unused() == {}
    assert chat.session is not None and "more than 8 rounds in one turn (max_tool_rounds)" in \
        chat.session.error[-1].message


async def test_on_response_rewrites_the_text_or_moves() -> None:
    def shout(content: str, ctx: Any) -> Any:
        return go("done") if "later" in ctx.message else content.upper()

    model = ScriptedModel(agent=["how much?", "ok", "Thanks, bye!"])
    chat = Chat(bot(on_response=shout), model)
    assert (await chat.say("hi")).text == "HOW MUCH?"
    moved = await chat.say("see you later")  # (a bare "bye" is the completed repair pattern: no model call)
    assert moved.text == "Thanks, bye!" and chat.node == "done" and moved.agent_calls == 2


class Invoice(BaseModel):
    number: str
    total: float


async def test_structured_output_is_answered_as_json_with_the_steps_content_type() -> None:
    extract = agent("extract", prompt="Extract the invoice.", output_schema=Invoice, content_type="application/json")
    invoices = Agent("Invoices", flows=[Flow("invoices", nodes=[extract], on=[on_message()])])
    model = ScriptedModel(agent=[{"number": "INV-7", "total": 120.5}])
    chat = Chat(invoices, model)
    result = await chat.say("Invoice INV-7, total due 120.50 EUR")
    assert result.text == '{"number": "INV-7", "total": 120.5}' and result.content_type == "application/json"
    request = model.calls[0].request
    assert request.response_format is not None and request.response_format.schema == Invoice.model_json_schema()


async def test_agent_calls_are_counted_apart_and_tallied_into_the_session() -> None:
    model = ScriptedModel(agent=["How much?", calls(("charge", {"amount": 5})), "Thanks!"], usage=True)
    chat = Chat(bot(), model)
    await chat.say("hi")
    result = await chat.say("5 dollars")
    assert result.agent_calls == 2 and result.llm_calls == 2
    assert chat.session is not None and chat.session.usage.agent_calls == 3
    assert chat.session.usage.prompt_tokens > 0 and result.usage.prompt_tokens


async def test_a_redispatch_of_the_same_turn_replays_the_journal_no_second_call_or_charge() -> None:
    charged.clear()
    clock = FakeClock()
    model = ScriptedModel(agent=["How much?", calls(("charge", {"amount": 9})), "Thanks!"])
    pay = bot().with_model(model).with_clock(clock, SequentialIds("s"))
    first = await pay.turn(None, Message("hi"))
    before = first.session
    paid = await pay.turn(before, Message("9 dollars", id="m2"))
    assert charged == [9] and paid.text == "Thanks!" and model.unused() == {}
    # the same turn again from the same document, with what it journaled (as after a crash)
    replayed = await pay.turn(before, Message("9 dollars", id="m2"), journal=tuple(paid.journal))
    assert charged == [9] and replayed.text == "Thanks!" and replayed.agent_calls == 0


async def test_a_step_with_its_own_model_is_served_by_it() -> None:
    own = ScriptedModel(agent=["from the step's own model"])
    step = agent("own", prompt="Hi.", model=own)
    default = ScriptedModel()
    chat = Chat(Agent("Own", flows=[Flow("own", nodes=[step], on=[on_message()])]), default)
    result = await chat.say("hi")
    assert result.text == "from the step's own model" and default.calls == [] and own.unused() == {}


def test_a_steps_model_name_is_checked_before_any_session_io() -> None:
    import pytest

    from tether.errors import ModelConfigurationError
    from tether.runtime import check_model_selections

    step = agent("own", prompt="Hi.", model="nosuchprovider:thing")
    bot_ = Agent("Own", flows=[Flow("own", nodes=[step], on=[on_message()])])
    with pytest.raises(ModelConfigurationError, match="step own/own"):
        check_model_selections(bot_)
