"""Two hosts on one store (seed 004 §1, issue 18): each request runs its own turn exactly once and
gets its own reply; a document from a newer tether is refused untouched; delete waits for turns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from runtime_helpers import SpyStore, counter_agent, msg, tally_agent, waiting_agent
from store_backends import Backend

from tether import Message, TurnOptions
from tether.engine.core.session import SESSION_SCHEMA_VERSION, Session
from tether.errors import SessionVersionUnsupported
from tether.runtime import RunResponse, Runtime
from tether.testing import FakeClock


class Gate:
    """Holds the turn tagged ``tag`` inside ``mull`` (after its first checkpoint) until opened."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.inside = asyncio.Event()
        self.open = asyncio.Event()

    async def __call__(self, tag: str) -> None:
        if tag == self.tag:
            self.inside.set()
            await self.open.wait()


def ask(runtime: Runtime, session_id: str, tag: str) -> Awaitable[RunResponse]:
    return runtime.run("Tally", Message(tag, id=tag), session_id=session_id, options=TurnOptions(context={"tag": tag}))


async def settle() -> None:
    """Let every other task run a while (a waiter that does not wait would overtake here)."""
    for _ in range(20):
        await asyncio.sleep(0.005)


async def test_two_runtimes_each_run_their_own_turn_once_with_their_own_reply(
    backend: Backend, clock: FakeClock
) -> None:
    gate = Gate("A")
    host_a = Runtime(tally_agent(on_mull=gate), store=await backend.make(), clock=clock)
    host_b = Runtime(tally_agent(on_mull=gate), store=await backend.make(), clock=clock)
    first = await host_a.run("Tally", Message("hi", id="m0"), options=TurnOptions(context={"tag": "first"}))
    assert first.success and first.message == "echo first"
    session_id = first.session

    a = asyncio.create_task(ask(host_a, session_id, "A"))
    await asyncio.wait_for(gate.inside.wait(), 30)  # A has checkpointed the move take -> mull
    b = asyncio.create_task(ask(host_b, session_id, "B"))
    await settle()
    assert not b.done()  # B waits for A's lease instead of loading A's mid-turn checkpoint
    gate.open.set()
    reply_a, reply_b = await asyncio.wait_for(asyncio.gather(a, b), 30)

    assert (reply_a.success, reply_a.message, reply_a.session) == (True, "echo A", session_id)
    assert (reply_b.success, reply_b.message, reply_b.session) == (True, "echo B", session_id)
    stored = await host_a.store.load(session_id)
    assert stored is not None and stored.data["seen"] == ["first", "A", "B"]  # each turn ran once
    users = [m.text for m in await host_a.store.transcript(session_id) if m.role == "user"]
    assert users == ["hi", "A", "B"]


async def test_a_request_that_cannot_get_the_lease_fails_and_writes_nothing(
    backend: Backend, clock: FakeClock
) -> None:
    store = await backend.make()
    runtime = Runtime(counter_agent(), store=store, clock=clock, lease_timeout=0.2)
    first = await runtime.run("Counter", msg())
    before = await store.load(first.session)
    async with (await backend.make()).lease(first.session):  # another worker holds the session
        response = await runtime.run("Counter", msg(), session_id=first.session)
    assert not response.success and response.code == "SESSION_LEASE_TIMEOUT"
    assert response.session == first.session and first.session in response.message
    assert await store.load(first.session) == before
    again = await runtime.run("Counter", msg(), session_id=first.session)
    assert again.success and again.message == "n=2"


def test_lease_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lease_timeout"):
        Runtime(counter_agent(), lease_timeout=0)


