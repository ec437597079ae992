"""``Store.save_checkpoint``: a mid-turn save with the guarantees of ``save`` (compare-and-swap,
records in the same transaction), committed without a flush of its own on the durable stores."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from store_backends import Backend

from tether.durable.entries import JournalEntry
from tether.engine.core.session import Run, RunTrigger, Session, TranscriptMessage
from tether.errors import SessionConflict, SessionFlowInvariant, StoreError
from tether.stores import SQLiteStore, TurnRecords, WakeRequest

NewSession = Callable[..., Session]


def _run(status: str) -> Run:
    run = Run(id="r1", flow="f", trigger=RunTrigger(kind="message", key="k"),
              started_at=datetime(2026, 1, 1, tzinfo=UTC))
    return run.model_copy(update={"status": status})  # as an assignment would set it


def _said(seq: int, text: str) -> TranscriptMessage:
    return TranscriptMessage(seq=seq, role="assistant", text=text, at=datetime(2026, 1, 1, tzinfo=UTC))


async def test_a_checkpoint_is_a_save_with_its_records(backend: Backend, new_session: NewSession) -> None:
    store = await backend.make()
    created = await store.create(new_session(data={"step": 1}))
    moved = created.model_copy(update={"data": {"step": 2}, "message_seq": 1})
    stored = await store.save_checkpoint(moved, created.revision, TurnRecords(messages=[_said(1, "one")]))
    assert stored.revision == 1 and stored.data == {"step": 2}
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == {"step": 2}
    assert [m.text for m in await store.transcript(created.id)] == ["one"]
    final = await store.save(loaded, loaded.revision)  # the turn's final save goes on from it
    assert final.revision == 2


async def test_a_checkpoint_that_schedules_a_wake_writes_it(backend: Backend, new_session: NewSession) -> None:
    store = await backend.make()  # wakes take the transaction path on PostgreSQL (its own no-flush setting)
    created = await store.create(new_session())
    at = datetime(2026, 1, 2, tzinfo=UTC)
    await store.save_checkpoint(created, created.revision, TurnRecords(wakes=[WakeRequest(key="k", at=at)]))
    assert [(w.key, w.at) for w in await store.pending_wakes(created.id)] == [("k", at)]


async def test_a_stale_checkpoint_conflicts_and_writes_nothing(backend: Backend, new_session: NewSession) -> None:
    store = await backend.make()
    created = await store.create(new_session(data={"step": 1}))
    await store.save(created, created.revision)  # another writer moved the revision on
    with pytest.raises(SessionConflict):
        await store.save_checkpoint(created.model_copy(update={"data": {"step": 9}, "message_seq": 1}),
                                    created.revision, TurnRecords(messages=[_said(1, "lost")]))
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == {"step": 1}
    assert await store.transcript(created.id) == []


def _statements(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    conn = store._connection("test")
    conn.set_trace_callback(seen.append)
    return seen


async def test_sqlite_commits_a_checkpoint_without_an_fsync_and_a_save_with_one(tmp_path: Path,
                                                                             new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = await store.create(new_session())
        seen = _statements(store)
        checkpoint = await store.save_checkpoint(created, created.revision)
        unsynced = seen.index("PRAGMA synchronous = NORMAL")
        assert seen.index("BEGIN IMMEDIATE") > unsynced
        assert seen.index("COMMIT") < seen.index("PRAGMA synchronous = FULL")
        seen.clear()
        await store.save(checkpoint, checkpoint.revision)
        assert "BEGIN IMMEDIATE" in seen and not any(s.startswith("PRAGMA synchronous") for s in seen)
        assert store._connection("test").execute("PRAGMA synchronous").fetchone() == (2,)  # FULL again
    finally:
        await store.close()


async def test_sqlite_flushes_a_checkpoint_that_carries_journal_entries(tmp_path: Path,
                                                                      new_session: NewSession) -> None:
    """An effect's started record is a checkpoint, and it is on disk before the effect runs: its
    commit waits for the flush (and it is checked without a parse, like any checkpoint)."""
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = await store.create(new_session())
        seen = _statements(store)
        started = JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", at=datetime(2026, 1, 1, tzinfo=UTC))
        stored = await store.save_checkpoint(created, created.revision, TurnRecords(journal=[started]))
        assert "BEGIN IMMEDIATE" in seen and "COMMIT" in seen
        assert not any(s.startswith("PRAGMA synchronous") for s in seen)  # committed at FULL: flushed
        assert stored.revision == 1
        assert [e.key for e in await store.journal(created.id)] == ["r1:pay:1:0"]
    finally:
        await store.close()


async def test_a_failed_sqlite_checkpoint_leaves_the_connection_flushing(tmp_path: Path,
                                                                      new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = await store.create(new_session())
        with pytest.raises(SessionConflict):
            await store.save_checkpoint(created, created.revision + 5)
        assert store._connection("test").execute("PRAGMA synchronous").fetchone() == (2,)
        assert not store._connection("test").in_transaction
    finally:
        await store.close()


def test_the_store_thread_is_one_thread_per_store(tmp_path: Path) -> None:
    import asyncio
    import threading

    async def threads_used() -> set[str]:
        store = await SQLiteStore.open(tmp_path / "t.db")
        names: set[str] = set()
        try:
            for _ in range(5):
                await store._call("probe", None, lambda conn: names.add(threading.current_thread().name))
            with pytest.raises(StoreError) as caught:  # an error raised on the thread reaches the caller
                await store._call("probe", None, lambda conn: conn.execute("SELECT * FROM no_such_table"))
            assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        finally:
            await store.close()
        return names

    names = asyncio.run(threads_used())
    (name,) = names
    assert name.startswith("tether-sqlite") and name != threading.current_thread().name


def test_the_store_thread_serves_every_event_loop_and_ends_with_the_store(tmp_path: Path) -> None:
    import asyncio
    import threading

    path = tmp_path / f"loops-{uuid.uuid4().hex}.db"  # the thread's name is the file's: no other store's

    def store_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == f"tether-sqlite {path.name}"]

    store = SQLiteStore(path)
    assert asyncio.run(store.list()) == [] and asyncio.run(store.list()) == []  # one loop, then another
    assert len(store_threads()) == 1
    asyncio.run(store.close())
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(store.list())
    for _ in range(100):  # the thread ends once its queue is drained
        if not store_threads():
            break
        threading.Event().wait(0.01)
    assert store_threads() == []


async def test_a_malformed_checkpoint_is_refused_and_writes_nothing(backend: Backend,
                                                                    new_session: NewSession) -> None:
    # a checkpoint is not parsed again (its turn's final save is), yet nothing malformed is stored
    store = await backend.make()
    created = await store.create(new_session(data={"step": 1}))
    malformed = [
        created.model_copy(update={"agent": " "}),  # a validator
        created.model_copy(update={"status": "paused"}),  # a literal
        created.model_copy(update={"created_at": None}),  # a required field
        created.model_copy(update={"message_seq": "1"}),  # a typed field's type
        created.model_copy(update={"data": {"when": object()}}),  # not JSON
        created.model_copy(update={"runs": ["not a run"]}),  # a nested model
        created.model_copy(update={"runs": [_run("paused")]}),  # a run's status
        Session.model_construct(id=created.id, agent=created.agent),  # fields missing
    ]
    for bad in malformed:
        with pytest.raises(SessionFlowInvariant, match=created.id):
            await store.save_checkpoint(bad, created.revision, TurnRecords(messages=[_said(1, "lost")]))
    loaded = await store.load(created.id)
    assert loaded is not None and loaded.revision == 0 and loaded.data == {"step": 1}
    assert await store.transcript(created.id) == []
