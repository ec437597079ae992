"""Failures are loud (DESIGN §9, issue 16): an action that raises, or calls a tool the agent does
not have, with no ``on_fail`` fails its run: an ``error`` event and the session's error log name
the flow, node and exception, the customer hears the agent's failure reply, and the run degrades
(seed 000 §1.10): the ``escalate`` node if the flow has one, else the flow ends
``error_degraded`` and can be entered again. A returned ``failed()`` result is a decision and
keeps seed 003's rule."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from seed000_helpers import make_agent, say, scripted

from tether import (
    Agent,
    Flow,
    FlowDefinitionError,
    Message,
    NodeFailedError,
    RecoverableToolError,
    Repair,
    action,
    collect,
    end,
    enum_check,
    failed,
    goto,
    on_message,
    reply,
    tool,
)
from tether.flow.agent_def import DEFAULT_FAILURE_REPLY
from tether.flow.resolvers import pattern
from tether.testing import FakeClock, SequentialIds


class Pizza(BaseModel):
    size: str


def pizza_agent(*, tools: list[Any] | None = None, **agent_options: Any) -> Agent:
    """The pizza order of issue 16: collect a size, place the order through the ``place_order``
    tool, confirm with the order id and the delivery time the action stored."""

    async def order(state: dict[str, Any], ctx: Any) -> None:
        receipt = await ctx.tool("place_order", size=state["size"])
        ctx.set(order_id=receipt["id"], minutes=receipt["minutes"])

    nodes = [
        collect("size", schema=Pizza, ask="Which size?", resolvers=[enum_check("size", ["small", "large"])]),
        action("order", order),
        reply("placed", response="Order ${order_id} placed! Your pizza arrives in about ${minutes} minutes.",
              next=end("ordered")),
    ]
    flow = Flow("pizza", "order a pizza", nodes=nodes, on=[on_message()])
    agent = Agent("Pizzeria", flows=[flow], tools=tools or [], idle="silent", **agent_options)
    return agent.with_clock(FakeClock(), SequentialIds("s"))


@tool
def place_order(size: str) -> dict[str, Any]:
    """Place a pizza order."""
    return {"id": f"ord-{size}", "minutes": 25}


async def order_pizza(agent: Agent) -> Any:
    first = await agent.turn(None, Message("I want a pizza", id="m1"))
    assert first.text == "Which size?"
    return await agent.turn(first.session, Message("large", id="m2"))


async def test_the_pizza_order_works_when_the_tool_is_registered() -> None:
    result = await order_pizza(pizza_agent(tools=[place_order]))
    assert result.text == "Order ord-large placed! Your pizza arrives in about 25 minutes."


async def test_an_unregistered_tool_is_not_answered_order_placed() -> None:
    result = await order_pizza(pizza_agent())
    assert "placed" not in result.text
    assert result.text == DEFAULT_FAILURE_REPLY
    assert [(e.flow, e.reason) for e in result.ended] == [("pizza", "error_degraded")]
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.flow == "pizza" and error.node == "order"
    assert "ToolError" in error.error and "place_order" in error.error and "node 'order'" in error.error
    (logged,) = result.session.error
    assert logged.message == error.error and logged.code == "node-failed"
    assert (logged.flow, logged.node) == ("pizza", "order")
    line = next(o for o in result.outcomes if o.code == "action-failed")
    assert line.node_id == "order" and line.status == "failed"
    flow_end = [e for e in result.events if e.type == "flow-end"]
    assert [e.reason for e in flow_end] == ["error_degraded"]


async def test_the_failure_reply_is_authorable_on_the_agent() -> None:
    result = await order_pizza(pizza_agent(failure_reply="Sorry, our oven is down. A human will call you."))
    assert result.text == "Sorry, our oven is down. A human will call you."


@pytest.mark.parametrize("bad", ["", "   ", 42])
def test_a_blank_failure_reply_is_refused_when_defined(bad: Any) -> None:
    with pytest.raises(FlowDefinitionError) as info:
        pizza_agent(failure_reply=bad)
    assert info.value.issues[0].path == "failure_reply"


async def test_an_action_that_raises_without_on_fail_does_not_fall_through() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise RuntimeError("gateway exploded")

    agent = make_agent(action("pay", boom), reply("thanks", response="Paid, thank you!", next=end("paid")))
    result = await say(agent, None)
    assert "Paid" not in result.text and result.text == DEFAULT_FAILURE_REPLY
    assert [e.reason for e in result.ended] == ["error_degraded"]
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.error == "flow 'f', node 'pay': RuntimeError: gateway exploded"
    assert result.session.runs == []


async def test_on_fail_still_routes_a_raised_failure_without_degrading() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise RuntimeError("gateway exploded")

    agent = make_agent(action("pay", boom, on_fail="sorry"), reply("sorry", response="Card declined.", next=end()))
    result = await say(agent, None)
    assert result.text == "Card declined."
    assert not [e for e in result.events if e.type == "error"] and result.session.error == []


async def test_a_returned_failed_result_without_on_fail_continues_with_action_failed() -> None:
    agent = make_agent(action("pay", lambda s, c: failed("gateway down")),
                       reply("next", response="Carrying on.", next=end("carried-on")))
    result = await say(agent, None)
    assert result.text == "Carrying on." and result.ended[0].reason == "carried-on"
    line = next(o for o in result.outcomes if o.code == "action-failed")
    assert line.detail == "gateway down"
    assert not [e for e in result.events if e.type == "error"]


async def test_an_escalate_node_is_dispatched_instead_of_ending() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise ValueError("no stock")

    escalate = reply("escalate", response="Let me get a colleague.", next=end("escalated"))
    agent = make_agent(action("buy", boom), reply("done", response="Bought!", next=end()), escalate)
    result = await say(agent, None)
    assert [m.text for m in result.messages] == [DEFAULT_FAILURE_REPLY, "Let me get a colleague."]
    assert [e.reason for e in result.ended] == ["escalated"]
    assert [e.type for e in result.events].count("error") == 1


async def test_a_failing_escalate_node_ends_the_flow_and_apologizes_once() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise ValueError("no stock")

    agent = make_agent(action("buy", boom), action("escalate", boom), reply("done", response="Bought!", next=end()))
    result = await say(agent, None)
    assert [m.text for m in result.messages] == [DEFAULT_FAILURE_REPLY]
    assert [e.reason for e in result.ended] == ["error_degraded"]
    assert [e.node for e in result.events if e.type == "error"] == ["buy", "escalate"]


async def test_a_degraded_flow_can_be_entered_again_and_the_session_stays_usable() -> None:
    calls = [0]

    def flaky(state: Any, ctx: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise ConnectionError("timeout")
        return None

    agent = make_agent(action("work", flaky), reply("done", response="Done.", next=end("done")))  # on_message once
    first = await say(agent, None, "go", id="m1")
    assert first.ended[0].reason == "error_degraded"
    second = await say(agent, first.session, "again", id="m2")
    assert second.text == "Done." and second.ended[0].reason == "done"
    third = await say(agent, second.session, "and again", id="m3")
    assert third.started == [] and third.text == ""  # a completed once-flow stays claimed


async def test_an_exception_in_other_user_code_degrades_naming_flow_and_node() -> None:
    broken = reply("greet", response=lambda state: state["missing"], next=end("done"))
    result = await say(make_agent(broken), None)
    assert result.text == DEFAULT_FAILURE_REPLY and result.ended[0].reason == "error_degraded"
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.node == "greet" and "KeyError" in error.error and "flow 'f'" in error.error


async def test_an_unknown_registered_action_name_at_run_time_degrades() -> None:
    from tether.flow.nodes import do

    flow = Flow("f", nodes=[do("charge", "charge_card"), reply("ok", response="Charged.", next=end())],
                on=[on_message()])
    agent = Agent("Tester", flows=[flow], actions={"charge_card": lambda params, ctx: None}, idle="silent")
    agent.actions.pop("charge_card")  # removed after construction (construction refuses an unknown one)
    result = await say(agent, None)
    assert result.text == DEFAULT_FAILURE_REPLY
    assert 'unknown action "charge_card"' in result.session.error[0].message


# --------------------------------------------------------------------------- recoverable tool errors


class Address(BaseModel):
    address: str


def shipping_agent(book: Any, *, with_collect: bool = True) -> Agent:
    nodes: list[Any] = []
    if with_collect:
        nodes.append(collect("address", schema=Address, ask="Where should we ship it?",
                             resolvers=[pattern("address", r"\d+ [a-z ]+")]))
    nodes += [action("book", book), reply("booked", response="Booked to ${address}.", next=end("booked"))]
    flow = Flow("ship", "ship a parcel", nodes=nodes, on=[on_message()])
    return Agent("Shipper", flows=[flow], idle="silent").with_clock(FakeClock(), SequentialIds("s"))


def carrier(state: dict[str, Any], ctx: Any) -> None:
    if "nowhere" in state["address"]:
        raise RecoverableToolError("carrier: address not deliverable",
                                   user_message="The carrier cannot deliver to that address.")


async def test_a_recoverable_tool_error_collects_again_instead_of_degrading() -> None:
    agent = shipping_agent(carrier)
    first = await agent.turn(None, Message("ship please", id="m1"))
    second = await agent.turn(first.session, Message("1 nowhere road", id="m2"))
    assert [m.text for m in second.messages] == ["The carrier cannot deliver to that address.",
                                                 "Where should we ship it?"]
    assert second.ended == [] and not [e for e in second.events if e.type == "error"]
    (run,) = second.session.runs
    assert run.node == "address" and run.status == "asking" and "address" not in run.state
    assert any(o.code == "recollect" for o in second.outcomes)
    third = await agent.turn(second.session, Message("5 main street", id="m3"))
    assert third.text == "Booked to 5 main street." and third.ended[0].reason == "booked"


async def test_a_recoverable_tool_error_with_no_earlier_collect_degrades() -> None:
    def book(state: dict[str, Any], ctx: Any) -> None:
        raise RecoverableToolError("carrier down")

    result = await shipping_agent(book, with_collect=False).turn(None, Message("ship please"))
    assert result.text == DEFAULT_FAILURE_REPLY and result.ended[0].reason == "error_degraded"
    assert "RecoverableToolError: carrier down" in result.session.error[0].message


def test_the_new_errors_have_stable_codes() -> None:
    assert RecoverableToolError("x").code == "recoverable-tool-error"
    assert RecoverableToolError("x", user_message="y").user_message == "y"
    assert NodeFailedError("x", flow="f", node="n").code == "node-failed"


# --------------------------------------------------------------------------- template placeholders


async def test_a_placeholder_with_no_value_fails_loudly_naming_flow_node_and_placeholder() -> None:
    agent = make_agent(action("a", lambda s, c: None), reply("confirm", response="Order ${order_id} placed!",
                                                                 next=end()))
    result = await say(agent, None)
    assert result.text == DEFAULT_FAILURE_REPLY and "Order" not in result.text
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.node == "confirm" and "{order_id}" in error.error and "flow 'f'" in error.error
    assert "TemplatePlaceholderError" in error.error and "response" in error.error


async def test_reply_instructions_are_a_template_filled_from_the_state() -> None:
    model = scripted(speak=[{"message": "Booked, tracking trk_1."}])
    start = action("book", lambda s, c: goto("confirm", data={"tracking_id": "trk_1"}))
    confirm = reply("confirm", instructions="Confirm the booking with tracking id ${tracking_id}.", next=end())
    result = await say(make_agent(start, confirm, model=model), None)
    assert result.text == "Booked, tracking trk_1."
    assert "Confirm the booking with tracking id trk_1." in model.calls[0].request.instructions


async def test_a_missing_placeholder_in_instructions_fails_before_the_model_is_called() -> None:
    model = scripted()  # no speak reply scripted: a speak call would fail the test
    confirm = reply("confirm", instructions="Confirm the booking with tracking id ${tracking_id}.", next=end())
    result = await say(make_agent(action("book", lambda s, c: None), confirm, model=model), None)
    assert model.calls == [] and result.text == DEFAULT_FAILURE_REPLY
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.node == "confirm" and "{tracking_id}" in error.error and "instructions" in error.error
    assert result.ended[0].reason == "error_degraded"


async def test_a_missing_placeholder_in_a_fallback_fails_loudly() -> None:
    confirm = reply("confirm", instructions="Confirm.", fallback="Booked: ${tracking_id}.", next=end())
    result = await say(make_agent(action("book", lambda s, c: None), confirm), None)  # no model: the fallback
    assert result.text == DEFAULT_FAILURE_REPLY and "Booked" not in result.text
    assert "fallback" in result.session.error[0].message


async def test_collect_asks_are_templates_too() -> None:
    ask = collect("size", schema=Pizza, ask="Which size for ${name}?")
    start = action("hello", lambda s, c: goto("size", data={"name": "Ada"}))
    result = await say(make_agent(start, ask), None)
    assert result.text == "Which size for Ada?"
    broken = make_agent(action("hello", lambda s, c: None), collect("size", schema=Pizza, ask={"size": "${who}?"}))
    failed_ask = await say(broken, None)
    assert failed_ask.text == DEFAULT_FAILURE_REPLY and "ask.size" in failed_ask.session.error[0].message


async def test_a_next_function_that_raises_after_a_model_reply_degrades() -> None:
    def after(turn: Any, state: Any) -> Any:
        raise LookupError("no such branch")

    model = scripted(speak=[{"message": "Here you go."}])
    result = await say(make_agent(reply("answer", instructions="Answer.", next=after), model=model), None)
    assert [m.text for m in result.messages] == ["Here you go.", DEFAULT_FAILURE_REPLY]
    assert result.ended[0].reason == "error_degraded"
    assert "LookupError: no such branch" in result.session.error[0].message


async def test_an_escalate_node_that_escalates_hands_the_conversation_to_a_human() -> None:
    from tether import escalate

    def boom(state: Any, ctx: Any) -> Any:
        raise ValueError("no stock")

    agent = make_agent(action("buy", boom), reply("done", response="Bought!", next=end()),
                       action("escalate", lambda s, c: escalate("a step failed")))
    result = await say(agent, None)
    # the apology, then the customer is told a person takes over (the cannot-handle repair pattern)
    assert [m.text for m in result.messages] == [DEFAULT_FAILURE_REPLY, Repair().handoff]
    assert result.status == "handoff" and result.handoff is not None and result.handoff.agent == "human"


async def test_the_failure_reply_reaches_turn_stream_consumers_as_deltas() -> None:
    def boom(state: Any, ctx: Any) -> Any:
        raise RuntimeError("gateway exploded")

    agent = make_agent(action("pay", boom), reply("thanks", response="Paid!", next=end()))
    chunks = [chunk async for chunk in agent.turn_stream(None, Message("pay"))]
    assert "".join(c.delta for c in chunks if not c.done) == DEFAULT_FAILURE_REPLY
    final = chunks[-1].result
    assert final is not None and final.text == DEFAULT_FAILURE_REPLY


async def test_an_action_that_declares_uses_may_call_only_those_tools() -> None:
    @tool
    def refund(size: str) -> str:
        """Refund."""
        return size

    async def order(state: dict[str, Any], ctx: Any) -> None:
        await ctx.tool("refund", size="large")  # registered on the agent, but not declared

    flow = Flow("pizza", nodes=[action("order", order, uses=["place_order"]), reply("ok", response="Placed!",
                                                                                  next=end())], on=[on_message()])
    agent = Agent("P", flows=[flow], tools=[place_order, refund], idle="silent")
    result = await agent.turn(None, Message("pizza"))
    assert result.text == DEFAULT_FAILURE_REPLY
    assert "tool 'refund' is not in the action's uses (place_order)" in result.session.error[0].message