async def test_runs_take_the_lease_of_their_session_only(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    assert not any(c[0] == "lease" for c in spy.calls)  # a new session: nobody else knows its id
    spy.calls.clear()
    await runtime.run("Counter", msg(), session_id=first.session)
    assert spy.calls[0] == ("lease", first.session) and spy.calls[1] == ("load", first.session)


# ---------------------------------------------------------------------- a newer tether's document


async def newer_session(spy: SpyStore, clock: FakeClock) -> Session:
    return await spy.inner.create(Session(id="from-the-future", agent="Counter", created_at=clock.now(),
                                          schema_version=SESSION_SCHEMA_VERSION + 1, data={"n": 7}))


async def test_a_document_from_a_newer_tether_is_refused_and_left_untouched(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    newer = await newer_session(spy, clock)
    runtime = make_runtime(counter_agent())
    response = await runtime.run("Counter", msg(), session_id=newer.id)
    assert not response.success and response.code == "SESSION_VERSION_UNSUPPORTED"
    assert response.session == newer.id
    assert "'from-the-future'" in response.message
    assert f"schema version {SESSION_SCHEMA_VERSION + 1}" in response.message
    assert f"({SESSION_SCHEMA_VERSION})" in response.message
    assert await spy.inner.load(newer.id) == newer  # not replaced, not aborted
    assert [s.id for s in await spy.inner.list()] == [newer.id]  # no new session forked off
    assert spy.writes() == []
    with pytest.raises(SessionVersionUnsupported):
        await runtime.complete(newer.id)
    assert await spy.inner.load(newer.id) == newer


async def test_a_newer_document_this_tether_cannot_even_parse_is_refused_too(
    backend: Backend, make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    newer = await newer_session(spy, clock)
    text = newer.model_dump_json()[:-1] + ', "a_field_from_the_future": {"x": 1}}'
    await backend.corrupt(newer.id, text)
    with pytest.raises(SessionVersionUnsupported) as caught:
        await spy.inner.load(newer.id)
    assert (caught.value.stored_version, caught.value.supported_version) == (
        SESSION_SCHEMA_VERSION + 1, SESSION_SCHEMA_VERSION)
    response = await make_runtime(counter_agent()).run("Counter", msg(), session_id=newer.id)
    assert not response.success and response.code == "SESSION_VERSION_UNSUPPORTED"
    assert spy.writes() == [] and len(await spy.inner.list()) == 1


# ---------------------------------------------------------------------- delete


@pytest.mark.parametrize("where", ["same runtime", "another runtime"])
async def test_delete_waits_for_the_running_turn(backend: Backend, clock: FakeClock, where: str) -> None:
    gate = Gate("A")
    host = Runtime(tally_agent(on_mull=gate), store=await backend.make(), clock=clock)
    other = host if where == "same runtime" else Runtime(tally_agent(), store=await backend.make(), clock=clock)
    first = await host.run("Tally", Message("hi", id="m0"), options=TurnOptions(context={"tag": "first"}))
    turn = asyncio.create_task(ask(host, first.session, "A"))
    await asyncio.wait_for(gate.inside.wait(), 30)
    deleting = asyncio.create_task(other.delete(first.session))
    await settle()
    assert not deleting.done()  # not in the middle of the turn
    gate.open.set()
    response = await asyncio.wait_for(turn, 30)
    await asyncio.wait_for(deleting, 30)
    assert response.success and response.message == "echo A" and response.session == first.session
    assert await host.store.load(first.session) is None
    assert await host.store.transcript(first.session) == []
    fresh = await host.run("Tally", Message("again", id="m9"), session_id=first.session,
                           options=TurnOptions(context={"tag": "again"}))
    assert fresh.success and fresh.session != first.session  # a deleted session starts over


async def test_delete_of_a_missing_session_is_a_no_op(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    await make_runtime(counter_agent()).delete("nobody")
    assert ("delete", "nobody") in spy.calls


async def test_a_wake_whose_session_is_busy_elsewhere_stays_scheduled(backend: Backend, clock: FakeClock) -> None:
    runtime = Runtime(waiting_agent(), store=await backend.make(), clock=clock, lease_timeout=0.2)
    response = await runtime.run("Waiter", "ping me later")
    (wake,) = await runtime.store.pending_wakes(response.session)
    clock.advance("61m")
    async with (await backend.make()).lease(response.session):  # another worker is in a turn there
        assert await runtime.fire_due_wakes(lease=0) == 0
    assert [w.key for w in await runtime.store.pending_wakes(response.session)] == [wake.key]  # not dropped
    assert await runtime.fire_due_wakes() == 1
    assert await runtime.store.pending_wakes(response.session) == []


async def test_rebuild_schedule_skips_a_session_busy_elsewhere_and_a_newer_document(
    backend: Backend, clock: FakeClock
) -> None:
    runtime = Runtime(waiting_agent(), store=await backend.make(), clock=clock, lease_timeout=0.2)
    busy = await runtime.run("Waiter", "ping me later")
    (wake,) = await runtime.store.pending_wakes(busy.session)
    await runtime.store.complete_wake(wake)  # lost
    newer = Session(id="from-the-future", agent="Waiter", created_at=clock.now(),
                    schema_version=SESSION_SCHEMA_VERSION + 1)
    await runtime.store.create(newer)  # and one this tether cannot even parse
    await backend.corrupt(newer.id, newer.model_dump_json()[:-1] + ', "a_field_from_the_future": 1}')
    async with (await backend.make()).lease(busy.session):  # another worker is in a turn there
        assert await runtime.rebuild_schedule() == 0  # skipped, not failed, not written mid-turn
    assert await runtime.store.pending_wakes(busy.session) == []
    assert await runtime.rebuild_schedule() == 1  # free again: rebuilt
    (summary,) = [s for s in await runtime.store.list() if s.id == newer.id]
    assert summary.revision == 0  # the newer document was never written
