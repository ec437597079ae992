"""The wake schedule: replace by key, ``replaces``, cancel, claim with a lease, complete."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from store_backends import Backend

from tether.engine.core.session import Session
from tether.stores import Store, TurnRecords, WakeRequest
from tether.testing import FakeClock

NewSession = Callable[..., Session]


async def test_same_key_replaces_and_replaces_removes(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()
    doc = await store.create(
        new_session(),
        TurnRecords(
            wakes=[
                WakeRequest(key="silence", at=t0 + timedelta(minutes=5)),
                WakeRequest(key="timer:a", at=t0 + timedelta(minutes=1)),
                WakeRequest(key="retry", at=t0 + timedelta(minutes=2)),
            ]
        ),
    )
    doc = await store.save(
        doc,
        0,
        TurnRecords(
            wakes=[
                WakeRequest(key="silence", at=t0 + timedelta(minutes=10)),
                WakeRequest(key="timer:b", at=t0 + timedelta(minutes=3), replaces="timer:a"),
            ]
        ),
    )
    pending = await store.pending_wakes(doc.id)
    assert [(w.key, w.at - t0) for w in pending] == [
        ("retry", timedelta(minutes=2)),
        ("timer:b", timedelta(minutes=3)),
        ("silence", timedelta(minutes=10)),
    ]
    assert all(w.session_id == doc.id and w.leased_until is None for w in pending)
    await store.save(doc, 1, TurnRecords(cancel_wakes=["retry", "never-scheduled"]))
    assert [w.key for w in await store.pending_wakes(doc.id)] == ["timer:b", "silence"]


async def test_due_wakes_claims_once_until_the_lease_lapses(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()
    one = await store.create(new_session(), TurnRecords(wakes=[WakeRequest(key="a", at=t0)]))
    await store.create(
        new_session(),
        TurnRecords(
            wakes=[
                WakeRequest(key="b", at=t0 - timedelta(seconds=1)),
                WakeRequest(key="later", at=t0 + timedelta(hours=1)),
            ]
        ),
    )
    claimed = await store.due_wakes(t0, lease=30, worker="w1")
    assert [w.key for w in claimed] == ["b", "a"]
    assert all(w.leased_until == t0 + timedelta(seconds=30) and w.worker == "w1" for w in claimed)
    assert await store.due_wakes(t0 + timedelta(seconds=29), worker="w2") == []
    again = await store.due_wakes(t0 + timedelta(seconds=30), lease=60, worker="w2")
    assert [(w.key, w.worker) for w in again] == [("b", "w2"), ("a", "w2")]
    # complete only deletes the same claim; a rescheduled wake survives a stale completion
    stale_a = next(w for w in again if w.key == "a")
    await store.save(
        (await store.load(one.id)) or one,
        0,
        TurnRecords(wakes=[WakeRequest(key="a", at=t0 + timedelta(minutes=5))]),
    )
    await store.complete_wake(stale_a)
    for wake in again:
        if wake.key == "b":
            await store.complete_wake(wake)
    assert sorted(w.key for w in await store.pending_wakes()) == ["a", "later"]
    rescheduled = await store.pending_wakes(one.id)
    assert rescheduled[0].leased_until is None and rescheduled[0].at == t0 + timedelta(minutes=5)


async def test_due_wakes_respects_the_limit_and_order(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()
    await store.create(
        new_session(),
        TurnRecords(wakes=[WakeRequest(key=f"k{i}", at=t0 - timedelta(seconds=i)) for i in range(5)]),
    )
    first = await store.due_wakes(t0, limit=2)
    rest = await store.due_wakes(t0, limit=10)
    assert [w.key for w in first] == ["k4", "k3"]
    assert [w.key for w in rest] == ["k2", "k1", "k0"]


async def test_concurrent_due_wakes_never_claim_a_wake_twice(
    backend: Backend, new_session: NewSession, clock: FakeClock
) -> None:
    stores = [await backend.make(), await backend.make()]
    t0 = clock.now()
    for _ in range(4):
        await stores[0].create(
            new_session(),
            TurnRecords(wakes=[WakeRequest(key=f"w{i}", at=t0 - timedelta(seconds=i)) for i in range(10)]),
        )

    async def worker(store: Store, name: str) -> list[tuple[str, str]]:
        got: list[tuple[str, str]] = []
        while batch := await store.due_wakes(t0, limit=3, lease=60, worker=name):
            got += [(w.session_id, w.key) for w in batch]
        return got

    results = await asyncio.gather(*(worker(stores[i % 2], f"w{i}") for i in range(6)))
    claimed = [item for result in results for item in result]
    assert len(claimed) == len(set(claimed)) == 40


async def test_complete_wake_leaves_a_wake_another_worker_claimed_since(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()
    doc = await store.create(new_session(), TurnRecords(wakes=[WakeRequest(key="k", at=t0)]))
    (mine,) = await store.due_wakes(t0, lease=30, worker="w1")
    (theirs,) = await store.due_wakes(t0 + timedelta(seconds=31), lease=30, worker="w2")  # w1's claim lapsed
    await store.complete_wake(mine)  # w1 finishes late: the wake is w2's now
    assert [(w.key, w.worker) for w in await store.pending_wakes(doc.id)] == [("k", "w2")]
    await store.complete_wake(theirs)
    assert await store.pending_wakes(doc.id) == []
