"""``SQLiteStore`` grouped commits: the writes waiting on the store's thread commit together (one
transaction, one fsync), a failing write is rolled back alone, and no caller is answered before
the commit that carries its write (a SIGKILLed process keeps every acknowledged turn)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict
from tether.stores import SQLiteStore, TurnRecords

NewSession = Callable[..., Session]
WORKER = Path(__file__).with_name("group_worker.py")


def _said(seq: int, text: str) -> TranscriptMessage:
    return TranscriptMessage(seq=seq, role="assistant", text=text, at=datetime(2026, 1, 1, tzinfo=UTC))


async def _with_thread_held(store: SQLiteStore, queue_writes: Callable[[], list[asyncio.Task[object]]]
                            ) -> list[asyncio.Task[object]]:
    """Hold the store's thread busy while ``queue_writes`` queues its writes, then let it go: the
    writes wait on the thread together, as concurrent requests' writes do behind a slow commit."""
    gate, busy = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        busy.set()
        gate.wait(10)

    holding = asyncio.ensure_future(store._call("hold", None, hold))
    await asyncio.to_thread(busy.wait, 10)
    tasks = queue_writes()
    for _ in range(20):  # every write reaches the thread's queue (each is one step of its task)
        await asyncio.sleep(0)
    gate.set()
    await holding
    await asyncio.wait(tasks)
    return tasks


