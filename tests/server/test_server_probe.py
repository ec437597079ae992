"""Bodies and cursors a black-box probe of the server sent: each is refused with a clear 4xx,
nothing is changed, and the server goes on serving."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import pytest
from server_client import ACME, GLOBEX, KEYS, app_client

from tether.runtime import Runtime
from tether.server import create_app

ECHO = "/v1/agents/Echo/sessions"


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app with the default body limit (a body nested 5,000 deep fits in it)."""
    async for c in app_client(create_app(runtime, api_keys=KEYS)):
        yield c


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def _session(client: httpx.AsyncClient, headers: dict[str, str] = ACME) -> str:
    created = await client.post(ECHO, headers=headers)
    assert created.status_code == 201
    return str(created.json()["session"])


async def _still_serving(client: httpx.AsyncClient, sid: str) -> None:
    answer = await client.post(f"{ECHO}/{sid}/messages", json={"text": "still there?"}, headers=ACME)
    assert answer.status_code == 200 and answer.json()["message"].endswith("still there?")


@pytest.mark.parametrize("route, body", [
    ("messages", '{"text": BODY}'),
    ("events", '{"name": "crm-updated", "payload": BODY}'),
    ("signals/paid", '{"payload": BODY}'),
])
async def test_json_nested_5000_deep_is_a_400(client: httpx.AsyncClient, route: str, body: str) -> None:
    sid = await _session(client)
    sent = await client.post(f"{ECHO}/{sid}/{route}", content=body.replace("BODY", _nested(5000)).encode(),
                             headers={**ACME, "Content-Type": "application/json"})
    assert sent.status_code == 400, sent.text
    assert sent.json()["code"] == "invalid-json" and "nested too deeply" in sent.json()["message"]
    assert (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"] == []
    await _still_serving(client, sid)


async def test_a_payload_nested_past_the_limit_is_refused_before_anything_runs(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    sent = await client.post(f"{ECHO}/{sid}/events", content=b'{"name": "crm-updated", "payload": '
                             + _nested(900).encode() + b"}",
                             headers={**ACME, "Content-Type": "application/json"})
    assert sent.status_code == 422 and sent.json()["code"] == "invalid-input"
    assert "event.payload is nested deeper than 100 levels" in sent.json()["message"]
    assert (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"] == []
    await _still_serving(client, sid)


async def test_a_start_input_900_deep_leaves_no_session_behind(client: httpx.AsyncClient) -> None:
    sent = await client.post(ECHO, content=b'{"flow": "crm", "input": ' + _nested(900).encode() + b"}",
                             headers={**ACME, "Content-Type": "application/json"})
    assert sent.status_code == 422, sent.text
    assert sent.json()["code"] == "invalid-input" and "start.input" in sent.json()["message"]
    assert (await client.get(ECHO, headers=ACME)).json()["sessions"] == []
    await _still_serving(client, await _session(client))


async def test_a_signal_id_with_a_lone_surrogate_is_a_422(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    sent = await client.post(f"{ECHO}/{sid}/signals/paid", content=b'{"id": "\\ud800"}',
                             headers={**ACME, "Content-Type": "application/json"})
    assert sent.status_code == 422, sent.text
    assert sent.json()["code"] == "invalid-input" and "signal.id holds a lone surrogate" in sent.json()["message"]
    assert (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"] == []
    await _still_serving(client, sid)


async def test_a_signal_no_run_waits_for_says_it_was_not_delivered(client: httpx.AsyncClient) -> None:
    sid = await _session(client)
    sent = await client.post(f"{ECHO}/{sid}/signals/paid", json={"payload": {"amount": 5}}, headers=ACME)
    assert sent.status_code == 200 and sent.json()["code"] == "signal-unclaimed" and sent.json()["message"] == ""


@pytest.mark.parametrize("cursor", [{"headers": {"Last-Event-ID": str(2**63)}}, {"params": {"after": str(2**63)}},
                                    {"params": {"after": str(10**30)}}])
async def test_a_stream_cursor_past_a_64_bit_seq_is_a_422(client: httpx.AsyncClient, cursor: dict) -> None:
    sid = await _session(client)
    headers = {**ACME, **cursor.get("headers", {})}
    sent = await client.get(f"{ECHO}/{sid}/stream", headers=headers, params=cursor.get("params"))
    assert sent.status_code == 422 and sent.json()["code"] == "invalid-query"
    await _still_serving(client, sid)


async def test_the_largest_seq_is_a_cursor_the_store_takes(runtime: Runtime) -> None:
    sid = (await runtime.run("Echo", "hi")).session
    assert await runtime.store.events(sid, after=2**63 - 1) == []


async def test_a_tenants_session_list_is_not_hidden_by_newer_sessions_of_another(client: httpx.AsyncClient) -> None:
    mine = await _session(client, ACME)
    for _ in range(8):  # more than the limit times four: the list fetched before it filtered
        await _session(client, GLOBEX)
    listed = (await client.get(ECHO, params={"limit": 1}, headers=ACME)).json()["sessions"]
    assert [row["id"] for row in listed] == [mine]
    assert len((await client.get(ECHO, params={"limit": 5}, headers=GLOBEX)).json()["sessions"]) == 5


async def test_a_tenants_sessions_are_listed_a_page_at_a_time(client: httpx.AsyncClient) -> None:
    mine = {await _session(client, ACME) for _ in range(5)}
    await _session(client, GLOBEX)
    seen: list[str] = []
    params: dict[str, str | int] = {"limit": 2}
    while True:
        page = (await client.get(ECHO, params=params, headers=ACME)).json()
        seen += [row["id"] for row in page["sessions"]]
        if page["next"] is None:
            break
        params = {"limit": 2, "after": page["next"]}
    assert len(seen) == 5 and set(seen) == mine  # every one once, in three pages
    whole = (await client.get(ECHO, params={"limit": 5}, headers=ACME)).json()
    assert [row["id"] for row in whole["sessions"]] == seen and whole["next"] is None
    refused = await client.get(ECHO, params={"after": "yesterday|x"}, headers=ACME)
    assert refused.status_code == 422 and refused.json()["code"] == "invalid-query"
    assert "<saved_at>|<session>" in refused.json()["message"]


async def test_an_abandoned_chunked_body_logs_no_traceback(runtime: Runtime,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(runtime, api_keys={})
    sid = (await runtime.run("Echo", "hi")).session
    parts = [{"type": "http.request", "body": b'{"text": "half', "more_body": True}, {"type": "http.disconnect"}]
    sent: list[dict] = []

    async def receive() -> dict:
        return parts.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": f"{ECHO}/{sid}/messages", "raw_path": f"{ECHO}/{sid}/messages".encode(), "query_string": b"",
             "root_path": "", "headers": [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")],
             "server": ("test", 80), "client": ("127.0.0.1", 1)}
    with caplog.at_level(logging.INFO, logger="tether.server"):
        await app(scope, receive, send)
    assert sent[0]["status"] == 400
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert any("disconnected" in r.getMessage() for r in caplog.records)
    assert [m.text for m in await runtime.store.transcript(sid)] == ["hi", "reply 1: hi"]
