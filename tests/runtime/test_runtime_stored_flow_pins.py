"""Stored flow versions across a restart: a run parked on a version that a publish superseded (a
stored one, or the agent's own code-defined one) finishes on it in a new runtime on the same store,
while new runs take the active version; a corrupt superseded row is skipped with a warning; two
concurrent publishes for one agent run one after the other. On every backend."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from runtime_helpers import greet, park, plain_agent
from store_backends import Backend

from tether import Agent
from tether.dialect import register_flows
from tether.runtime import Runtime
from tether.runtime.stored_flows import load_stored_flows, publish_flows
from tether.stores import MemoryStore
from tether.stores.flow_versions import FlowVersion
from tether.testing import FakeClock


def coded_agent() -> Agent:
    """An agent whose own definition (built at boot, not stored) has ``greet`` version 0."""
    return register_flows(plain_agent(), [greet("0", "v0: hi ${state.name}")])


async def runtime_on(backend: Backend, clock: FakeClock, agent: Agent | None = None) -> Runtime:
    return Runtime(agent or plain_agent(), store=await backend.make(), clock=clock)


async def finish(runtime: Runtime, session: str, name: str) -> str:
    done = await runtime.run("Pia", name, session_id=session)
    assert done.success and done.completed, done
    return done.message


async def restart(backend: Backend, clock: FakeClock, agent: Agent | None = None) -> Runtime:
    """A new runtime on the same store that loads the stored flows, as a server does at boot."""
    runtime = await runtime_on(backend, clock, agent)
    assert await load_stored_flows(runtime) == []
    return runtime


async def test_runs_parked_on_superseded_stored_versions_finish_on_them_after_a_restart(
        backend: Backend, clock: FakeClock) -> None:
    first = await runtime_on(backend, clock)
    await publish_flows(first, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(first)
    await publish_flows(first, "Pia", [greet("2", "v2: welcome ${state.name}")])
    on_v2 = await park(first)
    await publish_flows(first, "Pia", [greet("3", "v3: hey ${state.name}")])
    kept = await first.store.superseded_flows("Pia")
    assert [(r.flow, r.version, r.status) for r in kept] == [("greet", "1", "superseded"), ("greet", "2", "superseded")]

    after = await restart(backend, clock)
    assert after.agents["Pia"].flows_by_id["greet"].version == "3"
    assert set(after.agents["Pia"].retired_flows) == {r.digest for r in kept}  # kept for parked runs only
    assert await finish(after, on_v1, "Ann") == "v1: hello Ann"  # no flow-drift
    assert await finish(after, on_v2, "Bea") == "v2: welcome Bea"
    fresh = await park(after)
    assert await finish(after, fresh, "Cid") == "v3: hey Cid"


async def test_a_run_parked_on_the_code_defined_version_finishes_on_it_after_a_restart(
        backend: Backend, clock: FakeClock) -> None:
    first = await runtime_on(backend, clock, coded_agent())
    on_v0 = await park(first)
    await publish_flows(first, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(first)
    await publish_flows(first, "Pia", [greet("2", "v2: welcome ${state.name}")])

    after = await restart(backend, clock, coded_agent())
    assert await finish(after, on_v0, "Ann") == "v0: hi Ann"
    assert await finish(after, on_v1, "Bea") == "v1: hello Bea"
    assert await finish(after, await park(after), "Cid") == "v2: welcome Cid"


async def corrupt_version(backend: Backend, store: Any, version: str, document: str) -> None:
    """Overwrite the stored document of ``greet`` version ``version`` behind the store's back."""
    if backend.name == "memory":
        assert isinstance(store, MemoryStore)
        from dataclasses import replace

        store._flows = [replace(r, document=document) if r.version == version else r for r in store._flows]
    elif backend.name == "sqlite":
        backend.execute("UPDATE tether_flows SET document = ? WHERE version = ?", (document, version))  # type: ignore[attr-defined]
    else:
        await backend.execute(  # type: ignore[attr-defined]
            f'UPDATE "{backend.schema}".tether_flows SET document = %s WHERE version = %s', (document, version))


