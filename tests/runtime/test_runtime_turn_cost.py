"""What a hosted turn costs (issue 17): each event is converted to its stored form once, the
document is serialized and validated once per save, and the document keeps no outcome history
(only a node's current retry streak)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import SpyStore, relay_agent

from tether import Agent, Flow, Message, end, on_message, reply, stay
from tether.engine.core import events as events_module
from tether.runtime import Runtime
from tether.stores import SQLiteStore


async def test_each_event_is_converted_once_although_the_turn_saves_three_times(
    make_runtime: Callable[..., Runtime], spy: SpyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted: list[Any] = []
    names_of = events_module._field_names  # read once per stored form built

    def counting(cls: type) -> Any:
        converted.append(cls)
        return names_of(cls)

    monkeypatch.setattr(events_module, "_field_names", counting)
    runtime = make_runtime(relay_agent())
    response = await runtime.run("Relay", Message("a", id="a"))
    assert response.success and response.result is not None
    events = response.result.events
    assert len(spy.saves) + 1 == 3  # the create (first checkpoint), the second checkpoint, the final save
    assert len(converted) == len(events) > 3  # once per event, not once per event per write
    stored = await spy.events(response.session)
    assert [e.data for e in stored] == [e.as_dict() for e in events]  # every event written exactly once


def echo_agent() -> Agent:
    echo = reply("echo", response="Noted.", next=stay)
    return Agent("Echo", flows=[Flow("echo", start=echo, nodes=[echo], on=[on_message()])])


async def test_a_long_lived_run_keeps_no_outcome_history_in_the_document(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(echo_agent())
    session_id = None
    for turn in range(60):
        response = await runtime.run("Echo", Message(f"message {turn}", id=f"m{turn}"), session_id=session_id)
        assert response.success and response.result is not None
        assert response.result.outcomes  # the turn reports what it did
        session_id = response.session
    doc = await spy.load(session_id or "")
    assert doc is not None and len(doc.runs) == 1
    assert doc.runs[0].outcomes == []  # was the last 50 outcomes, rewritten by every save


async def test_message_starts_keep_no_claims_and_a_repeated_message_still_starts_nothing(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    done = reply("done", response="Noted.", next=end("done"))
    agent = Agent("Again", flows=[Flow("again", start=done, nodes=[done], on=[on_message(repeat="always")])])
    runtime = make_runtime(agent)
    session_id = None
    for turn in range(60):  # a new run of the flow for every message
        response = await runtime.run("Again", Message(f"message {turn}", id=f"m{turn}"), session_id=session_id)
        assert response.success and response.result is not None and len(response.result.started) == 1
        session_id = response.session
    doc = await spy.load(session_id or "")
    assert doc is not None and doc.claims == {}  # was one claim per start, the last 50 kept in the document
    repeated = await runtime.run("Again", Message("message 59", id="m59"), session_id=session_id)
    assert repeated.result is not None and repeated.result.started == []
    assert "duplicate-input" in repeated.result.codes()


async def test_a_one_save_turn_on_sqlite_makes_one_worker_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lease is an OS lock taken and released on the caller's thread, and the load a point
    read made there too: a turn that saves once makes one call on the store's worker thread, its
    save (was four: the take, the load, the save, the release), and one commit."""
    calls: list[str] = []
    call, write = SQLiteStore._call, SQLiteStore._write

    async def counting(self: SQLiteStore, operation: str, session_id: str | None, fn: Any) -> Any:
        calls.append(operation)
        return await call(self, operation, session_id, fn)

    async def counting_write(self: SQLiteStore, operation: str, session_id: str | None, fn: Any,
                             **options: Any) -> Any:
        calls.append(operation)
        return await write(self, operation, session_id, fn, **options)

    monkeypatch.setattr(SQLiteStore, "_call", counting)
    monkeypatch.setattr(SQLiteStore, "_write", counting_write)
    store = SQLiteStore(tmp_path / "t.db")
    async with Runtime(echo_agent(), store=store) as runtime:
        first = await runtime.run("Echo", Message("one", id="m1"))
        calls.clear()
        second = await runtime.run("Echo", Message("two", id="m2"), session_id=first.session)
        assert second.success and second.session == first.session
        assert calls == ["save"]
        async with store.lease(first.session, timeout=0.5):  # the save released the lease
            pass
        third = await runtime.run("Echo", Message("three", id="m3"), session_id=first.session)
        assert third.success and [m.text for m in await store.transcript(first.session)][-1] == "Noted."
