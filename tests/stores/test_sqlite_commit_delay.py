"""``SQLiteStore(commit_delay=...)``: a flushed commit waits (at most the delay) for the writes of
the other sessions this process has mid-turn (their leases held), so one fsync carries them all;
nobody is answered before that commit has returned, and a lone session, a group of checkpoints,
a read or a delay of 0 never waits.

The delay here is a minute, so that a wait that should end early (all the awaited writes came, a
read came) or should not happen at all would hang the test instead of passing by luck."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from tether.engine.core.session import Session
from tether.stores import SQLiteStore

NewSession = Callable[..., Session]
MINUTE = 60.0


@asynccontextmanager
async def _leased(store: SQLiteStore, sessions: list[Session]) -> AsyncIterator[None]:
    """Hold the leases of ``sessions``: they are mid-turn, as the runtime holds them."""
    async with AsyncExitStack() as stack:
        for doc in sessions:
            await stack.enter_async_context(store.lease(doc.id))
        yield


def _record(store: SQLiteStore, order: list[str]) -> None:
    """Log the store's COMMITs into ``order`` (from its thread)."""
    store._connection("test").set_trace_callback(lambda sql: order.append(sql) if sql == "COMMIT" else None)


def _save(store: SQLiteStore, doc: Session, order: list[str]) -> asyncio.Task[Session]:
    async def go() -> Session:
        stored = await store.save(doc.model_copy(update={"data": {"saved": True}}), doc.revision)
        order.append(f"answered {doc.id}")
        return stored

    return asyncio.ensure_future(go())


async def _spin() -> None:
    """Give the store's thread time to take what is queued (an answer would be in by then)."""
    for _ in range(5):
        await asyncio.sleep(0.02)


async def test_a_flushed_commit_waits_for_the_writes_of_the_sessions_mid_turn(tmp_path: Path,
                                                                             new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db", commit_delay=MINUTE)
    try:
        docs = [await store.create(new_session()) for _ in range(3)]
        order: list[str] = []
        async with _leased(store, docs):
            _record(store, order)
            first = _save(store, docs[0], order)
            await _spin()
            assert not first.done() and order == []  # two other sessions are mid-turn: it waits for them
            second = _save(store, docs[1], order)
            await _spin()
            assert not first.done() and not second.done() and order == []
            third = _save(store, docs[2], order)  # the last write awaited: the group commits now
            await asyncio.wait_for(asyncio.gather(first, second, third), MINUTE / 2)
        assert order[0] == "COMMIT" and order.count("COMMIT") == 1  # one commit, before any answer
        assert sorted(order[1:]) == sorted(f"answered {doc.id}" for doc in docs)
        for doc in docs:
            stored = await store.load(doc.id)
            assert stored is not None and stored.revision == 1 and stored.data == {"saved": True}
    finally:
        await store.close()


async def test_a_lone_session_and_a_group_of_checkpoints_commit_at_once(tmp_path: Path,
                                                                        new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db", commit_delay=MINUTE)
    try:
        alone, busy = await store.create(new_session()), await store.create(new_session())
        order: list[str] = []
        _record(store, order)
        async with _leased(store, [alone]):  # no other session mid-turn: nothing to wait for
            await asyncio.wait_for(_save(store, alone, order), MINUTE / 2)
        assert order == ["COMMIT", f"answered {alone.id}"]
        async with _leased(store, [alone, busy]):  # a checkpoint is not flushed: it never waits
            stored = await store.load(alone.id)
            assert stored is not None
            await asyncio.wait_for(store.save_checkpoint(stored, stored.revision), MINUTE / 2)
        fresh = await store.create(new_session())
        async with _leased(store, [busy]):  # a write of a session with no lease (one being created),
            first = _save(store, fresh, order)  # one other session mid-turn: it waits for that one
            await _spin()
            assert not first.done()
            await asyncio.wait_for(_save(store, busy, order), MINUTE / 2)
            await first
    finally:
        await store.close()


async def test_a_read_does_not_wait_for_a_waiting_commit(tmp_path: Path, new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db", commit_delay=MINUTE)
    try:
        docs = [await store.create(new_session()) for _ in range(2)]
        order: list[str] = []
        async with _leased(store, docs):
            first = _save(store, docs[0], order)
            await _spin()
            names: list[str] = []
            # a read on the store's thread while the commit waits: it runs now, the commit keeps waiting
            await asyncio.wait_for(store._call("probe", None, lambda conn: names.append(
                threading.current_thread().name)), MINUTE / 2)
            assert names and names[0].startswith("tether-sqlite") and not first.done()
            await asyncio.wait_for(asyncio.gather(first, _save(store, docs[1], order)), MINUTE / 2)
    finally:
        await store.close()


async def test_no_delay_commits_at_once_and_a_negative_one_is_refused(tmp_path: Path,
                                                                      new_session: NewSession) -> None:
    store = await SQLiteStore.open(tmp_path / "t.db", commit_delay=0)
    try:
        docs = [await store.create(new_session()) for _ in range(3)]
        order: list[str] = []
        _record(store, order)
        async with _leased(store, docs):
            await asyncio.wait_for(_save(store, docs[0], order), MINUTE / 2)
        assert order == ["COMMIT", f"answered {docs[0].id}"]
    finally:
        await store.close()
    with pytest.raises(ValueError, match="commit_delay"):
        SQLiteStore(tmp_path / "u.db", commit_delay=-0.001)


async def test_a_closed_store_ends_a_waiting_commit(tmp_path: Path, new_session: NewSession) -> None:
    """Closing the store while a commit waits: the commit is made (the close comes after it), the
    save is answered, and the store is closed; nothing waits out the delay."""
    store = await SQLiteStore.open(tmp_path / "t.db", commit_delay=MINUTE)
    docs = [await store.create(new_session()) for _ in range(2)]
    order: list[str] = []
    async with _leased(store, docs):
        first = _save(store, docs[0], order)
        await _spin()
        await asyncio.wait_for(store.close(), MINUTE / 2)
        assert (await asyncio.wait_for(first, MINUTE / 2)).revision == 1
    reopened = await SQLiteStore.open(tmp_path / "t.db")
    try:
        stored = await reopened.load(docs[0].id)
        assert stored is not None and stored.revision == 1
    finally:
        await reopened.close()
