"""``PUT /v1/agents/{agent}/flows/{flow}``: hot registration over HTTP; a parked session finishes
on the version it started on, new sessions take the new one, and a bad flow is a 422 with every
issue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
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
