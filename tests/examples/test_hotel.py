"""The hotel booking example (agent steps): with a scripted model through the Runtime, and with
its offline stand-in. Completion: the closing response says ``completed``, the session is
``completed``, and the next request with its id gets a new session."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

from tether import Message
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel
from tether.testing import tool_calls as calls


@pytest.fixture
def hotel(example: Callable[[str], ModuleType]) -> ModuleType:
    return example("hotel")


async def test_booking_through_tools_then_confirmation_then_the_closing_message(hotel: ModuleType) -> None:
    model = ScriptedModel(agent=[
        "Which dates would you like?",
        calls(("set_dates", {"check_in": "2026-05-04", "check_out": "2026-05-01"})),
        "Check-out must come after check-in. Which dates?",
        calls(("set_dates", {"check_in": "2026-05-01", "check_out": "2026-05-04"})),
        "How many guests?",
        calls(("set_guests", {"guests": 2})),
        "2026-05-01 to 2026-05-04 for 2 guests. Shall I book it?",
        calls(("confirm_booking", {"confirmed": True})),
        "Booked! Your reference is HTL-20260501-2. Goodbye!",
        "Hello again! Which dates would you like?",
    ])
    store = MemoryStore()
    runtime = Runtime(hotel.agent.with_model(model), store=store, clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("hi"))
    sid = first.session
    assert first.message == "Which dates would you like?" and not first.completed
    refused = await runtime.run("Harbour", session_id=sid, message=Message("from the 4th of May to the 1st"))
    assert refused.message == "Check-out must come after check-in. Which dates?"
    assert model.calls[2].request.messages[-1].content == \
        "The check-out date must come after the check-in date."
    await runtime.run("Harbour", session_id=sid, message=Message("1 to 4 May 2026"))
    summary = await runtime.run("Harbour", session_id=sid, message=Message("two of us"))
    assert summary.message == "2026-05-01 to 2026-05-04 for 2 guests. Shall I book it?"
    assert model.calls[6].request.system.startswith("Read back the booking: 2026-05-01 to 2026-05-04, 2 guest(s).")
    closing = await runtime.run("Harbour", session_id=sid, message=Message("yes please"))
    assert closing.success and closing.completed and closing.session == sid
    assert closing.message == "Booked! Your reference is HTL-20260501-2. Goodbye!"
    stored = await store.load(sid)
    assert stored is not None and stored.status == "completed" and stored.runs == []
    assert model.calls[8].request.system.startswith("The room is booked, reference HTL-20260501-2.")
    # a completed session is never resumed: the next request with its id starts a new one
    again = await runtime.run("Harbour", session_id=sid, message=Message("hello again"))
    assert again.session != sid and again.message == "Hello again! Which dates would you like?"
    assert await store.load(again.session) is not None and model.unused() == {}


async def test_terminate_session_goes_to_the_terminal_step_and_completes(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())  # the offline stand-in
    first = await runtime.run("Harbour", session_id=None, message=Message("hi"))
    assert first.message == f"{hotel.WELCOME} {hotel.QUESTIONS['dates']}"
    bye = await runtime.run("Harbour", session_id=first.session, message=Message("actually, stop please"))
    assert bye.completed and bye.session == first.session
    assert bye.message == "Understood, I've closed this conversation. Goodbye!"


async def test_the_offline_stand_in_books_a_room(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    sid = (await runtime.run("Harbour", session_id=None, message=Message("hi"))).session
    dates = await runtime.run("Harbour", session_id=sid, message=Message("2026-05-01 to 2026-05-04"))
    assert dates.message == hotel.QUESTIONS["guests"]
    summary = await runtime.run("Harbour", session_id=sid, message=Message("3"))
    assert summary.message == "Your booking: 2026-05-01 to 2026-05-04, 3 guest(s). Shall I book it (yes/no)?"
    done = await runtime.run("Harbour", session_id=sid, message=Message("yes"))
    assert done.completed and "HTL-20260501-3" in done.message


async def test_the_first_request_holds_the_customers_message_only(hotel: ModuleType) -> None:
    model = ScriptedModel(agent=["Which dates would you like?"])
    runtime = Runtime(hotel.agent.with_model(model), store=MemoryStore(), clock=FakeClock())
    await runtime.run("Harbour", session_id=None, message=Message("hi, a room please"))
    request = model.calls[0].request
    assert [(m.role, m.content) for m in request.messages] == [("user", "hi, a room please")]


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-05-01 to 2026-05-04", ["2026-05-01", "2026-05-04"]),
    ("from 12 March to 15 March", ["2027-03-12", "2027-03-15"]),            # no year: the next 12 March
    ("12/03 - 15/03", ["2027-03-12", "2027-03-15"]),                        # day first
    ("12/03/2027 until the 14th of march", ["2027-03-12", "2027-03-14"]),
    ("March 3rd to March 5, 2027", ["2027-03-03", "2027-03-05"]),
    ("10 December to 2 January", ["2026-12-10", "2027-01-02"]),             # the check-out's year rolls over
    ("next Friday to Sunday", ["2026-12-04", "2026-12-06"]),                # Sunday after the Friday
    ("this friday for two nights", ["2026-12-04"]),
    ("Tuesday", ["2026-12-08"]),                                            # the coming one, never today
    ("tomorrow to saturday", ["2026-12-02", "2026-12-05"]),
    ("31/04 to 2/05", ["2027-05-02"]),                                      # no 31st of April: left out
    ("a room for 2 please", []),
    ("24-27 dec", ["2026-12-24", "2026-12-27"]),                            # two days of one month
    ("30 to 2 jan", ["2027-01-02"]),                                        # not two days of January
    ("the 3rd to 5th of June", ["2027-06-03", "2027-06-05"]),
    ("the 5th to the 8th of june", ["2027-06-05", "2027-06-08"]),
    ("june 5-8", ["2027-06-05", "2027-06-08"]),
    ("from 5 april to 3 april", ["2027-04-05", "2027-04-03"]),             # a check-out before the check-in
    ("2026-12-08 to 2027-12-05", ["2026-12-08", "2027-12-05"]),           # a year said is kept
    ("the 12th for 3 nights", ["2026-12-12"]),                             # a day of this month
    ("the 1st to the 5th", ["2026-12-01", "2026-12-05"]),                  # today is the 1st
    ("the 12th of march to the 15th of march", ["2027-03-12", "2027-03-15"]),
    ("a colleague stayed on the 3rd. I need the 20th to the 22nd", ["2026-12-20", "2026-12-22"]),
    ("a wedding on the 14th, so the 13th to the 15th", ["2026-12-13", "2026-12-15"]),
    ("it's the 2nd time we stay, friday to sunday", ["2026-12-04", "2026-12-06"]),  # not dates: the 2nd time
    ("the 1st floor please, 12 March to 15 March", ["2027-03-12", "2027-03-15"]),
])
def test_read_dates_reads_the_dates_people_type(hotel: ModuleType, text: str, expected: list[str]) -> None:
    today = date(2026, 12, 1)  # a Tuesday
    assert [found.isoformat() for found in hotel.read_dates(text, today)] == expected


async def test_the_stand_in_greets_once_and_reads_typed_dates(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("hi"))
    assert first.message == f"{hotel.WELCOME} {hotel.QUESTIONS['dates']}"
    missed = await runtime.run("Harbour", session_id=first.session, message=Message("sometime soon"))
    assert missed.message == hotel.QUESTIONS["dates"]  # asked again, not welcomed again
    dates = await runtime.run("Harbour", session_id=first.session, message=Message("12 March to 15/03"))
    assert dates.message == hotel.QUESTIONS["guests"]
    summary = await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    assert re.fullmatch(r"Your booking: (\d{4})-03-12 to \1-03-15, 2 guest\(s\)\. Shall I book it \(yes/no\)\?",
                        summary.message or ""), summary.message


async def test_the_stand_in_takes_a_check_in_alone_then_the_check_out_or_the_nights(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("12 March"))
    assert re.fullmatch(r"Check-in on \w+ 12 March\. And the check-out date, or how many nights\?", first.message or "")
    changed = await runtime.run("Harbour", session_id=first.session, message=Message("actually 13 March"))
    assert "Check-in on" in (changed.message or "") and "13 March" in (changed.message or "")
    nights = await runtime.run("Harbour", session_id=first.session, message=Message("three nights"))
    assert nights.message == hotel.QUESTIONS["guests"]
    summary = await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    assert re.fullmatch(r"Your booking: (\d{4})-03-13 to \1-03-16, 2 guest\(s\)\. Shall I book it \(yes/no\)\?",
                        summary.message or ""), summary.message
    other = await runtime.run("Harbour", session_id=None, message=Message("12 March"))
    dated = await runtime.run("Harbour", session_id=other.session, message=Message("15 March"))
    assert dated.message == hotel.QUESTIONS["guests"]
    again = await runtime.run("Harbour", session_id=other.session, message=Message("1"))
    assert re.search(r"-03-12 to \d{4}-03-15, 1 guest", again.message or ""), again.message


@pytest.mark.parametrize(("said", "guests"), [("four people", 4), ("just me", 1), ("2", 2), ("we are three", 3),
                                           ("2 adults and 1 child", 3), ("two adults, one baby", 3),
                                           ("3 guests: 2 adults and 1 child", 3),  # a total is not added again
                                           ("4 people including 2 children", 4),
                                           ("me and 2 kids", 3), ("2 adults and a baby", 3),
                                           ("my wife and I and our 2 kids", 4), ("a couple and 2 kids", 4),
                                           ("5 june to 8 june, 2 of us", 2), ("I and 2 friends", 3),
                                           ("two adults, one teenager", 3), ("me and a friend", 2),
                                           ("2 friends and I", 3), ("a friend recommended you, we're 2 adults", 2)])
async def test_the_stand_in_reads_the_guests_as_people_say_them(hotel: ModuleType, said: str, guests: int) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    summary = await runtime.run("Harbour", session_id=first.session, message=Message(said))
    assert summary.message == f"Your booking: 2026-05-01 to 2026-05-04, {guests} guest(s). Shall I book it (yes/no)?"


async def test_a_stay_over_the_limit_is_refused_and_a_yep_confirms(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-12-08 to 2027-12-05"))
    assert first.message.startswith("We take stays of up to 30 nights in one booking. Which dates")
    sid = first.session
    await runtime.run("Harbour", session_id=sid, message=Message("2026-05-01 to 2026-05-04"))
    summary = await runtime.run("Harbour", session_id=sid, message=Message("2"))
    assert summary.message == "Your booking: 2026-05-01 to 2026-05-04, 2 guest(s). Shall I book it (yes/no)?"
    done = await runtime.run("Harbour", session_id=sid, message=Message("yep"))
    assert done.completed and "HTL-20260501-2" in done.message


async def test_a_yes_that_says_goodbye_books_first(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    done = await runtime.run("Harbour", session_id=first.session, message=Message("yes please, bye"))
    assert done.completed and "HTL-20260501-2" in done.message


async def test_a_check_in_date_that_has_passed_is_refused(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock("2026-05-02T10:00:00Z"))
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    assert first.message.startswith("That check-in date has passed: today is Saturday 02 May 2026. Which dates")
    summary = await runtime.run("Harbour", session_id=first.session, message=Message("2026-05-02 to 2026-05-04"))
    assert summary.message == hotel.QUESTIONS["guests"]  # today is not past


async def test_a_yes_that_asks_for_other_nights_books_nothing(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    again = await runtime.run("Harbour", session_id=first.session, message=Message("yes but make it 3 nights"))
    assert not again.completed and "HTL-" not in again.message
    assert again.message == hotel.QUESTIONS["dates"]


@pytest.mark.parametrize("said", ["just me and my husband", "my wife and I", "the two of us"])
async def test_the_stand_in_counts_a_couple_as_two(hotel: ModuleType, said: str) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    summary = await runtime.run("Harbour", session_id=first.session, message=Message(said))
    assert summary.message == "Your booking: 2026-05-01 to 2026-05-04, 2 guest(s). Shall I book it (yes/no)?"


@pytest.mark.parametrize("said", ["yes, but we'll arrive late in the evening", "yes, see you on Friday!",
                                  "yes actually that's perfect", "yes, but we'll arrive late on Friday",
                                  "yes please, we have 1 baby so a cot would be great",
                                  "yes, confirm. Is breakfast included for the 2 kids?"])
async def test_a_yes_that_changes_no_dates_books(hotel: ModuleType, said: str) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    done = await runtime.run("Harbour", session_id=first.session, message=Message(said))
    assert done.completed and "HTL-20260501-2" in done.message


@pytest.mark.parametrize("said", ["me and my kids", "me and my family"])
async def test_the_stand_in_does_not_guess_a_family_is_two(hotel: ModuleType, said: str) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-04"))
    again = await runtime.run("Harbour", session_id=first.session, message=Message(said))
    assert again.message == hotel.QUESTIONS["guests"]


async def test_a_check_out_before_the_check_in_is_said_so(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("from 5 april to 3 april"))
    assert first.message.startswith("The check-out date must come after the check-in date. Which dates")


async def test_dates_said_again_at_the_guests_question_count_no_guests(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-06-05 to 2026-06-08"))
    again = await runtime.run("Harbour", session_id=first.session, message=Message("5 june to 8 june"))
    assert again.message == hotel.QUESTIONS["guests"]


@pytest.mark.parametrize(("said", "stay"), [("actually can we do friday to monday", "2026-01-09 to 2026-01-12"),
                                            ("yes but make it 3 nights", "2026-05-01 to 2026-05-04"),
                                            ("actually 4 nights", "2026-05-01 to 2026-05-05")])
async def test_other_dates_at_the_confirmation_are_read_back_before_anything_is_booked(
        hotel: ModuleType, said: str, stay: str) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())  # Monday 5 January 2026
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-03"))
    await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    changed = await runtime.run("Harbour", session_id=first.session, message=Message(said))
    assert changed.message == (f"Changed the dates to {stay}. "
                               f"Your booking: {stay}, 2 guest(s). Shall I book it (yes/no)?")
    again = await runtime.run("Harbour", session_id=first.session, message=Message(said.split(" but ")[-1]))
    assert again.message == f"Your booking: {stay}, 2 guest(s). Shall I book it (yes/no)?"  # said again: no change
    done = await runtime.run("Harbour", session_id=first.session, message=Message("yes"))
    assert done.completed and f"HTL-{stay[:10].replace('-', '')}-2" in done.message


async def test_nights_said_at_the_guests_question_count_no_guests_and_both_change_at_the_confirmation(
        hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("2026-05-01 to 2026-05-03"))
    nights = await runtime.run("Harbour", session_id=first.session, message=Message("4 nights"))
    assert nights.message == hotel.QUESTIONS["guests"]
    await runtime.run("Harbour", session_id=first.session, message=Message("2"))
    both = await runtime.run("Harbour", session_id=first.session, message=Message("yes but 3 guests and 4 nights"))
    assert both.message == ("Changed the dates to 2026-05-01 to 2026-05-05, and to 3 guest(s). "
                            "Your booking: 2026-05-01 to 2026-05-05, 3 guest(s). Shall I book it (yes/no)?")


async def test_small_talk_asks_the_question_again_after_a_restart(hotel: ModuleType, tmp_path: Path) -> None:
    # the question asked again is read from the window the store gives back to a new process
    from tether.stores import SQLiteStore

    session, replies = None, []
    for said in ("2026-05-01 to 2026-05-03", "are you a bot?"):
        store = SQLiteStore(tmp_path / "hotel.db")
        runtime = Runtime(hotel.agent, store=store, clock=FakeClock())
        response = await runtime.run("Harbour", session_id=session, message=Message(said))
        session = response.session
        replies.append(response.message)
        await store.close()
    assert replies[-1] == "I'm a virtual assistant, here to help.\n\nHow many guests will stay?"


async def test_guests_said_with_the_dates_go_straight_to_the_confirmation(hotel: ModuleType) -> None:
    model = ScriptedModel(agent=[
        calls(("set_dates", {"check_in": "2026-05-01", "check_out": "2026-05-04", "guests": 2})),
        "2026-05-01 to 2026-05-04 for 2 guests. Shall I book it?",
    ])
    runtime = Runtime(hotel.agent.with_model(model), store=MemoryStore(), clock=FakeClock())
    summary = await runtime.run("Harbour", session_id=None, message=Message("a room for 2 people, 1 to 4 May 2026"))
    assert summary.message == "2026-05-01 to 2026-05-04 for 2 guests. Shall I book it?"
    (set_dates,) = [spec for spec in model.calls[0].request.tools if spec.name == "set_dates"]
    assert "guests" in set_dates.parameters["properties"] and "guests" not in set_dates.parameters["required"]
    assert model.calls[1].request.system.startswith("Read back the booking: 2026-05-01 to 2026-05-04, 2 guest(s).")


async def test_the_stand_in_takes_guests_said_before_the_guests_question(hotel: ModuleType) -> None:
    runtime = Runtime(hotel.agent, store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Harbour", session_id=None, message=Message("a room for 2 adults and a baby please"))
    summary = await runtime.run("Harbour", session_id=first.session, message=Message("1 May 2026 for 3 nights"))
    assert summary.message == "Your booking: 2026-05-01 to 2026-05-04, 3 guest(s). Shall I book it (yes/no)?"
    too_many = await runtime.run("Harbour", session_id=None, message=Message("12 people, 1 to 4 May 2026"))
    assert too_many.message == f"{hotel.TOO_MANY} {hotel.QUESTIONS['guests']}"  # the dates are kept
    fewer = await runtime.run("Harbour", session_id=too_many.session, message=Message("ok, 8 then"))
    assert fewer.message == "Your booking: 2026-05-01 to 2026-05-04, 8 guest(s). Shall I book it (yes/no)?"
