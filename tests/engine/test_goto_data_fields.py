"""A transition's ``data`` that names a declared agent field writes the session's field: it
outlives the run (as a collected value does) and a later flow finds it known; any other key is
the run's own state and ends with the run."""

from __future__ import annotations

from typing import Any

from tether import Agent, Field, Flow, Message, action, collect, end, goto, on_message, reply, whole_message
from tether.testing import FakeClock, SequentialIds


def book(state: dict[str, Any], ctx: Any) -> Any:
    return goto("booked", data={"tracking_id": "trk_9", "note": "fragile"})


def agent() -> Agent:
    ship = Flow("ship", "Book a shipment", nodes=[
        action("book", book),
        reply("booked", response="Booked: ${tracking_id} (${note}).", next=end("booked"))],
        on=[on_message("ship", repeat="always")])
    track = Flow("track", "Tracking", nodes=[
        collect("ask_id", fields=["tracking_id"], ask="Which tracking id?"),
        reply("told", response="Tracking ${tracking_id}.", next=end("told"))],
        on=[on_message("tracking", repeat="always")])
    return Agent("Ava", fields={"tracking_id": Field("string", extract="asked")}, flows=[ship, track],
                 idle="silent").with_clock(FakeClock(), SequentialIds("s"))


async def test_a_declared_field_in_goto_data_outlives_the_run() -> None:
    bot = agent()
    booked = await bot.turn(None, Message("ship it"))
    assert booked.text == "Booked: trk_9 (fragile)." and booked.session.runs == []
    assert booked.session.data == {"tracking_id": "trk_9"}  # "note" was the run's own state
    told = await bot.turn(booked.session, Message("tracking?"))
    assert told.text == "Tracking trk_9." and told.llm_calls == 0  # known: not asked again


async def test_goto_data_replaces_the_session_value_and_leaves_no_shadow_in_the_run() -> None:
    def rebook(state: dict[str, Any], ctx: Any) -> Any:
        assert state["tracking_id"] == "old"
        return goto("booked", data={"tracking_id": "new"})

    flow = Flow("ship", "Book", nodes=[
        collect("ask", fields=["tracking_id"], ask="Old id?", resolvers=[whole_message("tracking_id")]),
        action("rebook", rebook),
        reply("booked", response="Now ${tracking_id}.", next=end("booked"))], on=[on_message()])
    bot = Agent("Ava", fields={"tracking_id": Field("string")}, flows=[flow], idle="silent")
    result = await bot.with_clock(FakeClock(), SequentialIds("s")).turn(None, Message("old"))
    assert result.session.data["tracking_id"] == "new" and result.text == "Now new."
