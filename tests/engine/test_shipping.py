"""The seed 000 shipping example, end to end through Agent.turn with a scripted model."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from example_modules import load_example
from tether import Message, Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds


@pytest.fixture
def shipping() -> ModuleType:
    return load_example("shipping")


def event_types(result: Any) -> list[str]:
    return [e.type for e in result.events]


async def test_one_message_books_and_confirms(shipping: ModuleType) -> None:
    calls: list[str] = []
    original = shipping.book_shipment.fn

    async def counting(address: str) -> dict[str, str]:
        calls.append(address)
        return dict(await original(address))

    agent = shipping.agent.with_model(ScriptedModel(
        extract=[{"address": "Main Street"}],
        summary=["Customer wants a shipment to Main Street."],
        speak=["Booked! Your tracking id is trk_11."],
    )).with_clock(FakeClock(), SequentialIds("s"))
    object.__setattr__(shipping.book_shipment, "fn", counting)
    try:
        result = await agent.turn(None, Message("ship to Main Street"))
    finally:
        object.__setattr__(shipping.book_shipment, "fn", original)
    model = agent.model_for("default")
    assert result.llm_calls == 3  # extract, summary, speak
    assert [c.call for c in model.calls] == ["extract", "summary", "speak"]
    assert model.unused() == {}
    assert calls == ["Main Street"]  # the tool ran exactly once
    assert result.status == "ended" and result.session.runs == []
    assert [(e.run_id, e.reason) for e in result.ended] == [("ship#" + str(int(FakeClock().now().timestamp() * 1000))
                                                             + "-1", "booked")]  # <ms>-<message seq>
    assert result.text == "Booked! Your tracking id is trk_11."
    assert [m.kind for m in result.messages] == ["ai"]
    assert [(m.role, m.text) for m in result.session.messages] == [
        ("user", "ship to Main Street"), ("assistant", "Booked! Your tracking id is trk_11.")]
    assert event_types(result) == [
        "flow-enter", "node-enter",                               # start at get_address
        "collect-update",
        "node-exit", "flow-transition", "node-enter",            # get_address -> book
        "node-exit", "flow-transition", "node-enter",            # book -> done
        "flow-end",
    ]
    transitions = [(e.source, e.target) for e in result.events if e.type == "flow-transition"]
    assert transitions == [("get_address", "book"), ("book", "done")]
    # the extraction call offered exactly the missing field through submit_get_address_data
    extract = model.calls[0].request
    assert [t.name for t in extract.tools] == ["submit_get_address_data"]
    assert "ship to Main Street" in extract.tools[0].description
    # reset_with_summary: the speak call sees the summary note, not the old turns
    speak = model.calls[2].request
    assert speak.messages[0].content == "Previous conversation summary: Customer wants a shipment to Main Street."
    assert all(m.role == "system" for m in speak.messages)


async def test_missing_address_asks_then_books_next_turn(shipping: ModuleType) -> None:
    model = ScriptedModel(extract=[{}, {"address": "Elm Road"}], summary=["Wants a shipment to Elm Road."],
                          speak=["Booked, tracking trk_8."])
    agent = shipping.agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    first = await agent.turn(None, Message("I want to ship something", id="m1"))
    assert first.llm_calls == 1
    assert first.text == "Which address should the shipment go to?"
    assert first.messages[0].kind == "verbatim"
    assert first.status == "awaiting_user"
    (run,) = first.session.runs
    assert run.node == "get_address" and run.status == "asking"
    assert run.state["__collectTurns_get_address"] == 1
    # the run round-trips through JSON and resumes at the node it left
    restored = Session.model_validate_json(first.session.model_dump_json())
    second = await agent.turn(restored, Message("Elm Road please", id="m2"))
    assert second.llm_calls == 3
    assert second.text == "Booked, tracking trk_8."
    assert second.session.runs == [] and second.ended[0].reason == "booked"
    assert model.unused() == {}


async def test_verbatim_guard_drops_a_guessed_address(shipping: ModuleType) -> None:
    model = ScriptedModel(extract=[{"address": "10 Downing Street"}])
    agent = shipping.agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("ship it to my office"))
    assert result.text == "Which address should the shipment go to?"
    update = next(e for e in result.events if e.type == "collect-update")
    assert update.rejected == ["address"] and update.missing == ["address"]


async def test_a_house_number_address_resolves_with_no_extraction_call(shipping: ModuleType) -> None:
    model = ScriptedModel(summary=["Wants a shipment to 1 Main St."], speak=["Booked! Tracking trk_9."])
    agent = shipping.agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("ship to 1 Main St"))
    assert [c.call for c in model.calls] == ["summary", "speak"]  # the tier-0 resolver found the address
    assert result.llm_calls == 2 and result.ended[0].reason == "booked"
    update = next(e for e in result.events if e.type == "collect-update")
    assert update.sources == {"address": "deterministic"}


async def test_with_no_model_the_conversation_still_completes(shipping: ModuleType) -> None:
    agent = shipping.agent.with_clock(FakeClock(), SequentialIds("s"))
    first = await agent.turn(None, Message("I'd like to ship a parcel", id="m1"))
    assert first.text == "Which address should the shipment go to?" and first.llm_calls == 0
    second = await agent.turn(first.session, Message("42 Harbour Lane, Bristol", id="m2"))
    assert second.text == "Booked! Your shipment to 42 Harbour Lane, Bristol has tracking id trk_24."
    assert second.llm_calls == 0 and second.ended[0].reason == "booked"


@pytest.mark.parametrize("said", ["hi, I have 2 packages to send", "how much does it cost to ship 1 box?",
                                  "can you ship something for me by the 5th?", "it weighs 3 kg"])
async def test_with_no_model_a_number_alone_is_not_an_address(shipping: ModuleType, said: str) -> None:
    agent = shipping.agent.with_clock(FakeClock(), SequentialIds("s"))
    first = await agent.turn(None, Message(said, id="m1"))
    assert first.text == "Which address should the shipment go to?" and not first.ended
    second = await agent.turn(first.session, Message("please ship it to 5 main st, springfield, thanks!", id="m2"))
    assert second.text == "Booked! Your shipment to 5 main st, springfield has tracking id trk_22."


@pytest.mark.parametrize(("said", "address"), [
    ("22 Acacia Way, Leeds", "22 Acacia Way, Leeds"),
    ("1 Infinite Loop, Cupertino", "1 Infinite Loop, Cupertino"),
    ("123 N. Main St, Springfield", "123 N. Main St, Springfield"),
    ("12 Rue de Rivoli, Paris", "12 Rue de Rivoli, Paris"),
    ("10 Downing Street, London SW1A 2AA", "10 Downing Street, London SW1A 2AA"),
    ("1600 Pennsylvania Avenue NW, Washington, DC 20500", "1600 Pennsylvania Avenue NW, Washington, DC 20500"),
    ("350 Fifth Avenue Apt 4B, New York, NY 10118", "350 Fifth Avenue Apt 4B, New York, NY 10118"),
    ("Flat 2, 10 High Street, Bristol", "Flat 2, 10 High Street, Bristol"),
    ("ship to 5 Main St, it's 3 kg", "5 Main St"),
    ("1585 Broadway, New York", "1585 Broadway, New York"),
    ("123 W 42nd St, New York", "123 W 42nd St, New York"),
    ("10 The Green, Oxford", "10 The Green, Oxford"),
    ("PO Box 1234, Austin TX", "PO Box 1234, Austin TX"),
    ("Flat 2, 10 High Street, Bristol please", "Flat 2, 10 High Street, Bristol"),
    ("4 Queen's Gardens, Edinburgh EH1 1AA on 3 June", "4 Queen's Gardens, Edinburgh EH1 1AA"),
    ("99 Rue du Bac please", "99 Rue du Bac"),
    ("21 Main Street, can you change it?", "21 Main Street"),
    ("77 HIGH ST, CAMBRIDGE NOW", "77 HIGH ST, CAMBRIDGE"),
])
async def test_with_no_model_the_addresses_people_write_are_read_whole(shipping: ModuleType, said: str,
                                                                        address: str) -> None:
    agent = shipping.agent.with_clock(FakeClock(), SequentialIds("s"))
    first = await agent.turn(None, Message("I'd like to ship a parcel", id="m1"))
    booked = await agent.turn(first.session, Message(said, id="m2"))
    assert booked.text == f"Booked! Your shipment to {address} has tracking id trk_{len(address)}."
