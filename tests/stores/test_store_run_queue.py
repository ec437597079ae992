"""The run queue: a save queues a run (or takes it out) in its transaction; takes are leased to
one worker until the lease lapses; a release removes the row or leaves it queued."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta

from store_backends import Backend, PostgresBackend, SQLiteBackend, postgres_before, sqlite_before

from tether.engine.core.session import Session
from tether.errors import SessionConflict
from tether.stores import Store, TurnRecords
from tether.stores.records import QueueRequest
from tether.stores.run_queue import POSTGRES_TABLE as POSTGRES_RUN_QUEUE
from tether.stores.run_queue import SQLITE_TABLE as SQLITE_RUN_QUEUE
from tether.testing import FakeClock

NewSession = Callable[..., Session]


def queue(clock: FakeClock, work: str | None = "runtime") -> TurnRecords:
    return TurnRecords(queue=QueueRequest(work=work, at=clock.now()))  # type: ignore[arg-type]


async def test_a_save_queues_and_a_take_leases_until_the_lease_lapses(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()
    one = await store.create(new_session(), queue(clock))
    two = await store.create(new_session(), queue(clock, "agent"))
    await store.create(new_session())  # never queued
    assert [(q.session_id, q.agent, q.leased_until) for q in await store.queued_runs()] == sorted(
        [(one.id, False, None), (two.id, True, None)], key=lambda row: row[0])

    assert await store.take_runs(t0, limit=5, worker="w1", agent=False) == [
        q for q in await store.queued_runs(one.id)]  # a worker with no model leaves agent work
    taken = (await store.queued_runs(one.id))[0]
    assert (taken.worker, taken.leased_until, taken.takes) == ("w1", t0 + timedelta(seconds=30), 1)
    assert [q.session_id for q in await store.take_runs(t0, limit=5, worker="w2")] == [two.id]
    assert await store.take_runs(t0 + timedelta(seconds=29), limit=5, worker="w3") == []

    assert await store.renew_run(taken, t0 + timedelta(seconds=20), lease=30)
    lapsed = await store.take_runs(t0 + timedelta(seconds=31), limit=5, worker="w3")  # one renewed to 50s
    assert [(q.session_id, q.takes) for q in lapsed] == [(two.id, 2)]
    again = await store.take_runs(t0 + timedelta(seconds=61), limit=5, worker="w3")
    assert sorted((q.session_id, q.worker, q.takes) for q in again) == sorted([(one.id, "w3", 2), (two.id, "w3", 3)])
    again.sort(key=lambda q: q.session_id != one.id)
    assert not await store.renew_run(taken, t0 + timedelta(seconds=50))  # w1 lost it
    await store.release_run(taken)  # a release by the worker that lost it changes nothing
    assert len(await store.queued_runs()) == 2

    await store.release_run(again[0])  # waits or ended: out of the queue
    await store.release_run(again[1], "runtime")  # still runnable: queued, unleased
    rows = await store.queued_runs()
    assert [(q.session_id, q.agent, q.leased_until, q.worker) for q in rows] == [(two.id, False, None, "")]


async def test_a_save_keeps_the_take_and_takes_the_run_out_when_it_waits(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session(), queue(clock))
    [taken] = await store.take_runs(clock.now(), worker="w1")
    clock.advance(5)
    doc = await store.save(doc, 0, queue(clock, "agent"))  # queued again while held: at and lease kept
    [row] = await store.queued_runs(doc.id)
    assert (row.at, row.worker, row.leased_until, row.agent) == (taken.at, "w1", taken.leased_until, True)
    doc = await store.save(doc, 1, queue(clock, None))
    assert await store.queued_runs() == []
    await store.release_run(taken)  # nothing left to release
    assert await store.queued_runs() == []


async def test_a_save_that_loses_its_swap_queues_nothing_and_delete_unqueues(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session())
    await store.save(doc, 0)
    with contextlib.suppress(SessionConflict):
        await store.save(doc, 0, queue(clock))
    assert await store.queued_runs() == []
    await store.save(doc, 1, queue(clock))
    await store.delete(doc.id)
    assert await store.queued_runs() == []


async def test_concurrent_takes_never_share_a_run(backend: Backend, new_session: NewSession, clock: FakeClock) -> None:
    store = await backend.make()
    ids = [(await store.create(new_session(), queue(clock))).id for _ in range(12)]
    others = [await backend.make() for _ in range(3)]
    batches = await asyncio.gather(*(s.take_runs(clock.now(), limit=4, worker=f"w{i}")
                                     for i, s in enumerate([store, *others])))
    taken = [q.session_id for batch in batches for q in batch]
    assert sorted(taken) == sorted(ids)


# (id, agent, status): what a database written before the queue holds
OLD_SESSIONS = [("open", "workflow:ci", "running"), ("done", "workflow:ci", "completed"),
                ("chat", "support", "running"), ("waits", "workflow:deploy", "running")]


def _sqlite_before_the_queue(backend: SQLiteBackend) -> None:
    sqlite_before(backend, SQLITE_RUN_QUEUE,
                  "INSERT INTO tether_sessions (id, agent, status, revision, created_at, saved_at, doc)"
                  " VALUES (?, ?, ?, 0, 0, 0, '{}')", OLD_SESSIONS)


async def _postgres_before_the_queue(backend: PostgresBackend) -> None:
    await postgres_before(backend, POSTGRES_RUN_QUEUE,
                          "INSERT INTO {s}.tether_sessions (id, agent, status, revision, created_at, saved_at, doc)"
                          " VALUES (%s, %s, %s, 0, now(), now(), '{{}}')", OLD_SESSIONS)


async def test_opening_a_database_from_before_the_queue_queues_its_open_workflow_runs(durable: Backend) -> None:
    if isinstance(durable, SQLiteBackend):
        _sqlite_before_the_queue(durable)
    else:
        assert isinstance(durable, PostgresBackend)
        await _postgres_before_the_queue(durable)
    store = await durable.make()
    queued = await store.queued_runs()
    assert sorted(q.session_id for q in queued) == ["open", "waits"]  # a worker looks at each once
    assert all(q.leased_until is None and not q.agent for q in queued)
