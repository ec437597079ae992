"""Seed 000, "How each node kind is dispatched": reply (engine-rendered or one model turn, with
interruption), decide (one structured call, then code), action (code with the durable ctx; no
model call)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel
from seed000_helpers import NOW, make_agent, say, scripted, the_run, types

from tether import (
    ModelConfigurationError,
    action,
    decide,
    defer,
    end,
    failed,
    goto,
    ok,
    reply,
    skipped,
    stay,
    tool,
)
from tether.models.types import ModelResponse

# --------------------------------------------------------------------------- reply


async def test_engine_rendered_reply_fills_placeholders_with_no_model_call() -> None:
    start = action("start", lambda s, c: goto("hello", data={"name": "Ada"}))
    hello = reply("hello", response="Hello ${name}!", next=end("done"))
    model = scripted()
    result = await say(make_agent(start, hello, model=model), None)
    assert result.text == "Hello Ada!"
    assert [m.kind for m in result.messages] == ["verbatim"]
    assert result.llm_calls == 0 and model.calls == []


async def test_engine_rendered_reply_may_be_a_callable_of_state() -> None:
    start = action("start", lambda s, c: goto("hello", data={"n": 2}))
    hello = reply("hello", response=lambda state: f"{state['n'] * 21} is the answer", next=end())
    result = await say(make_agent(start, hello), None)
    assert result.text == "42 is the answer" and result.messages[0].kind == "verbatim"


async def test_next_of_an_engine_reply_sees_rendered_engine_and_the_text() -> None:
    turns: list[tuple[str, str]] = []

    def after(turn: Any, state: Any) -> Any:
        turns.append((turn.rendered, turn.text))
        return end()

    await say(make_agent(reply("hello", response="Hi there", next=after)), None)
    assert turns == [("engine", "Hi there")]


async def test_model_reply_makes_one_speak_call_sent_as_ai() -> None:
    turns: list[tuple[str, str]] = []

    def after(turn: Any, state: Any) -> Any:
        turns.append((turn.rendered, turn.text))
        return end("answered")

    model = scripted(speak=["The sky is blue."])
    result = await say(make_agent(reply("answer", instructions="Answer the question.", next=after), model=model),
                       None, "What colour is the sky?")
    assert result.text == "The sky is blue."
    assert [m.kind for m in result.messages] == ["ai"]
    assert turns == [("model", "The sky is blue.")]
    assert result.llm_calls == 1 and model.unused() == {}
    assert [c.call for c in model.calls] == ["speak"]
    assert "Answer the question." in model.calls[0].request.instructions


async def test_model_reply_without_next_stays_and_speaks_again_next_turn() -> None:
    model = scripted(speak=["First.", "Second."])
    agent = make_agent(reply("chat", instructions="Chat."), model=model)
    first = await say(agent, None, "one")
    assert (the_run(first).node, the_run(first).status) == ("chat", "asking")
    second = await say(agent, first.session, "two")
    assert second.text == "Second." and second.llm_calls == 1
    assert model.unused() == {}


async def test_a_model_reply_reached_after_the_turn_spoke_waits_for_the_next_message() -> None:
    model = scripted(speak=["One.", "Two."])
    first_reply = reply("first", instructions="Say one.", next=lambda t, s: goto("second"))
    second_reply = reply("second", instructions="Say two.", next=end("done"))
    agent = make_agent(first_reply, second_reply, model=model)
    first = await say(agent, None, "go")
    assert first.text == "One." and first.llm_calls == 1
    run = the_run(first)
    assert (run.node, run.status) == ("second", "asking")
    second = await say(agent, first.session, "next")
    assert second.text == "Two." and second.llm_calls == 1
    assert second.ended[0].reason == "done"
    assert model.unused() == {}


async def test_an_interrupted_reply_keeps_the_node_and_re_dispatches_it_on_the_next_message() -> None:
    nexts: list[str] = []

    def after(turn: Any, state: Any) -> Any:
        nexts.append(turn.text)
        return end("done")

    model = scripted(speak=[ModelResponse(text="Let me expl", finish_reason="interrupted"), "Full answer."])
    agent = make_agent(reply("explain", instructions="Explain.", next=after), model=model)
    first = await say(agent, None, "explain please")
    run = the_run(first)
    assert (run.node, run.status) == ("explain", "asking")
    assert nexts == []  # next was not applied
    assert first.llm_calls == 1
    second = await say(agent, first.session, "sorry, go on")
    assert nexts == ["Full answer."]
    assert second.ended[0].reason == "done" and second.llm_calls == 1
    assert model.unused() == {}


# --------------------------------------------------------------------------- decide


class Intent(BaseModel):
    intent: Literal["buy", "cancel"]


async def test_decide_makes_one_structured_call_and_branches_in_code() -> None:
    received: list[Any] = []

    def branch(data: Any, state: Any) -> Any:
        received.append(data)
        return goto("buying") if data.intent == "buy" else end("cancelled")

    model = scripted(decide=[{"intent": "buy"}])
    agent = make_agent(
        decide("route", schema=Intent, decide=branch, instructions="What does the customer want?"),
        reply("buying", response="Let's buy.", next=end("bought")),
        model=model,
    )
    result = await say(agent, None, "I want to buy one")
    assert result.text == "Let's buy."
    assert received == [Intent(intent="buy")] and isinstance(received[0], Intent)
    assert [c.call for c in model.calls] == ["decide"]
    request = model.calls[0].request
    assert request.response_format is not None
    assert request.response_format.schema["properties"]["intent"]["enum"] == ["buy", "cancel"]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_decide_sees_the_state() -> None:
    model = scripted(decide=[{"intent": "cancel"}])
    start = action("start", lambda s, c: goto("route", data={"order": "A1"}))
    route = decide("route", schema=Intent, decide=lambda data, state: end(f"{data.intent}:{state['order']}"))
    result = await say(make_agent(start, route, model=model), None)
    assert result.ended[0].reason == "cancel:A1"
    assert result.llm_calls == 1 and model.unused() == {}


async def test_decide_without_a_model_raises_model_configuration_error() -> None:
    agent = make_agent(decide("route", schema=Intent, decide=lambda data, state: end()))
    with pytest.raises(ModelConfigurationError):
        await say(agent, None)


# --------------------------------------------------------------------------- action


@tool
def book_shipment(address: str) -> dict[str, str]:
    """Book a shipment."""
    return {"id": f"trk_{len(address)}"}


async def test_ctx_tool_calls_a_validated_tool_with_no_model_call() -> None:
    async def book(state: Any, ctx: Any) -> Any:
        receipt = await ctx.tool("book_shipment", address="1 Main St")
        return goto("done", data={"tracking_id": receipt["id"]})

    model = scripted()
    agent = make_agent(action("book", book), reply("done", response="Tracking ${tracking_id}", next=end()),
                       model=model, tools=[book_shipment])
    result = await say(agent, None)
    assert result.text == "Tracking trk_9"
    assert result.llm_calls == 0 and model.calls == []


async def test_ctx_tool_with_bad_arguments_is_action_failed_naming_the_tool() -> None:
    async def book(state: Any, ctx: Any) -> Any:
        await ctx.tool("book_shipment", address=None, extra=1)
        return end("unreachable")

    agent = make_agent(action("book", book), tools=[book_shipment])
    result = await say(agent, None)
    line = next(o for o in result.outcomes if o.code == "action-failed")
    assert line.node_id == "book" and "book_shipment" in (line.detail or "")
    assert result.ended[0].reason == "error_degraded"  # a raised failure with no on_fail degrades the run


async def test_ctx_tool_with_an_unknown_tool_is_action_failed() -> None:
    async def book(state: Any, ctx: Any) -> Any:
        await ctx.tool("teleport", to="moon")

    result = await say(make_agent(action("book", book)), None)
    line = next(o for o in result.outcomes if o.code == "action-failed")
    assert "teleport" in (line.detail or "")


async def test_ctx_now_uuid_and_emit() -> None:
    seen: dict[str, Any] = {}

    def run(state: Any, ctx: Any) -> Any:
        seen["now"] = ctx.now()
        seen["uuid"] = ctx.uuid()
        ctx.emit("booked", {"id": 7})
        return end("done")

    result = await say(make_agent(action("a", run)), None)
    assert seen["now"] == NOW
    assert seen["uuid"] == "s-2"  # s-1 is the session id: both come from the injected ids
    custom = [e for e in result.events if e.type == "custom"]
    assert [(e.name, e.data, e.run_id) for e in custom] == [("booked", {"id": 7}, result.ended[0].run_id)]


async def test_action_returning_none_takes_then_which_is_next_by_default() -> None:
    agent = make_agent(action("a", lambda s, c: None), reply("b", response="at b"))
    result = await say(agent, None)
    assert the_run(result).node == "b"
    assert result.codes() == []


async def test_action_returning_none_takes_an_explicit_then() -> None:
    agent = make_agent(action("a", lambda s, c: None, then=end("explicit")), reply("b", response="at b"))
    result = await say(agent, None)
    assert result.ended[0].reason == "explicit"


async def test_an_exception_in_an_action_is_action_failed_taking_on_fail() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise ValueError("card declined")

    agent = make_agent(action("pay", boom, then=end("paid"), on_fail=end("payment-failed")))
    result = await say(agent, None)
    assert result.ended[0].reason == "payment-failed"
    line = next(o for o in result.outcomes if o.code == "action-failed")
    assert (line.status, line.node_id, line.detail) == ("failed", "pay", "card declined")


async def test_an_exception_without_on_fail_fails_the_run_instead_of_taking_then() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise RuntimeError("nope")

    result = await say(make_agent(action("pay", boom, then=end("continued"))), None)
    assert result.ended[0].reason == "error_degraded"  # a crash is not a result (DESIGN §9)
    assert "action-failed" in result.codes()


@pytest.mark.parametrize(
    ("result_value", "code", "reason"),
    [
        (ok(), None, "then"),
        (skipped("not needed"), "action-skipped", "then"),
        (failed("gateway down"), "action-failed", "fail"),
    ],
)
async def test_action_results_produce_outcome_codes(result_value: Any, code: str | None, reason: str) -> None:
    agent = make_agent(action("a", lambda s, c: result_value, then=end("then"), on_fail=end("fail")))
    result = await say(agent, None)
    assert result.ended[0].reason == reason
    codes = [o.code for o in result.outcomes if o.node_id == "a"]
    assert codes == [code]


async def test_defer_parks_the_run_with_a_schedule_entry() -> None:
    from datetime import timedelta

    agent = make_agent(action("a", lambda s, c: defer("5m", "try later")))
    result = await say(agent, None)
    run = the_run(result)
    assert run.status == "waiting" and run.node == "a"
    line = next(o for o in result.outcomes if o.code == "action-deferred")
    assert line.status == "deferred"
    (wake,) = result.schedule
    assert wake.at == NOW + timedelta(minutes=5)
    assert run.waiting is not None and run.waiting.key == wake.key


async def test_action_may_stay() -> None:
    calls: list[int] = []

    def poll(state: Any, ctx: Any) -> Any:
        calls.append(1)
        return stay if len(calls) < 2 else end("ready")

    agent = make_agent(action("poll", poll))
    first = await say(agent, None)
    assert the_run(first).status == "asking"
    second = await say(agent, first.session)
    assert second.ended[0].reason == "ready"
    assert "error" not in types(second)
