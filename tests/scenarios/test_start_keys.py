"""Start keys: two inputs without ids in the same millisecond each start their flow."""

from __future__ import annotations

from harness import Conversation

from tether import Agent, Event, Flow, Message, Start, end, on_event, on_message, reply


def _booking_agent() -> Agent:
    book = reply("book", response="Booked.", next=lambda turn, state: end("booked"))
    return Agent("Ava", flows=[Flow("booking", "Booking", nodes=[book], on=[on_message(repeat="always")])])


async def test_two_messages_without_ids_in_one_millisecond_both_start() -> None:
    convo = Conversation(_booking_agent())
    first = await convo._turn(Message("book a table"))
    second = await convo._turn(Message("and another one"))  # the fake clock has not moved
    assert [s.flow for s in first.started] == ["booking"]
    assert [s.flow for s in second.started] == ["booking"], second.skipped
    assert second.skipped == [] and second.text == "Booked."
    assert first.started[0].run_id != second.started[0].run_id
    assert [e.reason for e in second.ended] == ["booked"]


async def test_message_keys_are_deterministic_on_replay() -> None:
    convo = Conversation(_booking_agent())
    await convo._turn(Message("one"))
    before = convo.session
    again = await convo.agent.turn(before, Message("two"))
    replay = await convo.agent.turn(before, Message("two"))
    assert again.started[0].run_id == replay.started[0].run_id


async def test_two_events_and_two_starts_without_keys_both_start() -> None:
    done = reply("done", response="Noted.", next=lambda turn, state: end("noted"))
    flow = Flow("paid", "Paid", nodes=[done], on=[on_event("payment", repeat="always")])
    convo = Conversation(Agent("Ava", flows=[flow]))
    first = await convo._turn(Event("payment", {"n": 1}))
    second = await convo._turn(Event("payment", {"n": 2}))
    assert [s.flow for s in first.started] == [s.flow for s in second.started] == ["paid"], second.skipped
    third = await convo._turn(Start("paid"))
    fourth = await convo._turn(Start("paid"))
    assert [s.flow for s in third.started] == [s.flow for s in fourth.started] == ["paid"], fourth.skipped
