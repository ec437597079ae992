"""The compact stored forms of events and journal entries: what is read back is exactly what was
written, on every store, and rows written in the earlier form (one event per row, whole journal
bodies) still read."""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from store_backends import Backend, MemoryBackend, PostgresBackend, SQLiteBackend

import tether.engine
from tether.engine.core.events import (
    CollectUpdate,
    CustomEvent,
    ErrorEvent,
    FlowEnd,
    FlowEnter,
    FlowEvent,
    FlowTransition,
    HandoffEvent,
    NodeEnter,
    NodeExit,
    ReplyWarning,
)
from tether.engine.core.session import Session
from tether.engine.graph.choices import Interactive
from tether.errors import StoreError
from tether.stores import JournalEntry, TurnRecords
from tether.stores._sqlite_io import to_us
from tether.stores.memory import _Records
from tether.stores.record_forms import LAYOUTS, event_row, events_from_row, journal_body
from tether.testing import FakeClock

NewSession = Callable[..., Session]
AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def engine_events(at: datetime) -> list[dict[str, Any]]:
    """One event of every engine type, some with their defaults and some without, over two runs."""
    run, flow = "booking#m1", "booking"
    events: list[FlowEvent] = [
        FlowEnter(run_id=run, flow=flow, at=at),
        NodeEnter(run_id=run, flow=flow, at=at, node="details"),
        Interactive(run_id=run, flow=flow, at=at, node="details", options=[{"id": "a", "label": "A"}]),
        CollectUpdate(run_id=run, flow=flow, at=at, node="details", collected={"day": "friday"}, missing=["name"],
                      sources={"day": "deterministic"}),
        CollectUpdate(run_id=run, flow=flow, at=at, node="details", collected={}, missing=[], sources={},
                      rejected=["party"]),
        ReplyWarning(run_id=run, flow=flow, at=at, call="extract", message="dropped", dropped=["x"]),
        CustomEvent(run_id=run, flow=flow, at=at, name="progress", data={"n": 1, "when": "2026-01-05T09:00:00Z"}),
        NodeExit(run_id=run, flow=flow, at=at, node="details"),
        FlowTransition(run_id=run, flow=flow, at=at, source="details", target="reserve"),
        ErrorEvent(run_id=run, flow=flow, at=at, node="reserve", error="boom"),
        FlowEnd(run_id=run, flow=flow, at=at, reason="booked"),
        FlowEnd(run_id=run, flow=flow, at=at, reason="done", gates=[{"id": "g"}], outcome="ok"),
        HandoffEvent(run_id="other#m1", flow="other", at=at, agent="Billing"),
        ErrorEvent(run_id=None, flow=None, at=at, error="no run"),
        NodeEnter(run_id=run, flow=flow, at=at + timedelta(seconds=1), node="later"),  # another at: kept whole
    ]
    return [event.as_dict() for event in events]


async def test_engine_events_read_back_exactly_as_written(
    backend: Backend, new_session: NewSession, clock: FakeClock
) -> None:
    store = await backend.make()
    first = engine_events(AT)
    second = [{"type": "session.started", "at": clock.now(), "by": "test"}, *engine_events(AT + timedelta(minutes=1))]
    doc = await store.create(new_session(), TurnRecords(events=first))
    await store.save(doc, 0, TurnRecords(events=second))
    stored = await store.events(doc.id)
    assert [e.seq for e in stored] == list(range(1, len(first) + len(second) + 1))
    assert [e.data for e in stored[:len(first)]] == first
    assert [list(e.data) for e in stored[:len(first)]] == [list(e) for e in first]  # key order too
    assert stored[len(first)].data["at"] == clock.now().isoformat().replace("+00:00", "Z")
    assert [e.data for e in stored[len(first) + 1:]] == second[1:]
    assert [e.type for e in stored] == [e["type"] for e in first + second]
    assert stored[-1].at == AT + timedelta(minutes=1, seconds=1) and stored[0].at == AT
    # a read from inside a write's row starts at the right event
    middle = await store.events(doc.id, after=3)
    assert [e.seq for e in middle] == list(range(4, len(stored) + 1))
    assert middle[0].data == first[3]
    assert await store.events(doc.id, after=len(stored)) == []
    # a page: at most ``limit`` events, from inside a row and across into the next
    assert await store.events(doc.id, limit=2) == stored[:2]
    assert await store.events(doc.id, after=3, limit=len(first)) == stored[3:3 + len(first)]
    assert await store.events(doc.id, after=len(stored) - 1, limit=5) == stored[-1:]
    assert await store.events(doc.id, limit=0) == []
    # the newest: the last events, in order, from inside a row too
    assert await store.events(doc.id, newest=2) == stored[-2:]
    assert await store.events(doc.id, newest=len(second) + 1) == stored[-len(second) - 1:]
    assert await store.events(doc.id, after=len(stored) - 3, newest=10) == stored[-3:]
    assert await store.events(doc.id, newest=0) == []
    with pytest.raises(ValueError, match="not both"):
        await store.events(doc.id, limit=1, newest=1)


def test_a_write_of_engine_events_is_one_compact_row() -> None:
    events = engine_events(AT)[7:9]  # node-exit, flow-transition
    row = event_row(TurnRecords.model_construct(events=events))
    assert row is not None and row.size == 2 and row.type == "node-exit" and row.at == AT
    assert json.loads(row.body) == [["booking#m1", "booking", ["node-exit", "details"],
                                     ["flow-transition", "details", "reserve"]]]
    whole = sum(len(json.dumps(e, separators=(",", ":"))) for e in events)
    assert len(row.body) * 2 < whole


