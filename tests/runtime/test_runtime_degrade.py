"""Through the Runtime, a failed node degrades its run: the request returns a normal envelope (the
failure reply), the error is in the stored session's error log, the session stays running and
the next message is answered (DESIGN §9: a handled failure is not a session failure)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_helpers import SpyStore

from tether import Agent, Flow, Message, RecoverableToolError, action, collect, end, goto, on_message, reply, start_flow
from tether.flow.agent_def import DEFAULT_FAILURE_REPLY
from tether.flow.resolvers import pattern
from tether.runtime import Runtime


def flaky_agent(broken: list[bool]) -> Agent:
    def charge(state: dict[str, Any], ctx: Any) -> None:
        if broken[0]:
            raise ConnectionError("payment gateway unreachable")

    flow = Flow("pay", nodes=[action("charge", charge), reply("paid", response="Paid.", next=end("paid"))],
                on=[on_message(repeat="always")])
    return Agent("Shop", flows=[flow], idle="silent")


async def test_a_failed_action_returns_the_failure_reply_and_keeps_the_session(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    broken = [True]
    runtime = make_runtime(flaky_agent(broken))
    failed = await runtime.run("Shop", "pay please")
    assert failed.success and failed.code == "error_degraded"  # informational: the turn itself ran
    assert failed.message == DEFAULT_FAILURE_REPLY and failed.completed
    stored = await spy.load(failed.session)
    assert stored is not None and stored.status == "running"
    (logged,) = stored.error
    assert logged.level == "error" and logged.code == "node-failed"
    assert logged.message == "flow 'pay', node 'charge': ConnectionError: payment gateway unreachable"
    broken[0] = False
    again = await runtime.run("Shop", "pay please", session_id=failed.session)
    assert again.success and again.session == failed.session and again.message == "Paid."
    assert again.code is None


async def test_a_recoverable_tool_error_asks_again_through_the_runtime(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    from pydantic import BaseModel

    class Address(BaseModel):
        address: str

    def book(state: dict[str, Any], ctx: Any) -> None:
        if "nowhere" in state["address"]:
            raise RecoverableToolError("undeliverable", user_message="We cannot deliver there.")

    flow = Flow("ship", nodes=[collect("address", schema=Address, ask="Address?",
                                       resolvers=[pattern("address", r"\d+ [a-z ]+")]),
                               action("book", book), reply("booked", response="Booked to ${address}.", next=end())],
                on=[on_message()])
    runtime = make_runtime(Agent("Shipper", flows=[flow], idle="silent"))
    first = await runtime.run("Shipper", "ship it")
    second = await runtime.run("Shipper", "1 nowhere lane", session_id=first.session)
    assert second.success and second.message == "We cannot deliver there.\n\nAddress?"
    third = await runtime.run("Shipper", "2 main street", session_id=first.session)
    assert third.success and third.message == "Booked to 2 main street."
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "running" and stored.error == []


def typo_agent(returned: list[Any]) -> Agent:
    """``place`` returns ``returned[0]``: a typo'd goto, a value that is not a move, or a good goto."""

    @action("place", targets=["placed"])
    async def place(state: dict[str, Any], ctx: Any) -> Any:
        return returned[0]

    flow = Flow("order", nodes=[place, reply("placed", response="Placed.", next=end("ordered"))],
                on=[on_message(repeat="always")])
    return Agent("Shop", flows=[flow], idle="silent", failure_reply="Sorry, the kitchen is confused.")


@pytest.mark.parametrize(("returned", "error"), [
    (goto("plaed"), "TransitionError: goto target 'plaed' is not a node of the flow"),
    (42, "TransitionError: returned 42, which is not a transition"),
    (start_flow("{input.topic}"), "TransitionError: start_flow('{input.topic}') has no value for {input.topic}"),
])
async def test_a_bad_move_from_author_code_degrades_and_the_session_goes_on(
        make_runtime: Callable[..., Runtime], spy: SpyStore, returned: Any, error: str) -> None:
    moves: list[Any] = [returned]
    runtime = make_runtime(typo_agent(moves))
    failed = await runtime.run("Shop", Message("order please", id="m1"))
    assert failed.success and failed.code == "error_degraded" and failed.message == "Sorry, the kitchen is confused."
    stored = await spy.load(failed.session)
    assert stored is not None and stored.status == "running" and stored.runs == []
    (logged,) = stored.error
    assert logged.code == "node-failed" and logged.message.startswith(f"flow 'order', node 'place': {error}")
    events = [e for e in await spy.events(failed.session) if e.type in ("error", "flow-end")]
    assert [(e.type, e.data.get("node") or e.data.get("reason")) for e in events] == [
        ("error", "place"), ("flow-end", "error_degraded")]  # the run left once, degraded
    moves[0] = goto("placed")
    fixed = await runtime.run("Shop", Message("order please", id="m2"), session_id=failed.session)
    assert fixed.success and fixed.session == failed.session and fixed.message == "Placed." and fixed.code is None


async def test_a_trigger_condition_that_raises_degrades_the_turn(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    broken = [True]

    def open_hours(ctx: Any) -> bool:
        if broken[0]:
            raise KeyError("opening_hours")
        return True

    answer = reply("answer", response="We are open.", next=end("answered"))
    flow = Flow("hours", nodes=[answer], on=[on_message(repeat="always", if_=open_hours)])
    runtime = make_runtime(Agent("Shop", flows=[flow], idle="silent"))
    failed = await runtime.run("Shop", Message("are you open?", id="m1"))
    assert failed.success and failed.code == "error_degraded"  # not turn-failed: the author's code failed
    assert failed.message == DEFAULT_FAILURE_REPLY
    stored = await spy.load(failed.session)
    assert stored is not None and stored.status == "running"
    (logged,) = stored.error  # once, though the condition is asked in more than one phase
    assert logged.code == "condition-failed" and logged.flow == "hours"
    assert "open_hours" in logged.message and "KeyError" in logged.message
    assert [e.type for e in await spy.events(failed.session)] == ["error"]
    broken[0] = False
    again = await runtime.run("Shop", Message("and now?", id="m2"), session_id=failed.session)
    assert again.success and again.message == "We are open." and again.session == failed.session
