"""The HTTP API over a real SQLite store: every route, the seed 004 envelope, idempotent retries,
paging, the host operations, and JSON errors for bad input."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
from server_agents import BOOM, NOTHING_FOUND, echo_agent, frugal_agent
from server_client import ACME, KEYS, app_client

from tether.engine.core.session import Session
from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import MemoryStore, SQLiteStore
from tether.testing import FakeClock

ECHO = "/v1/agents/Echo/sessions"


async def _session(client: httpx.AsyncClient, agent: str = "Echo", **body: object) -> str:
    created = await client.post(f"/v1/agents/{agent}/sessions", json=body or None, headers=ACME)
    assert created.status_code == 201, created.text
    return str(created.json()["session"])


async def test_health_ready_and_the_agent_list_with_graphs(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    listed = (await client.get("/v1/agents", headers=ACME)).json()["agents"]
    assert [a["id"] for a in listed] == ["Echo", "Refunder"]
    chat, crm = listed[0]["flows"]
    assert crm["id"] == "crm" and crm["description"] == "acknowledges a CRM update"
    assert chat["id"] == "chat" and chat["nodes"] == ["count", "answer"]
    assert chat["mermaid"].startswith("flowchart TD") and "n_count" in chat["mermaid"]


async def test_a_message_returns_the_seed_004_envelope(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    sent = await client.post(f"{ECHO}/{sid}/messages", json={"text": "hi"}, headers=ACME)
    assert sent.status_code == 200
    assert sent.json() == {"success": True, "completed": True, "message": "reply 1: hi", "session": sid,
                           "content_type": "text/plain", "code": None}


async def test_a_retried_message_id_returns_the_first_answer(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    url = f"{ECHO}/{sid}/messages"
    first = await client.post(url, json={"text": "hi"}, headers={**ACME, "Idempotency-Key": "k1"})
    again = await client.post(url, json={"text": "hi"}, headers={**ACME, "Idempotency-Key": "k1"})
    by_body = await client.post(url, json={"text": "hi", "id": "k1"}, headers=ACME)
    assert first.json()["message"] == again.json()["message"] == by_body.json()["message"] == "reply 1: hi"
    assert (await client.post(url, json={"text": "hi"}, headers=ACME)).json()["message"] == "reply 2: hi"
    clash = await client.post(url, json={"text": "hi", "id": "k2"}, headers={**ACME, "Idempotency-Key": "k3"})
    assert clash.status_code == 422 and clash.json()["code"] == "invalid-body"
    transcript = (await client.get(f"{ECHO}/{sid}/transcript", headers=ACME)).json()["messages"]
    assert [m["text"] for m in transcript] == ["hi", "reply 1: hi", "hi", "reply 2: hi"]


async def test_a_resent_answered_message_is_a_duplicate_completed_as_it_was(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    url = f"{ECHO}/{sid}/messages"
    first = (await client.post(url, json={"text": "hi", "id": "k1"}, headers=ACME)).json()
    assert first["completed"] is True and first["code"] is None  # the chat flow ended: completed
    again = (await client.post(url, json={"text": "hi", "id": "k1"}, headers=ACME)).json()
    assert again == {**first, "code": "duplicate-input"}  # the same answer, completed as it was
    handed = (await client.post(url, json={"text": "human", "id": "k2"}, headers=ACME)).json()
    resent = (await client.post(url, json={"text": "human", "id": "k2"}, headers=ACME)).json()
    assert resent == {**handed, "code": "duplicate-input"} and resent["completed"] is True
    transcript = (await client.get(f"{ECHO}/{sid}/transcript", headers=ACME)).json()["messages"]
    assert [m["text"] for m in transcript][:2] == ["hi", "reply 1: hi"] and len(transcript) == 4


async def test_a_resent_message_whose_turn_asks_is_a_duplicate_not_completed(tmp_path: Path) -> None:
    clock = FakeClock("2026-01-05T09:00:00Z")
    runtime = Runtime(frugal_agent(), store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)
    async for client in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        sid = await _session(client, "Frugal")
        url = f"/v1/agents/Frugal/sessions/{sid}/messages"
        first = (await client.post(url, json={"text": "hi", "id": "m1"}, headers=ACME)).json()
        assert first["completed"] is False and first["message"] == "What is your name?"
        again = (await client.post(url, json={"text": "hi", "id": "m1"}, headers=ACME)).json()
        assert again == {**first, "code": "duplicate-input"}
        state = (await client.get(f"/v1/agents/Frugal/sessions/{sid}", headers=ACME)).json()
        assert state["usage"]["llm_calls"] == 1  # the resent message ran no turn
    await runtime.close()


async def test_session_state_transcript_and_events_are_paged(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    for text in ("a", "b", "c"):
        await client.post(f"{ECHO}/{sid}/messages", json={"text": text}, headers=ACME)
    state = (await client.get(f"{ECHO}/{sid}", headers=ACME)).json()
    assert state["id"] == sid and state["status"] == "running" and state["tenant"] == "acme"
    assert state["agent"] == "Echo" and state["revision"] >= 1 and state["pending_approvals"] == []
    page = (await client.get(f"{ECHO}/{sid}/transcript?limit=4", headers=ACME)).json()
    assert [m["seq"] for m in page["messages"]] == [1, 2, 3, 4] and page["next"] == 4
    rest = (await client.get(f"{ECHO}/{sid}/transcript?after=4&limit=4", headers=ACME)).json()
    assert [m["text"] for m in rest["messages"]] == ["c", "reply 3: c"] and rest["next"] is None
    events = (await client.get(f"{ECHO}/{sid}/events?limit=2", headers=ACME)).json()
    assert len(events["events"]) == 2 and events["next"] == events["events"][-1]["seq"]
    more = (await client.get(f"{ECHO}/{sid}/events?after={events['next']}", headers=ACME)).json()
    assert more["events"] and more["events"][0]["seq"] == events["next"] + 1
    bad = await client.get(f"{ECHO}/{sid}/events?limit=x", headers=ACME)
    assert bad.status_code == 422 and bad.json()["code"] == "invalid-query"


async def test_delete_removes_the_session_and_its_records(client: httpx.AsyncClient, runtime: Runtime) -> None:
    sid = await _session(client)
    await client.post(f"{ECHO}/{sid}/messages", json={"text": "hi"}, headers=ACME)
    deleted = await client.delete(f"{ECHO}/{sid}", headers=ACME)
    assert deleted.status_code == 204
    assert await runtime.store.load(sid) is None and await runtime.store.transcript(sid) == []
    gone = await client.get(f"{ECHO}/{sid}", headers=ACME)
    assert gone.status_code == 404 and gone.json()["code"] == "session-not-found"


async def test_an_approval_is_listed_then_decided(client: httpx.AsyncClient, refunds: list[int]) -> None:
    created = await client.post("/v1/agents/Refunder/sessions", json={"flow": "refund"}, headers=ACME)
    assert created.status_code == 201 and created.json()["reply"]["success"] is True
    sid = created.json()["session"]
    url = f"/v1/agents/Refunder/sessions/{sid}"
    (pending,) = (await client.get(url, headers=ACME)).json()["pending_approvals"]
    assert pending["request"] == {"summary": "Refund 30?", "payload": {"amount": 30}}
    missing = await client.post(f"{url}/approvals/nope", json={"decision": "approved"}, headers=ACME)
    assert missing.status_code == 404 and missing.json()["code"] == "approval-not-found"
    approval = quote(pending["approval_id"], safe="")  # approval ids hold '#': encode them in the path
    decided = await client.post(f"{url}/approvals/{approval}",
                                json={"decision": "approved", "decided_by": "ann"}, headers=ACME)
    assert decided.status_code == 200 and decided.json()["message"] == "refund approved by ann"
    assert refunds == [30]
    assert (await client.get(url, headers=ACME)).json()["pending_approvals"] == []


async def test_a_signal_resumes_the_waiting_run(client: httpx.AsyncClient) -> None:
    sid = await _session(client, "Refunder")
    url = f"/v1/agents/Refunder/sessions/{sid}"
    await client.post(f"{url}/messages", json={"text": "I will pay"}, headers=ACME)
    waiting = (await client.get(url, headers=ACME)).json()["waiting"]
    assert [w["kind"] for w in waiting] == ["signal"]
    paid = await client.post(f"{url}/signals/paid", json={"payload": {"amount": 5}, "id": "s1"}, headers=ACME)
    assert paid.status_code == 200 and paid.json()["message"] == "payment of 5 received"


async def test_a_host_event_and_a_hand_off_released(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    url = f"{ECHO}/{sid}"
    event = await client.post(f"{url}/events", json={"name": "crm-updated", "payload": {"x": 1}, "key": "e1"},
                              headers=ACME)
    assert event.status_code == 200 and event.json()["message"] == "noted the CRM update"
    handed = await client.post(f"{url}/messages", json={"text": "human"}, headers=ACME)
    assert handed.json()["completed"] is True
    assert (await client.get(url, headers=ACME)).json()["status"] == "handed_off"
    quiet = await client.post(f"{url}/messages", json={"text": "hello?"}, headers=ACME)
    assert quiet.json()["message"] == ""
    released = await client.post(f"{url}/release", headers=ACME)
    assert released.json() == {"session": sid, "status": "running"}
    assert (await client.post(f"{url}/messages", json={"text": "back"}, headers=ACME)).json()["message"] \
        == "reply 1: back"


async def test_bad_requests_are_json_with_a_stable_code(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    url = f"{ECHO}/{sid}/messages"
    cases = [
        (await client.get("/nope", headers=ACME), 404, "not-found"),
        (await client.put(url, json={"text": "x"}, headers=ACME), 405, "method-not-allowed"),
        (await client.post("/v1/agents/Nobody/sessions", headers=ACME), 404, "agent-not-found"),
        (await client.post(f"{ECHO}/missing/messages", json={"text": "x"}, headers=ACME), 404, "session-not-found"),
        (await client.post(url, content=b"{not json", headers=ACME), 400, "invalid-json"),
        (await client.post(url, json={"txt": "x"}, headers=ACME), 422, "invalid-body"),
        (await client.post(url, json={"text": "x" * 20_000}, headers=ACME), 413, "body-too-large"),
        (await client.post(url, json={"text": "bad\x00"}, headers=ACME), 422, "invalid-input"),
        (await client.post(f"{ECHO}", json={"flow": "nope"}, headers=ACME), 422, "invalid-body"),
    ]
    for response, status, code in cases:
        assert (response.status_code, response.json()["code"]) == (status, code), response.text
    missing_field = await client.post(url, json={"txt": "x"}, headers=ACME)
    assert missing_field.json()["details"][0]["field"] == "text"


async def test_an_unexpected_failure_is_a_500_json_without_details() -> None:
    class BrokenStore(MemoryStore):
        async def load(self, session_id: str) -> Session | None:
            raise RuntimeError("secret stack detail")

    runtime = Runtime(echo_agent(), store=BrokenStore())
    async for broken in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        response = await broken.get(f"{ECHO}/s1", headers=ACME)
        assert response.status_code == 500
        assert response.json() == {"success": False, "code": "internal-error",
                                   "message": "the server failed; this is a bug"}
    await runtime.close()


async def test_session_state_says_what_the_session_spent_and_what_it_logged(tmp_path: Path) -> None:
    clock = FakeClock("2026-01-05T09:00:00Z")
    runtime = Runtime(frugal_agent(), store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)
    async for client in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        url = "/v1/agents/Frugal/sessions"
        sid = await _session(client, "Frugal")
        fresh = (await client.get(f"{url}/{sid}", headers=ACME)).json()
        assert fresh["usage"]["llm_calls"] == 0 and (fresh["log"], fresh["warn"], fresh["error"]) == ([], [], [])
        for text in ("umm", "pardon?"):
            sent = await client.post(f"{url}/{sid}/messages", json={"text": text}, headers=ACME)
            assert sent.json()["message"] == "What is your name?"
        state = (await client.get(f"{url}/{sid}", headers=ACME)).json()
        assert state["usage"] == {"llm_calls": 2, "prompt_tokens": 2 * NOTHING_FOUND.prompt_tokens,
                                  "completion_tokens": 2 * NOTHING_FOUND.completion_tokens,
                                  "cached_input_tokens": 2 * NOTHING_FOUND.cached_input_tokens,
                                  "cache_creation_tokens": 0, "reasoning_tokens": 0, "agent_calls": 0,
                                  "workflow_calls": 0}
        assert [(w["level"], w["message"], w["at"]) for w in state["warn"]] == [
            ("warn", "extraction for 'ask_name' returned no usable data", "2026-01-05T09:00:00Z")] * 2
        assert state["log"] == [] and state["error"] == []
        failed = await _session(client, "Frugal", flow="boom")
        [error] = (await client.get(f"{url}/{failed}", headers=ACME)).json()["error"]
        assert error["level"] == "error" and BOOM in error["message"]
        assert (error["code"], error["flow"], error["node"]) == ("node-failed", "boom", "explode")
    await runtime.close()