def test_a_compact_event_of_an_unknown_type_is_refused_by_name() -> None:
    body = json.dumps([["r", "f", ["node-exit", "a"], ["from-the-future", 1]]])
    with pytest.raises(StoreError) as caught:
        events_from_row(2, AT, body)
    assert "from-the-future" in str(caught.value) and caught.value.code == "SESSION_STORE_ERROR"


def test_every_engine_event_class_has_a_stored_layout() -> None:
    for module in pkgutil.walk_packages(tether.engine.__path__, "tether.engine."):
        importlib.import_module(module.name)
    classes, todo = [], [FlowEvent]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls is not FlowEvent:
            classes.append(cls)
    assert sorted(LAYOUTS) == sorted(cls.type for cls in classes)


def test_journal_bodies_leave_out_what_the_row_holds() -> None:
    entry = JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", at=AT, request={"amount": 5},
                         idempotency_key="sid:r1:pay:1:0")
    body = json.loads(journal_body("sid", entry))
    assert body == {"kind": "tool", "status": "running", "at": "2026-01-05T09:00:00Z", "request": {"amount": 5}}


async def test_journal_entries_read_back_exactly_as_written(
    backend: Backend, new_session: NewSession, clock: FakeClock
) -> None:
    store = await backend.make()
    doc = await store.create(new_session())
    usual = f"{doc.id}:r1:pay:1:0"
    entries = [
        JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", at=clock.now(), request={"a": 1},
                     idempotency_key=usual, attempt=2),
        JournalEntry(run_id="r1", key="r1:now:1:0", kind="now", at=clock.now(), status="finished",
                     result="2026-01-05T09:00:00Z"),
        JournalEntry(run_id="r2", key="r2:pay:1:0", kind="tool", at=clock.now(), idempotency_key="elsewhere"),
    ]
    doc = await store.save(doc, 0, TurnRecords(journal=entries))
    assert await store.journal(doc.id) == entries
    finished = entries[0].model_copy(update={"status": "finished", "result": {"ok": True}, "attempt": 1})
    await store.save(doc, 1, TurnRecords(journal=[finished]))
    assert await store.journal(doc.id) == [finished, *entries[1:]]
    assert await store.journal(doc.id, run_id="r2") == entries[2:]


async def write_earlier_rows(backend: Backend, session_id: str, events: list[dict[str, Any]],
                             journal: list[JournalEntry]) -> None:
    """Rows as a tether before the compact forms wrote them: one event per row, whole journal bodies."""
    bodies = [json.dumps(e, separators=(",", ":")) for e in events]
    entries = [(e.key, e.run_id, e.model_dump_json(exclude_none=True)) for e in journal]
    if isinstance(backend, MemoryBackend):
        assert backend.shared is not None
        bucket = backend.shared._records.setdefault(session_id, _Records())
        for n, (event, body) in enumerate(zip(events, bodies, strict=True), 1):
            bucket.events.append((n, datetime.fromisoformat(event["at"]), body))
        for key, run_id, body in entries:
            bucket.journal[key] = (run_id, body, '"running"' not in body)
    elif isinstance(backend, SQLiteBackend):
        for n, (event, body) in enumerate(zip(events, bodies, strict=True), 1):
            backend.execute("INSERT INTO tether_events (session_id, seq, type, at, body) VALUES (?, ?, ?, ?, ?)",
                            (session_id, n, event["type"], to_us(datetime.fromisoformat(event["at"])), body))
        for key, run_id, body in entries:
            backend.execute("INSERT INTO tether_journal (session_id, key, run_id, body) VALUES (?, ?, ?, ?)",
                            (session_id, key, run_id, body))
    else:
        assert isinstance(backend, PostgresBackend)
        s = f'"{backend.schema}"'
        for n, (event, body) in enumerate(zip(events, bodies, strict=True), 1):
            await backend.execute(f"INSERT INTO {s}.tether_events (session_id, seq, type, at, body) "
                                  "VALUES (%s, %s, %s, %s, %s::json)",
                                  (session_id, n, event["type"], datetime.fromisoformat(event["at"]), body))
        for key, run_id, body in entries:
            await backend.execute(f"INSERT INTO {s}.tether_journal (session_id, key, run_id, body) "
                                  "VALUES (%s, %s, %s, %s::json)", (session_id, key, run_id, body))


async def test_rows_written_in_the_earlier_form_still_read(
    backend: Backend, new_session: NewSession, clock: FakeClock
) -> None:
    store = await backend.make()
    doc = await store.create(new_session())
    old_events = engine_events(AT)[:3]
    old_journal = [
        # no idempotency key
        JournalEntry(run_id="r1", key="r1:now:1:0", kind="now", at=AT, status="finished", result="x"),
        JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", at=AT, idempotency_key=f"{doc.id}:r1:pay:1:0"),
    ]
    await write_earlier_rows(backend, doc.id, old_events, old_journal)
    new_events = engine_events(AT + timedelta(minutes=1))[:2]
    finished = old_journal[1].model_copy(update={"status": "finished", "result": 7})
    await store.save(doc, 0, TurnRecords(events=new_events, journal=[finished]))
    stored = await store.events(doc.id)
    assert [e.seq for e in stored] == [1, 2, 3, 4, 5]
    assert [e.data for e in stored] == old_events + new_events
    assert [e.data for e in await store.events(doc.id, after=2)] == old_events[2:] + new_events
    assert await store.journal(doc.id) == [old_journal[0], finished]
