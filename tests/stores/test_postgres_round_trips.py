"""PostgreSQL: a save is one round trip, also when its records need a transaction (wakes, parts).

Counted on the wire (libpq's protocol trace of the store's connection): the client waits for the
server once per ``Sync`` message it sends. Real PostgreSQL; skipped without one."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from store_backends import PostgresBackend, open_backend

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, StoreError
from tether.stores import PostgresStore, TurnRecords, WakeRequest
from tether.testing import FakeClock

NewSession = Callable[..., Session]
AT = datetime(2026, 1, 2, tzinfo=UTC)


class Wire:
    """Traces the protocol of every connection the store hands out while ``on``."""

    def __init__(self, store: PostgresStore) -> None:
        self.lines: list[str] = []
        self.on = False
        opened = store._connection

        @asynccontextmanager
        async def traced(operation: str, session_id: str | None = None) -> AsyncIterator[Any]:
            async with opened(operation, session_id) as conn:
                if not self.on:
                    yield conn
                    return
                import psycopg

                with tempfile.TemporaryFile("w+") as trace:
                    conn.pgconn.trace(trace.fileno())
                    conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                    try:
                        yield conn
                    finally:
                        conn.pgconn.untrace()
                        trace.seek(0)
                        self.lines += trace.read().splitlines()

        store._connection = traced  # type: ignore[method-assign]

    def syncs(self) -> int:
        """The round trips: the ``Sync`` messages the client sent."""
        return sum(1 for line in self.lines if line.split("\t")[:3:2] == ["F", "Sync"])


@pytest.fixture
async def pg(clock: FakeClock, tmp_path: Path) -> AsyncIterator[PostgresBackend]:
    backend = await open_backend("postgres", clock, tmp_path)
    assert isinstance(backend, PostgresBackend)
    try:
        yield backend
    finally:
        await backend.aclose()


def _records(seq: int, *, wake: str = "w1") -> TurnRecords:
    said = TranscriptMessage(seq=seq, role="assistant", text=f"said {seq}", at=AT)
    return TurnRecords(messages=[said], wakes=[WakeRequest(key=wake, at=AT)],
                       parts={"run.nodes": {"a": json.dumps({"n": seq})}})


@pytest.mark.parametrize("checkpoint", [False, True])
async def test_a_save_with_wakes_and_parts_is_one_round_trip(pg: PostgresBackend, new_session: NewSession,
                                                             checkpoint: bool) -> None:
    store = await pg.make()
    assert isinstance(store, PostgresStore)
    created = await store.create(new_session(data={"run": {}}))
    wire = Wire(store)
    wire.on = True
    save = store.save_checkpoint if checkpoint else store.save
    stored = await save(created, created.revision, _records(1))
    wire.on = False
    assert stored.revision == 1
    assert wire.syncs() == 1, wire.lines
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == {"run": {"nodes": {"a": {"n": 1}}}}
    assert [m.text for m in await store.transcript(created.id)] == ["said 1"]
    assert [w.key for w in await store.pending_wakes(created.id)] == ["w1"]


async def test_a_stale_pipelined_save_conflicts_and_writes_nothing(pg: PostgresBackend,
                                                                   new_session: NewSession) -> None:
    store = await pg.make()
    created = await store.create(new_session(data={"run": {}}))
    await store.save(created, created.revision)  # another writer moved the revision on
    with pytest.raises(SessionConflict):
        await store.save(created, created.revision, _records(1))
    assert await store.transcript(created.id) == [] and await store.pending_wakes(created.id) == []
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == {"run": {}}
    again = await store.save(loaded, loaded.revision, _records(1))  # the connection is usable after it
    assert again.revision == 2


async def test_a_pipelined_save_with_a_stored_seq_is_a_duplicate_and_writes_nothing(
        pg: PostgresBackend, new_session: NewSession) -> None:
    store = await pg.make()
    created = await store.create(new_session(data={"run": {}}))
    first = await store.save(created, created.revision, _records(1))
    with pytest.raises(StoreError, match="already has a transcript message with seq 1"):
        await store.save(first, first.revision, _records(1, wake="w2"))
    assert [w.key for w in await store.pending_wakes(created.id)] == ["w1"]
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 1


async def test_a_create_with_its_records_is_one_round_trip(pg: PostgresBackend, new_session: NewSession) -> None:
    store = await pg.make()
    assert isinstance(store, PostgresStore)
    wire = Wire(store)
    wire.on = True
    created = await store.create(new_session(data={"run": {}}), _records(1))
    wire.on = False
    assert created.revision == 0
    assert wire.syncs() == 1, wire.lines  # was a BEGIN, the insert, one per kind of record and a COMMIT
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.data == {"run": {"nodes": {"a": {"n": 1}}}}
    assert [m.text for m in await store.transcript(created.id)] == ["said 1"]
    assert [w.key for w in await store.pending_wakes(created.id)] == ["w1"]


async def test_a_second_create_of_one_id_conflicts_and_writes_nothing(pg: PostgresBackend,
                                                                       new_session: NewSession) -> None:
    store = await pg.make()
    created = await store.create(new_session(data={"run": {}}))
    with pytest.raises(SessionConflict):
        await store.create(created, _records(1))
    assert await store.transcript(created.id) == [] and await store.pending_wakes(created.id) == []
    again = await store.create(new_session(data={"n": 2}), _records(1))  # the connection is usable after it
    assert again.revision == 0
