"""``PUT /v1/agents/{agent}/flows/{flow}``: hot registration over HTTP; a parked session finishes
on the version it started on, new sessions take the new one, and a bad flow is a 422 with every
issue. Across workers on one store: a run started on another worker's new version continues here,
and new runs take it after the stored flow refresh."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_agents import echo_agent
from server_client import ACME, KEYS, app_client

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore
from tether.testing import FakeClock

ECHO = "/v1/agents/Echo"


def flow(version: str, text: str) -> dict[str, Any]:
    return {"flow": {"id": "visit", "version": version, "nodes": [
        {"kind": "wait", "id": "later", "event": "arrived"},
        {"kind": "reply", "id": "greet", "response": {"template": text}, "next": {"end": "visited"}},
    ]}}


async def test_a_new_version_serves_new_sessions_while_a_parked_one_keeps_its_own(client: httpx.AsyncClient) -> None:
    first = await client.put(f"{ECHO}/flows/visit", json=flow("1", "version one"), headers=ACME)
    assert first.status_code == 200, first.text
    assert first.json()["flow"] == "visit" and first.json()["version"] == "1"
    parked = await client.post(f"{ECHO}/sessions", json={"flow": "visit"}, headers=ACME)
    assert parked.status_code == 201, parked.text
    sid = parked.json()["session"]
    second = await client.put(f"{ECHO}/flows/visit", json=flow("2", "version two"), headers=ACME)
    assert second.status_code == 200 and second.json()["digest"] != first.json()["digest"]
    resumed = await client.post(f"{ECHO}/sessions/{sid}/events", json={"name": "arrived", "key": "k1"}, headers=ACME)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["message"] == "version one"
    fresh = (await client.post(f"{ECHO}/sessions", json={"flow": "visit"}, headers=ACME)).json()["session"]
    done = await client.post(f"{ECHO}/sessions/{fresh}/events", json={"name": "arrived", "key": "k2"}, headers=ACME)
    assert done.json()["message"] == "version two"


async def test_a_bad_flow_is_refused_with_every_issue(client: httpx.AsyncClient) -> None:
    bad = flow("1", "hi")
    bad["flow"]["nodes"][1]["next"] = {"goto": "gret"}
    bad["flow"]["nodes"].append({"kind": "action", "id": "x", "tool": "nope"})
    response = await client.put(f"{ECHO}/flows/visit", json=bad, headers=ACME)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid-flow"
    assert {(d["code"], d["hint"]) for d in body["details"]} >= {
        ("unresolved-transition", "did you mean 'greet'?"), ("unknown-tool", "known tools: none")}
    repairs = {d["code"]: d["repair"] for d in body["details"]}
    assert repairs["unknown-tool"] == {"operation": "update-node", "arguments": {"node_id": "x"}, "legal_sources": []}
    assert repairs["unresolved-transition"]["operation"] == "set-transition"
    listed = (await client.get("/v1/agents", headers=ACME)).json()["agents"]
    assert "visit" not in {f["id"] for a in listed for f in a["flows"]}
    mismatch = await client.put(f"{ECHO}/flows/other", json=flow("1", "hi"), headers=ACME)
    assert (mismatch.status_code, mismatch.json()["code"]) == (422, "flow-id-mismatch")
    unknown = await client.put("/v1/agents/Nobody/flows/visit", json=flow("1", "hi"), headers=ACME)
    assert unknown.status_code == 404


async def test_a_flow_put_before_a_restart_is_served_after_it(tmp_path: Path) -> None:
    clock = FakeClock("2026-01-05T09:00:00Z")

    def runtime() -> Runtime:
        return Runtime([echo_agent()], store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)

    before = runtime()
    async for client in app_client(create_app(before, api_keys=KEYS)):
        put = await client.put(f"{ECHO}/flows/visit", json=flow("3", "stored"), headers=ACME)
        assert put.status_code == 200, put.text
    await before.close()
    after = runtime()  # a restart: a new process on the same database
    assert "visit" not in after.agents["Echo"].flows_by_id
    async for client in app_client(create_app(after, api_keys=KEYS)):
        listed = (await client.get("/v1/agents", headers=ACME)).json()["agents"]
        assert "visit" in {f["id"] for a in listed for f in a["flows"]}
        assert after.agents["Echo"].flows_by_id["visit"].version == "3"
    await after.close()


async def test_a_flow_put_on_one_worker_reaches_another_on_the_same_store(tmp_path: Path) -> None:
    clock = FakeClock("2026-01-05T09:00:00Z")
    a = Runtime([echo_agent()], store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)
    b = Runtime([echo_agent()], store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)
    app_b = create_app(b, api_keys=KEYS, flow_refresh=0.01)
    async for on_a in app_client(create_app(a, api_keys=KEYS, flow_refresh=0)):
        async for on_b in app_client(app_b):
            put = await on_a.put(f"{ECHO}/flows/visit", json=flow("1", "version one"), headers=ACME)
            assert put.status_code == 200, put.text
            sid = (await on_a.post(f"{ECHO}/sessions", json={"flow": "visit"}, headers=ACME)).json()["session"]
            # a run that started on a's new version continues on b (was: the flow unknown there, the run lost)
            resumed = await on_b.post(f"{ECHO}/sessions/{sid}/events", json={"name": "arrived", "key": "k1"},
                                      headers=ACME)
            assert resumed.status_code == 200 and resumed.json()["message"] == "version one", resumed.text

            put = await on_a.put(f"{ECHO}/flows/visit", json=flow("2", "version two"), headers=ACME)
            assert put.status_code == 200, put.text
            for _ in range(6000):  # b's refresh runs every 0.01 s; the bound only guards against a hang
                if b.agents["Echo"].flows_by_id["visit"].version == "2":
                    break
                await asyncio.sleep(0.01)
            fresh = (await on_b.post(f"{ECHO}/sessions", json={"flow": "visit"}, headers=ACME)).json()["session"]
            done = await on_b.post(f"{ECHO}/sessions/{fresh}/events", json={"name": "arrived", "key": "k2"},
                                   headers=ACME)
            assert done.json()["message"] == "version two"  # new runs on b take a's publish
        assert not app_b.state.flow_refresh.running  # stopped with the server
    await a.close()
    await b.close()


async def test_the_flow_refresh_runs_while_the_server_is_up_unless_it_is_0(runtime: Runtime) -> None:
    app = create_app(runtime, api_keys=KEYS)
    assert app.state.flow_refresh.interval == 5.0
    async for _ in app_client(app):
        assert app.state.flow_refresh.running
    assert not app.state.flow_refresh.running
    off = create_app(runtime, api_keys=KEYS, flow_refresh=0)
    async for _ in app_client(off):
        assert not off.state.flow_refresh.running
    with pytest.raises(ValueError, match="refresh interval must be >= 0"):
        create_app(runtime, api_keys=KEYS, flow_refresh=-1)
