"""The per-session FIFO lock: same id strictly in arrival order, different ids concurrently."""

from __future__ import annotations

import asyncio

import pytest
from runtime_helpers import counter_agent, msg

from tether import TurnOptions
from tether.errors import SessionLeaseTimeout
from tether.runtime import Runtime, SessionLocks
from tether.stores import MemoryStore
from tether.testing import FakeClock


async def test_same_id_requests_run_one_at_a_time_in_arrival_order() -> None:
    log: list[str] = []

    async def slow(tag: str) -> None:
        log.append(f"start {tag}")
        await asyncio.sleep(0.01 if tag != "a" else 0.03)  # the first is the slowest
        log.append(f"end {tag}")

    runtime = Runtime(counter_agent(on_work=slow), store=MemoryStore(), clock=FakeClock())
    first = await runtime.run("Counter", msg())
    log.clear()
    tags = ["a", "b", "c", "d"]
    responses = await asyncio.gather(*(
        runtime.run("Counter", msg(), session_id=first.session, options=TurnOptions(context={"tag": tag}))
        for tag in tags))
    assert log == [f"{what} {tag}" for tag in tags for what in ("start", "end")]
    assert [r.message for r in responses] == ["n=2", "n=3", "n=4", "n=5"]  # no lost update, no conflict
    assert all(r.session == first.session for r in responses)
    assert len(runtime.locks) == 0  # entries are dropped once nobody holds them


async def test_different_ids_overlap() -> None:
    log: list[str] = []
    entered = {"x": asyncio.Event(), "y": asyncio.Event()}
    active = [False]

    async def meet(tag: str) -> None:
        if not active[0]:
            return
        log.append(f"start {tag}")
        entered[tag].set()
        other = "y" if tag == "x" else "x"
        await asyncio.wait_for(entered[other].wait(), 5)  # deadlocks if the two were serialized
        log.append(f"end {tag}")

    runtime = Runtime(counter_agent(on_work=meet), store=MemoryStore(), clock=FakeClock())
    x = await runtime.run("Counter", msg(), options=TurnOptions(context={"tag": "x"}))
    y = await runtime.run("Counter", msg(), options=TurnOptions(context={"tag": "y"}))
    assert x.success and y.success
    active[0] = True
    both = await asyncio.gather(
        runtime.run("Counter", msg(), session_id=x.session, options=TurnOptions(context={"tag": "x"})),
        runtime.run("Counter", msg(), session_id=y.session, options=TurnOptions(context={"tag": "y"})))
    assert [r.message for r in both] == ["n=2", "n=2"]
    assert log[:2] == ["start x", "start y"]


async def test_requests_without_an_id_take_no_lock() -> None:
    locks = SessionLocks()
    async with locks.hold(None):
        assert len(locks) == 0
    async with locks.hold("s"):
        assert locks.busy("s")
    assert not locks.busy("s")


async def test_a_waiter_that_times_out_or_is_cancelled_leaves_the_holder_alone_and_nothing_behind() -> None:
    locks = SessionLocks()
    entered: list[str] = []

    async def wait_for_it(name: str) -> None:
        async with locks.hold("s"):
            entered.append(name)

    async with locks.hold("s"):
        with pytest.raises(SessionLeaseTimeout) as caught:
            async with locks.hold("s", timeout=0.01):
                pytest.fail("entered a lock another request holds")
        assert caught.value.session_id == "s"
        cancelled = asyncio.create_task(wait_for_it("cancelled"))
        queued = asyncio.create_task(wait_for_it("queued"))
        await asyncio.sleep(0.01)  # both wait
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert locks.busy("s") and entered == []
    await asyncio.wait_for(queued, 5)
    assert entered == ["queued"]
    assert not locks.busy("s") and len(locks) == 0  # no entry left for a session nobody holds


async def test_a_body_that_raises_releases_the_lock() -> None:
    locks = SessionLocks()
    with pytest.raises(ZeroDivisionError):
        async with locks.hold("s"):
            raise ZeroDivisionError
    assert len(locks) == 0
    async with locks.hold("s", timeout=1):
        pass