def _statements(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store._connection("test").set_trace_callback(seen.append)
    return seen


async def test_waiting_saves_of_many_sessions_commit_once_with_one_flush(tmp_path: Path,
                                                                          new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = [await store.create(new_session(data={"n": n})) for n in range(8)]
        seen = _statements(store)
        tasks = await _with_thread_held(store, lambda: [
            asyncio.ensure_future(store.save(doc.model_copy(update={"data": {"n": -1}, "message_seq": 1}),
                                             doc.revision, TurnRecords(messages=[_said(1, doc.id)])))
            for doc in created])
        assert all(task.exception() is None for task in tasks)
        assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1  # one transaction for eight saves
        assert not any(s.startswith("PRAGMA synchronous") for s in seen)  # saves: the commit is flushed
        for doc in created:
            stored = await store.load(doc.id)
            assert stored is not None and stored.revision == 1 and stored.data == {"n": -1}
            assert [m.text for m in await store.transcript(doc.id)] == [doc.id]
    finally:
        await store.close()


async def test_a_failing_write_in_a_group_is_rolled_back_alone(tmp_path: Path, new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        first, second, third = [await store.create(new_session()) for _ in range(3)]

        def writes() -> list[asyncio.Task[object]]:
            return [asyncio.ensure_future(store.save(doc.model_copy(update={"message_seq": 1}), revision,
                                                     TurnRecords(messages=[_said(1, doc.id)])))
                    for doc, revision in ((first, 0), (second, 7), (third, 0))]  # the second one is stale

        ok_1, stale, ok_3 = await _with_thread_held(store, writes)
        assert isinstance(stale.exception(), SessionConflict)
        assert ok_1.exception() is None and ok_3.exception() is None
        assert [m.text for m in await store.transcript(second.id)] == []  # nothing of the stale write
        stale_doc = await store.load(second.id)
        assert stale_doc is not None and stale_doc.revision == 0
        for doc in (first, third):
            assert [m.text for m in await store.transcript(doc.id)] == [doc.id]
    finally:
        await store.close()


async def test_a_group_of_checkpoints_is_not_flushed(tmp_path: Path,
                                                                     new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = [await store.create(new_session()) for _ in range(3)]
        seen = _statements(store)
        await _with_thread_held(store, lambda: [
            asyncio.ensure_future(store.save_checkpoint(doc, doc.revision)) for doc in created])
        assert seen.count("COMMIT") == 1
        assert seen.index("PRAGMA synchronous = NORMAL") < seen.index("BEGIN IMMEDIATE")
        assert seen.index("COMMIT") < seen.index("PRAGMA synchronous = FULL")
        seen.clear()
        # a checkpoint in a group with a save is flushed by the save's commit
        reloaded = [await store.load(doc.id) for doc in created]
        await _with_thread_held(store, lambda: [
            asyncio.ensure_future(store.save_checkpoint(reloaded[0], 1)),  # type: ignore[union-attr]
            asyncio.ensure_future(store.save(reloaded[1], 1))])  # type: ignore[arg-type]
        assert seen.count("COMMIT") == 1 and not any(s.startswith("PRAGMA synchronous") for s in seen)
    finally:
        await store.close()


async def test_reads_queued_between_writes_do_not_split_their_group(tmp_path: Path,
                                                                    new_session: NewSession) -> None:
    """A turn's load queued among other sessions' saves runs before their transaction, and the saves
    still commit together (a load used to end the group: two commits where one would do)."""
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        created = [await store.create(new_session(data={"n": n})) for n in range(4)]
        seen = _statements(store)
        order: list[str] = []

        def save(doc: Session) -> asyncio.Task[object]:
            async def go() -> object:
                stored = await store.save(doc.model_copy(update={"data": {"n": -1}}), doc.revision)
                order.append(f"saved {doc.id}")
                return stored
            return asyncio.ensure_future(go())

        def load(doc: Session) -> asyncio.Task[object]:
            async def go() -> object:
                found = await store.load(doc.id)
                order.append(f"loaded {doc.id} at {found.revision if found else None}")
                return found
            return asyncio.ensure_future(go())

        tasks = await _with_thread_held(store, lambda: [save(created[0]), load(created[3]), save(created[1]),
                                                        load(created[0]), save(created[2])])
        assert all(task.exception() is None for task in tasks)
        assert seen.count("BEGIN IMMEDIATE") == 1 and seen.count("COMMIT") == 1  # three saves, one transaction
        # the reads ran before the group's transaction: they see what was committed when they ran
        assert order[:2] == [f"loaded {created[3].id} at 0", f"loaded {created[0].id} at 0"]
        for doc in created[:3]:
            stored = await store.load(doc.id)
            assert stored is not None and stored.revision == 1 and stored.data == {"n": -1}
    finally:
        await store.close()


async def test_grouped_commits_keep_every_acknowledged_turn_across_a_sigkill(tmp_path: Path) -> None:
    """A worker runs 24 conversations at once (its saves group) and logs each turn it answered;
    SIGKILLed mid-flight, every answered turn is in the store: none was answered before its commit."""
    db, log = tmp_path / "t.db", tmp_path / "acks.log"
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WORKER), str(db), "24", str(log),
                                                stderr=asyncio.subprocess.PIPE)

    def logged() -> list[list[str]]:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    try:
        for _ in range(6000):
            lines = logged()
            if sum(kind == "ack" for kind, *_ in lines) >= 300 and sum(kind == "group" for kind, *_ in lines) >= 5:
                break
            if proc.returncode is not None:
                _, err = await proc.communicate()
                pytest.fail(f"the worker exited: {err.decode()[-2000:]}")
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the worker did not get going")
        os.kill(proc.pid, signal.SIGKILL)  # mid-flight: other turns are on their way to the disk
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    acked: dict[str, list[str]] = {}
    for kind, *rest in logged():
        if kind == "ack":
            acked.setdefault(rest[0], []).append(rest[1])
    store = await SQLiteStore.open(db)
    try:
        for session_id, message_ids in acked.items():
            stored_ids = {m.input_id for m in await store.transcript(session_id) if m.role == "user"}
            missing = [m for m in message_ids if m not in stored_ids]
            assert missing == [], f"session {session_id}: acknowledged turns not stored: {missing}"
    finally:
        await store.close()


def _count_hops(store: SQLiteStore) -> list[str]:
    """The operations sent to the store's thread from now on (``SQLiteStore._call``), in order."""
    hops: list[str] = []
    thread_call = store._call

    async def counted(operation: str, session_id: str | None, fn: Any) -> Any:
        hops.append(operation)
        return await thread_call(operation, session_id, fn)

    store._call = counted  # type: ignore[method-assign]
    return hops


async def test_a_load_is_read_on_the_callers_thread_and_waits_nowhere(tmp_path: Path,
                                                                      new_session: NewSession) -> None:
    """With the store's thread idle, a document is read on the caller's thread (no hop); when that reader
    is in use elsewhere, or the database is locked, the read goes to the store's thread instead
    (the reader never waits: its busy timeout is 0)."""
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        doc = await store.create(new_session(data={"n": 1}))
        hops = _count_hops(store)
        assert await store.load(doc.id) == doc and hops == []  # read here
        with store._reader._lock:  # another thread reads on it now
            assert await store.load(doc.id) == doc
        assert hops == ["load"]
        class Busy:  # a database another connection keeps locked: SQLite answers at once (busy_timeout 0)
            def execute(self, *args: Any) -> Any:
                raise sqlite3.OperationalError("database is locked")

            def close(self) -> None:
                pass

        reader, store._reader._conn = store._reader._conn, Busy()  # type: ignore[assignment]
        assert await store.load(doc.id) == doc
        store._reader._conn = reader
        assert hops == ["load", "load"]
    finally:
        await store.close()


async def test_a_load_while_the_stores_thread_is_busy_is_read_on_that_thread(tmp_path: Path,
                                                                              new_session: NewSession) -> None:
    """While the store's thread has a call in flight (the writes of other sessions), a load is read
    there, on the store's warm connection, not on the caller's thread; once the thread is idle again,
    loads are read on the caller's thread again."""
    store = await SQLiteStore.open(tmp_path / "t.db")
    try:
        doc = await store.create(new_session(data={"n": 1}))
        hops = _count_hops(store)
        assert await store.load(doc.id) == doc and hops == []  # the thread is idle: read here
        [load] = await _with_thread_held(store, lambda: [asyncio.ensure_future(store.load(doc.id))])
        assert load.result() == doc and hops == ["hold", "load"]
        assert store._thread.in_flight == 0
        assert await store.load(doc.id) == doc and hops == ["hold", "load"]  # idle again: read here
    finally:
        await store.close()


async def test_the_reader_opens_the_database_the_store_opened_after_a_change_of_folder(
        tmp_path: Path, new_session: NewSession, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "app")
    store = await SQLiteStore.open("data/t.db")  # a relative path, opened from app/
    try:
        doc = await store.create(new_session(data={"n": 1}))
        monkeypatch.chdir(tmp_path / "elsewhere")
        assert await store.load(doc.id) == doc  # the reader is opened now, on app/data/t.db
        assert store._reader._conn is not None and not (tmp_path / "elsewhere" / "data").exists()
    finally:
        await store.close()
