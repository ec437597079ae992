"""``PUT /v1/agents/{agent}/flows/{flow}``: hot registration over HTTP; a parked session finishes
on the version it started on, new sessions take the new one, and a bad flow is a 422 with every
issue."""

from __future__ import annotations

from typing import Any

import httpx
from server_client import ACME

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
