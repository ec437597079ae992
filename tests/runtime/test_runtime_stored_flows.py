"""Persisted hot registration: published flows are stored (a version row, an active one per flow),
loaded by another runtime on the same store, corrupt rows skipped with a warning, and a bundle
the store fails to write leaves no row behind. On every backend."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from store_backends import Backend

from tether import Agent, Field, Message
from tether.errors import FlowDefinitionError, StoreError
from tether.runtime import Runtime
from tether.runtime.stored_flows import load_stored_flows, publish_flows
from tether.stores import MemoryStore
from tether.testing import FakeClock


def agent() -> Agent:
    return Agent("Pia", fields={"name": Field("string")})


def flow(id_: str, version: str, text: str) -> dict[str, Any]:
    return {"flow": {"id": id_, "version": version, "on": [{"kind": "message"}],
                     "nodes": [{"kind": "reply", "id": "hi", "response": {"template": text}, "next": {"end": "done"}}]}}


async def runtime_on(backend: Backend, clock: FakeClock) -> Runtime:
    return Runtime(agent(), store=await backend.make(), clock=clock)


async def corrupt(backend: Backend, store: Any, flow_id: str) -> None:
    """Overwrite the stored document of ``flow_id`` behind the store's back."""
    if backend.name == "memory":
        assert isinstance(store, MemoryStore)
        from dataclasses import replace

        store._flows = [replace(r, document="{not json") if r.flow == flow_id else r for r in store._flows]
    elif backend.name == "sqlite":
        backend.execute("UPDATE tether_flows SET document = '{not json' WHERE flow = ?", (flow_id,))  # type: ignore[attr-defined]
    else:
        await backend.execute(  # type: ignore[attr-defined]
            f'UPDATE "{backend.schema}".tether_flows SET document = %s WHERE flow = %s', ("{not json", flow_id))


async def test_published_flows_are_stored_and_another_runtime_loads_them(backend: Backend, clock: FakeClock) -> None:
    first = await runtime_on(backend, clock)
    await publish_flows(first, "Pia", [flow("greet", "1", "v1")])
    await publish_flows(first, "Pia", [flow("greet", "2", "v2"), flow("bye", "1", "bye")])
    rows = await first.store.active_flows("Pia")
    assert [(r.flow, r.version, r.status) for r in rows] == [("greet", "2", "active"), ("bye", "1", "active")]
    assert rows[0].digest == first.agents["Pia"].flows_by_id["greet"].digest

    other = await runtime_on(backend, clock)  # another worker, or the same process after a restart
    assert "greet" not in other.agents["Pia"].flows_by_id
    assert await load_stored_flows(other) == []
    served = other.agents["Pia"].flows_by_id
    assert (served["greet"].version, served["bye"].version) == ("2", "1")
    assert served["greet"].digest == first.agents["Pia"].flows_by_id["greet"].digest
    done = await other.run("Pia", "hello")
    assert done.message == "v2"


async def test_a_refused_bundle_stores_nothing(backend: Backend, clock: FakeClock) -> None:
    runtime = await runtime_on(backend, clock)
    bad = flow("greet", "1", "v1")
    bad["flow"]["nodes"][0]["next"] = {"goto": "nowhere"}
    with pytest.raises(FlowDefinitionError):
        await publish_flows(runtime, "Pia", [flow("bye", "1", "bye"), bad])
    assert await runtime.store.active_flows("Pia") == []
    assert "bye" not in runtime.agents["Pia"].flows_by_id


async def test_a_corrupt_row_is_skipped_with_a_warning(backend: Backend, clock: FakeClock,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    first = await runtime_on(backend, clock)
    await publish_flows(first, "Pia", [flow("greet", "1", "v1"), flow("bye", "1", "bye")])
    await corrupt(backend, first.store, "greet")
    other = await runtime_on(backend, clock)
    with caplog.at_level(logging.WARNING, logger="tether.runtime"):
        skipped = await load_stored_flows(other)
    assert [(i.code, i.flow, i.severity) for i in skipped] == [("stored-flow-skipped", "greet", "warning")]
    assert "stored version" in caplog.text and "'greet'" in caplog.text
    assert "bye" in other.agents["Pia"].flows_by_id and "greet" not in other.agents["Pia"].flows_by_id


async def test_a_bundle_the_store_fails_to_write_leaves_no_row(backend: Backend, clock: FakeClock) -> None:
    if backend.name == "memory":
        pytest.skip("the memory store cannot fail half-way")
    runtime = await runtime_on(backend, clock)
    await publish_flows(runtime, "Pia", [flow("greet", "1", "v1")])
    if backend.name == "sqlite":
        backend.execute("CREATE TRIGGER refuse BEFORE INSERT ON tether_flows WHEN NEW.flow = 'bye' "  # type: ignore[attr-defined]
                        "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    else:
        s = f'"{backend.schema}"'
        await backend.execute(  # type: ignore[attr-defined]
            f"CREATE FUNCTION {s}.refuse() RETURNS trigger AS $$ BEGIN IF NEW.flow = 'bye' THEN "
            "RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        await backend.execute(  # type: ignore[attr-defined]
            f"CREATE TRIGGER refuse BEFORE INSERT ON {s}.tether_flows FOR EACH ROW EXECUTE FUNCTION {s}.refuse()")
    with pytest.raises(StoreError):
        await publish_flows(runtime, "Pia", [flow("greet", "2", "v2"), flow("bye", "1", "bye")])
    rows = await runtime.store.active_flows("Pia")
    assert [(r.flow, r.version) for r in rows] == [("greet", "1")]  # v2 was rolled back; v1 is still active
    assert runtime.agents["Pia"].flows_by_id["greet"].version == "1"
    assert (await runtime.run("Pia", Message("hi"))).message == "v1"