@pytest.mark.parametrize("document", ["{not json", '"greet.yaml"'], ids=["not-json", "not-an-object"])
async def test_a_corrupt_superseded_row_is_skipped_with_a_warning(backend: Backend, clock: FakeClock, document: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    first = await runtime_on(backend, clock)
    await publish_flows(first, "Pia", [greet("1", "v1: hello ${state.name}")])
    on_v1 = await park(first)
    await publish_flows(first, "Pia", [greet("2", "v2: welcome ${state.name}")])
    on_v2 = await park(first)
    await publish_flows(first, "Pia", [greet("3", "v3: hey ${state.name}")])
    await corrupt_version(backend, first.store, "1", document)

    after = await runtime_on(backend, clock)
    with caplog.at_level(logging.WARNING, logger="tether.runtime"):
        skipped = await load_stored_flows(after)
    assert [(i.code, i.flow, i.severity) for i in skipped] == [("stored-flow-skipped", "greet", "warning")]
    assert "superseded" in skipped[0].message and "'greet'" in caplog.text
    assert after.agents["Pia"].flows_by_id["greet"].version == "3"
    assert await finish(after, on_v2, "Bea") == "v2: welcome Bea"  # the other superseded version is served
    moved = await after.run("Pia", "Ann", session_id=on_v1)  # its version is gone: it goes on at its node on v3
    assert moved.success and moved.message == "v3: hey Ann", moved
    assert moved.result is not None and "flow-drift-continued" in moved.result.codes()


async def test_concurrent_publishes_for_one_agent_run_one_after_the_other(
        backend: Backend, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = await runtime_on(backend, clock)
    store = runtime.store
    real_put = store.put_flows
    entered: list[str] = []
    stored_first = asyncio.Event()
    release_first = asyncio.Event()

    async def put_flows(agent: str, bundle: list[FlowVersion]) -> None:
        entered.append(bundle[0].version or "")
        await real_put(agent, bundle)
        if len(entered) == 1:  # the first publish waits between storing and serving its bundle
            stored_first.set()
            await release_first.wait()

    monkeypatch.setattr(store, "put_flows", put_flows)
    first = asyncio.create_task(publish_flows(runtime, "Pia", [greet("1", "v1: ${state.name}")]))
    await stored_first.wait()
    second = asyncio.create_task(publish_flows(runtime, "Pia", [greet("2", "v2: ${state.name}")]))
    for _ in range(20):  # ample turns of the loop for an unserialised second publish to reach the store
        await asyncio.sleep(0)
    assert entered == ["1"], "the second publish reached the store while the first was still publishing"
    release_first.set()
    await asyncio.gather(first, second)

    assert entered == ["1", "2"]
    (active,) = await store.active_flows("Pia")
    (superseded,) = await store.superseded_flows("Pia")
    served = runtime.agents["Pia"].flows_by_id["greet"]
    assert (active.version, active.digest) == (served.version, served.digest) == ("2", served.digest)
    assert list(runtime.agents["Pia"].retired_flows) == [superseded.digest]  # version 1 was served, then replaced
    assert await finish(runtime, await park(runtime), "Ann") == "v2: Ann"


async def test_a_stored_flow_that_starts_a_flow_republished_after_it_loads(backend: Backend, clock: FakeClock) -> None:
    first = await runtime_on(backend, clock)
    await publish_flows(first, "Pia", [greet("1", "v1: hello ${state.name}")])
    hub = {"flow": {"id": "hub", "version": "1", "nodes": [
        {"kind": "reply", "id": "r", "response": {"template": "hub"}, "next": {"start_flow": "greet"}}]}}
    await publish_flows(first, "Pia", [hub])  # refers to greet, whose active row is now older than hub's
    await publish_flows(first, "Pia", [greet("2", "v2: welcome ${state.name}")])  # ... and now newer

    after = await restart(backend, clock)  # no row is skipped: hub is checked knowing every stored flow
    assert set(after.agents["Pia"].flows_by_id) == {"greet", "hub"}
