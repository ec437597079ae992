"""Wakes: stored by the turn's save, fired by the scheduler, re-derived by rebuild_schedule."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from runtime_helpers import SpyStore, counter_agent, msg, silence_agent, waiting_agent
from store_backends import Backend

from tether.engine.core.results import ScheduledWake
from tether.engine.core.session import Run, RunTrigger, Session, WaitingOn
from tether.errors import SessionFlowInvariant
from tether.runtime import Runtime
from tether.stores import TurnRecords, WakeRequest
from tether.testing import FakeClock


async def test_a_turns_schedule_is_stored(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                          clock: FakeClock) -> None:
    runtime = make_runtime(waiting_agent())
    response = await runtime.run("Waiter", "ping me later")
    assert response.success and response.message == "I will get back to you."
    assert response.result is not None
    (scheduled,) = response.result.schedule
    (pending,) = await spy.pending_wakes(response.session)
    assert (pending.key, pending.at) == (scheduled.key, clock.now() + timedelta(hours=1))


async def test_fire_due_wakes_runs_due_wakes_and_completes_them(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    fired: list[str] = []
    runtime = make_runtime(waiting_agent(fired=fired))
    response = await runtime.run("Waiter", "ping me later")
    (wake,) = await spy.pending_wakes(response.session)
    assert await runtime.fire_due_wakes() == 0  # not due yet
    clock.advance("61m")
    spy.calls.clear()
    assert await runtime.fire_due_wakes() == 1
    assert ("complete_wake", response.session) in spy.calls
    assert wake.key not in [w.key for w in await spy.pending_wakes(response.session)]
    stored = await spy.load(response.session)
    assert stored is not None and stored.revision == 3  # first turn 0-1; the wake turn: checkpoint 2, save 3
    assert stored.data == {"fired": True} and stored.runs == []  # the run resumed after its timer and ended
    assert len(fired) == 1 and await spy.pending_wakes() == []
    assert await runtime.fire_due_wakes() == 0  # completed: never fired twice
    assert len(fired) == 1


async def test_a_stale_wake_is_ignored(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                       clock: FakeClock) -> None:
    runtime = make_runtime(counter_agent())
    response = await runtime.run("Counter", msg())
    doc = await spy.load(response.session)
    assert doc is not None
    await spy.inner.save(doc, doc.revision, TurnRecords(wakes=[WakeRequest(key="gone", at=clock.now())]))
    events_before = len(await spy.events(doc.id))
    assert await runtime.fire_due_wakes() == 1
    assert await spy.pending_wakes(doc.id) == []
    stored = await spy.load(doc.id)
    assert stored is not None and stored.data == {"n": 1}
    assert stored.revision == 2  # the injected save; the ignored wake turn wrote nothing (no restore save either)
    assert len(await spy.events(doc.id)) == events_before


async def test_wakes_of_ended_sessions_are_dropped(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                                   clock: FakeClock) -> None:
    runtime = make_runtime(waiting_agent())
    response = await runtime.run("Waiter", "ping me later")
    await runtime.complete(response.session)
    clock.advance("2h")
    assert await runtime.fire_due_wakes() == 0
    assert await spy.pending_wakes(response.session) == []


async def test_the_background_scheduler_fires_due_wakes(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                                        clock: FakeClock) -> None:
    runtime = make_runtime(waiting_agent())
    response = await runtime.run("Waiter", "ping me later")
    (wake,) = await spy.pending_wakes(response.session)
    clock.advance("2h")
    runtime.start_scheduler(interval=0.01)
    try:
        for _ in range(500):
            if wake.key not in [w.key for w in await spy.pending_wakes(response.session)]:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the scheduler did not fire the due wake")
    finally:
        await runtime.stop_scheduler()
    await runtime.stop_scheduler()  # stopping twice is fine


async def test_rebuild_schedule_rederives_missing_wakes(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime([waiting_agent(), counter_agent()])
    waiting = await runtime.run("Waiter", "ping me later")
    await runtime.run("Counter", msg())
    (wake,) = await spy.pending_wakes(waiting.session)
    await spy.complete_wake(wake)  # lost (e.g. a schedule table restored from an old backup)
    assert await spy.pending_wakes() == []
    assert await runtime.rebuild_schedule() == 1
    assert [(w.session_id, w.key, w.at) for w in await spy.pending_wakes()] == [
        (waiting.session, wake.key, wake.at)]
    assert await runtime.rebuild_schedule() == 0  # nothing missing: nothing written


async def test_rebuild_schedule_restores_a_silence_wake(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    runtime = make_runtime([silence_agent(), counter_agent()])
    response = await runtime.run("Nudger", msg())
    assert response.success and response.message == "Got it."
    doc = await spy.load(response.session)
    assert doc is not None and doc.last_assistant_at is not None
    millis = int(doc.last_assistant_at.timestamp() * 1000)
    key = f"silence:nudge:{doc.id}:{millis}"
    (wake,) = await spy.pending_wakes(doc.id)  # the turn scheduled it
    assert (wake.key, wake.at) == (key, doc.last_assistant_at + timedelta(minutes=10))
    await spy.complete_wake(wake)  # lost
    assert await spy.pending_wakes() == []
    spy.saves.clear()
    assert await runtime.rebuild_schedule() == 1
    assert [(w.session_id, w.key, w.at) for w in await spy.pending_wakes()] == [(doc.id, key, wake.at)]
    ((saved, expected, records),) = spy.saves  # one CAS save of the unchanged document, with the wake
    assert expected == doc.revision and saved.data == doc.data and records is not None
    assert [(w.key, w.at) for w in records.wakes] == [(key, wake.at)]
    assert await runtime.rebuild_schedule() == 0
    clock.advance("11m")
    assert await runtime.fire_due_wakes() == 1  # the rebuilt wake starts the silence flow
    (nudge,) = [m.text for m in await spy.transcript(doc.id)][-1:]
    assert nudge == "Still there?"


async def test_rebuild_schedule_skips_sessions_of_agents_not_registered(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    waiting = await make_runtime(waiting_agent()).run("Waiter", "ping me later")
    (wake,) = await spy.pending_wakes(waiting.session)
    await spy.complete_wake(wake)
    assert await make_runtime(counter_agent()).rebuild_schedule() == 0
    assert await spy.pending_wakes() == []


def test_the_engine_derives_the_wakes_of_parked_runs() -> None:
    clock = FakeClock()
    now = clock.now()
    trigger = RunTrigger(kind="message", key="k")
    runs = [
        Run(id="r1", flow="f", trigger=trigger, started_at=now, status="waiting",
            waiting=WaitingOn(kind="timer", key="r1:w:1", until=now + timedelta(hours=1), set_at=now)),
        Run(id="r2", flow="f", trigger=trigger, started_at=now, status="suspended",
            waiting=WaitingOn(kind="signal", key="r2:s", set_at=now)),
        Run(id="r3", flow="f", trigger=trigger, started_at=now),
    ]
    session = Session(id="s", agent="Waiter", created_at=now, runs=runs)
    assert waiting_agent().pending_wakes(session) == [ScheduledWake("r1:w:1", now + timedelta(hours=1))]


def _nested(depth: int) -> str:
    return '{"k": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("document", ["{not json", "deep"], ids=["garbage", "nested-5000-deep"])
async def test_a_corrupt_neighbour_does_not_stop_the_wakes(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock, backend: Backend, document: str
) -> None:
    if document == "{not json" and backend.name == "postgres":
        pytest.skip("PostgreSQL's json column refuses a document that is not JSON")
    fired: list[str] = []
    runtime = make_runtime(waiting_agent(fired=fired))
    sessions = [(await runtime.run("Waiter", msg())).session for _ in range(3)]
    broken = sessions[1]
    doc = await spy.inner.load(broken)
    assert doc is not None
    if document == "deep":  # a stored state holding data nested 5,000 deep (the document itself is JSON)
        text = doc.model_dump_json(exclude_none=True)
        document = text.replace('"data":{}', f'"data":{{"deep":{_nested(5000)}}}', 1)
        assert document != text
    await backend.corrupt(broken, document)
    with pytest.raises(SessionFlowInvariant, match=f"Stored session '{broken}' is malformed"):
        await spy.load(broken)  # a typed store error, never a RecursionError
    clock.advance("61m")
    assert await runtime.fire_due_wakes() == 2  # the others fired and counted
    assert len(fired) == 2
    assert await spy.pending_wakes() == []  # the corrupt session's wake completed without running


async def test_an_unexpected_error_of_one_wake_leaves_it_and_fires_the_rest(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    fired: list[str] = []
    runtime = make_runtime(waiting_agent(fired=fired))
    sessions = [(await runtime.run("Waiter", msg())).session for _ in range(3)]
    load = spy.load

    async def flaky(session_id: str) -> Session | None:
        if session_id == sessions[0]:
            raise RecursionError("maximum recursion depth exceeded")  # a bug below the store's own errors
        return await load(session_id)

    monkeypatch.setattr(spy, "load", flaky)
    clock.advance("61m")
    assert await runtime.fire_due_wakes() == 2
    assert [w.session_id for w in await spy.pending_wakes()] == [sessions[0]]  # left to its lease, for a retry
