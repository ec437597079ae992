"""Published flows across workers: two runtimes on one store, each booted with the stored flows
(as ``tether serve`` workers are). A publish on one reaches the other without a restart:

- a run that started on the other worker's new version continues here: the first turn meeting a
  digest this worker does not know reloads the agent's stored flows (once), then runs;
- new runs here take the new version after the next refresh (``refresh_stored_flows``), which
  reads only the active versions and re-registers nothing when they did not change.

A turn whose runs are all pinned to known versions reads no stored flow. On every backend."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from runtime_helpers import greet, park, plain_agent
from store_backends import Backend

from tether import Agent, Flow
from tether.dialect import register_flows
from tether.errors import StoreError
from tether.runtime import Runtime
from tether.runtime.stored_flows import load_stored_flows, publish_flows, refresh_stored_flows
from tether.stores.flow_versions import StoredFlow
from tether.testing import FakeClock


def coded_agent(on_drift: Any = "error") -> Agent:
    """An agent whose own definition (code, on every worker) has ``greet`` version 0."""
    agent = register_flows(plain_agent(), [greet("0", "v0: hi ${state.name}")])
    if on_drift == "error":
        return agent
    flow = agent.flows_by_id["greet"]
    return agent.with_flows(Flow(flow.id, start=flow.by_id[flow.start], nodes=flow.nodes, on=flow.on,
                                 on_drift=on_drift, version=flow.version))


class Reads:
    """Counts a store's reads of stored flow versions (``active_flows``, ``superseded_flows``)."""

    def __init__(self, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
        self.active = self.superseded = 0
        self.fail = False
        store = runtime.store
        active, superseded = store.active_flows, store.superseded_flows

        async def counted_active(agent: str) -> list[StoredFlow]:
            self.active += 1
            if self.fail:
                raise StoreError("the database is down", operation="active_flows")
            return await active(agent)

        async def counted_superseded(agent: str) -> list[StoredFlow]:
            self.superseded += 1
            return await superseded(agent)

        monkeypatch.setattr(store, "active_flows", counted_active)
        monkeypatch.setattr(store, "superseded_flows", counted_superseded)

    @property
    def counts(self) -> tuple[int, int]:
        return self.active, self.superseded


async def workers(backend: Backend, clock: FakeClock, agent: Any = plain_agent) -> tuple[Runtime, Runtime]:
    """Two workers on one store, each booted as a server boots (the stored flows loaded)."""
    pair = []
    for _ in range(2):
        runtime = Runtime(agent(), store=await backend.make(), clock=clock)
        assert await load_stored_flows(runtime) == []
        pair.append(runtime)
    return pair[0], pair[1]


async def finish(runtime: Runtime, session: str, name: str) -> str:
    done = await runtime.run("Pia", name, session_id=session)
    assert done.success, done
    assert done.result is not None and "flow-drift-restarted" not in done.result.codes(), done.result.codes()
    return done.message


async def test_a_run_of_a_flow_another_worker_published_continues_here(backend: Backend, clock: FakeClock) -> None:
    a, b = await workers(backend, clock)
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    session = await park(a)
    assert "greet" not in b.agents["Pia"].flows_by_id  # b has not refreshed yet
    assert await finish(b, session, "Ann") == "v1: hello Ann"  # was: the flow is gone here, the run skipped
    assert b.agents["Pia"].flows_by_id["greet"].version == "1"  # the reload serves it to new runs too


async def test_a_run_on_a_published_version_is_not_restarted_by_another_workers_own_version(
        backend: Backend, clock: FakeClock) -> None:
    a, b = await workers(backend, clock, lambda: coded_agent(on_drift="restart"))
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    session = await park(a)
    # was: b serves version 0, so the run silently started over (flow-drift-restarted), its progress lost
    assert await finish(b, session, "Ann") == "v1: hello Ann"


async def test_runs_parked_on_versions_superseded_since_continue_on_another_worker(
        backend: Backend, clock: FakeClock) -> None:
    a, b = await workers(backend, clock, coded_agent)
    on_v0 = await park(a)
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(a)
    await publish_flows(a, "Pia", [greet("2", "v2: welcome ${state.name}")])
    on_v2 = await park(a)
    await publish_flows(a, "Pia", [greet("3", "v3: hey ${state.name}")])

    assert await finish(b, on_v1, "Bea") == "v1: hello Bea"  # was: flow-drift
    assert await finish(b, on_v2, "Cid") == "v2: welcome Cid"
    assert await finish(b, on_v0, "Ann") == "v0: hi Ann"  # b's own version, kept by the reload
    assert await finish(b, await park(b), "Dan") == "v3: hey Dan"


async def test_known_digests_read_no_stored_flow_and_an_unknown_one_reloads_once(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = await workers(backend, clock, coded_agent)
    reads = Reads(b, monkeypatch)
    mine = await park(b)
    assert await finish(b, mine, "Ann") == "v0: hi Ann"
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    parked_here = await park(b)  # still version 0 here
    assert reads.counts == (0, 0)  # every run pinned to a version b serves: no read of the stored flows

    on_v1 = await park(a)
    assert await finish(b, on_v1, "Bea") == "v1: hello Bea"
    assert reads.counts == (1, 1)  # one reload
    assert await finish(b, parked_here, "Cid") == "v0: hi Cid"  # kept for the run parked on it
    assert reads.counts == (1, 1)

    a.register_flows("Pia", [greet("9", "v9: ${state.name}")])  # served by a only, never stored
    on_v9, also_on_v9 = await park(a), await park(a)
    moved = await b.run("Pia", "Dan", session_id=on_v9)  # unknown after the reload: the drift rules apply
    assert moved.success and moved.message == "v1: hello Dan", moved  # its node is still there: it goes on
    assert moved.result is not None and "flow-drift-continued" in moved.result.codes()
    assert reads.counts == (2, 2)
    again = await b.run("Pia", "Eve", session_id=also_on_v9)
    assert again.success and again.message == "v1: hello Eve", again
    assert reads.counts == (2, 2)  # a digest the store does not hold is not reloaded again


async def test_concurrent_requests_meeting_one_unknown_digest_reload_once(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = await workers(backend, clock, coded_agent)
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    sessions = [await park(a) for _ in range(3)]
    reads = Reads(b, monkeypatch)
    names = ("Ann", "Bea", "Cid")
    done = await asyncio.gather(*(finish(b, s, name) for s, name in zip(sessions, names, strict=True)))
    assert done == [f"v1: hello {name}" for name in names]
    assert reads.counts == (1, 1)  # the others waited for the first reload and found the version


@pytest.mark.parametrize("on_drift", ["error", "restart"])
async def test_a_store_failure_during_the_reload_fails_the_request_and_saves_nothing(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, on_drift: str) -> None:
    a, b = await workers(backend, clock, lambda: coded_agent(on_drift=on_drift))
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(a)
    before = await b.store.load(on_v1)
    reads = Reads(b, monkeypatch)
    reads.fail = True
    with caplog.at_level(logging.WARNING, logger="tether.runtime"):
        failed = await b.run("Pia", "Ann", session_id=on_v1)
    # not the drift policy: a restart would throw the run's progress away for a version the store holds
    assert not failed.success and failed.code == "SESSION_STORE_ERROR", failed
    assert failed.session == on_v1 and "the database is down" in failed.message
    assert "the database is down" in caplog.text
    after = await b.store.load(on_v1)
    assert after is not None and before is not None and after.revision == before.revision  # nothing saved
    reads.fail = False
    assert await finish(b, on_v1, "Ann") == "v1: hello Ann"  # the next request reloads


async def test_a_refresh_serves_another_workers_publish_to_new_runs(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = await workers(backend, clock, coded_agent)
    parked_here = await park(b)
    reads = Reads(b, monkeypatch)
    assert await refresh_stored_flows(b) == []
    assert reads.counts == (1, 0)  # the active versions only
    served = b.agents["Pia"]

    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    assert await finish(b, await park(b), "Ann") == "v0: hi Ann"  # not refreshed yet: b's own version
    assert await refresh_stored_flows(b) == ["Pia"]
    assert b.agents["Pia"] is not served
    assert await finish(b, await park(b), "Bea") == "v1: hello Bea"  # new runs take the published version
    assert await finish(b, parked_here, "Cid") == "v0: hi Cid"  # a parked run keeps its own

    served = b.agents["Pia"]
    before = reads.counts
    assert await refresh_stored_flows(b) == []
    assert b.agents["Pia"] is served  # nothing changed: nothing re-registered
    assert reads.counts == (before[0] + 1, before[1])
    await publish_flows(b, "Pia", [greet("2", "v2: welcome ${state.name}")])  # its own publish
    assert await refresh_stored_flows(b) == []  # is known: not reloaded
    assert b.agents["Pia"].flows_by_id["greet"].version == "2"


async def test_a_refresh_that_fails_is_logged_and_the_next_one_catches_up(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    a, b = await workers(backend, clock, coded_agent)
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    reads = Reads(b, monkeypatch)
    reads.fail = True
    with caplog.at_level(logging.WARNING, logger="tether.runtime"):
        assert await refresh_stored_flows(b) == []
    assert "'Pia'" in caplog.text and "the database is down" in caplog.text
    assert b.agents["Pia"].flows_by_id["greet"].version == "0"
    reads.fail = False
    assert await refresh_stored_flows(b) == ["Pia"]
    assert b.agents["Pia"].flows_by_id["greet"].version == "1"


async def test_a_runtime_that_never_loaded_stored_flows_does_not_start_now(backend: Backend, clock: FakeClock) -> None:
    a, _ = await workers(backend, clock, coded_agent)
    await publish_flows(a, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(a)
    script = Runtime(coded_agent(), store=await backend.make(), clock=clock)  # serves its code's flows only
    moved = await script.run("Pia", "Ann", session_id=on_v1)  # its version is unknown here: it goes on at its node
    assert moved.success and moved.message == "v0: hi Ann", moved
    assert moved.result is not None and "flow-drift-continued" in moved.result.codes()
    assert script.agents["Pia"].flows_by_id["greet"].version == "0"
