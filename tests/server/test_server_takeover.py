"""Human takeover over HTTP: the hand-off line, a person answering a handed-off session (stored
with its author, on the session's event stream, in the OpenAI endpoint's next answer), customer
messages pushed to operators, the waiting list, operator keys, and giving the session back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from server_client import ACME, GLOBEX, KEYS, Frames, app_client, served

from tether.engine.core.session import Session
from tether.flow.repair import Repair
from tether.runtime import Runtime
from tether.server import create_app
from tether.server.takeover import WAITING_REPLY
from tether.stores import TurnRecords
from tether.testing import FakeClock

ECHO = "/v1/agents/Echo/sessions"
HANDOFF_LINE = Repair().handoff
OPERATOR_KEYS = {"key-ann": "acme"}
ANN = {"Authorization": "Bearer key-ann"}


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """Clients of acme and globex, and acme's operator key (distinct from acme's client key)."""
    async for c in app_client(create_app(runtime, api_keys=KEYS, operator_keys=OPERATOR_KEYS)):
        yield c


async def _handed_off(client: httpx.AsyncClient) -> str:
    sid = (await client.post(ECHO, headers=ACME)).json()["session"]
    handed = (await client.post(f"{ECHO}/{sid}/messages", json={"text": "human"}, headers=ACME)).json()
    assert handed["message"] == HANDOFF_LINE  # never empty, and no model needed
    return str(sid)


async def test_a_person_answers_a_handed_off_session(client: httpx.AsyncClient) -> None:
    sid = await _handed_off(client)
    quiet = (await client.post(f"{ECHO}/{sid}/messages", json={"text": "is anyone there?"}, headers=ACME)).json()
    assert quiet["success"] and quiet["message"] == ""  # the bot stays quiet
    said = await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "Hi, Ann here. Let me look.",
                                                                      "by": "Ann"}, headers=ANN)
    assert said.status_code == 200, said.text
    assert said.json()["message"]["role"] == "agent" and said.json()["message"]["by"] == "Ann"
    transcript = (await client.get(f"{ECHO}/{sid}/transcript", headers=ACME)).json()["messages"]
    assert [(m["role"], m["text"], m.get("by")) for m in transcript] == [
        ("user", "human", None), ("assistant", HANDOFF_LINE, None),
        ("user", "is anyone there?", None), ("agent", "Hi, Ann here. Let me look.", "Ann")]
    events = (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"]
    pushed = [(e["type"], e["data"].get("text"), e["data"].get("by")) for e in events
              if e["type"] in ("customer-message", "operator-message")]
    assert pushed == [("customer-message", "is anyone there?", None),
                      ("operator-message", "Hi, Ann here. Let me look.", "Ann")]


async def test_the_waiting_list_is_oldest_first_with_the_reason_and_tenant_scoped(client: httpx.AsyncClient,
                                                                                   runtime: Runtime) -> None:
    clock = runtime.clock
    assert isinstance(clock, FakeClock)
    first = await _handed_off(client)
    clock.advance("1m")
    second = await _handed_off(client)
    clock.advance("1m")
    await client.post(f"{ECHO}/{first}/messages", json={"text": "still waiting"}, headers=ACME)  # saved last
    await client.post(f"{ECHO}/{second}/messages", json={"text": "hello?"}, headers=ACME)
    (await client.post(ECHO, headers=GLOBEX)).json()  # another tenant's sessions are not listed
    listed = (await client.get("/v1/handoffs", headers=ANN)).json()["sessions"]
    assert [row["session"] for row in listed] == [first, second]
    assert listed[0]["reason"] == "the customer asked for a person"
    assert listed[1]["customer_messages"] == 1 and listed[1]["last_customer_message"] == "hello?"
    await client.post(f"{ECHO}/{first}/release", json={"by": "Ann"}, headers=ANN)
    assert [row["session"] for row in (await client.get("/v1/handoffs", headers=ANN)).json()["sessions"]] == [second]


async def test_the_waiting_list_finds_a_hand_off_behind_more_events_than_it_reads_first(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    sid = await _handed_off(client)
    for n in range(205):  # each a customer-message event: the hand-off is further back than the newest 200
        await runtime.run("Echo", f"are you there? ({n})", session_id=sid)
    (row,) = (await client.get("/v1/handoffs", headers=ANN)).json()["sessions"]
    assert row["reason"] == "the customer asked for a person" and row["customer_messages"] == 205
    assert row["last_customer_message"] == "are you there? (204)"


async def test_operator_routes_need_an_operator_key_once_one_is_configured(client: httpx.AsyncClient) -> None:
    sid = await _handed_off(client)
    for method, path, body in (("POST", f"{ECHO}/{sid}/operator-messages", {"text": "hi", "by": "Mallory"}),
                               ("POST", f"{ECHO}/{sid}/release", None), ("GET", "/v1/handoffs", None)):
        refused = await client.request(method, path, json=body, headers=ACME)
        assert refused.status_code == 403 and refused.json()["code"] == "operator-only", path
    assert (await client.get(f"{ECHO}/{sid}", headers=ACME)).json()["status"] == "handed_off"
    other = await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "hi", "by": "x"}, headers=GLOBEX)
    assert other.status_code == 403
    assert (await client.get(f"{ECHO}/{sid}", headers=ANN)).status_code == 200  # an operator reads as its tenant


async def test_an_operator_message_to_a_session_the_bot_has_is_a_409(client: httpx.AsyncClient) -> None:
    sid = (await client.post(ECHO, headers=ACME)).json()["session"]
    refused = await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "hi", "by": "Ann"}, headers=ANN)
    assert refused.status_code == 409 and refused.json()["code"] == "not-handed-off"
    bad = await client.post(f"{ECHO}/{sid}/operator-messages", content=b'{"text": "\\ud800", "by": "Ann"}',
                            headers={**ANN, "Content-Type": "application/json"})
    assert bad.status_code == 422
    assert (await client.get(f"{ECHO}/{sid}/transcript", headers=ACME)).json()["messages"] == []
    released = await client.post(f"{ECHO}/{sid}/release", json={"by": "Ann"}, headers=ANN)
    assert released.status_code == 409 and released.json()["code"] == "not-handed-off"  # nothing to give back


async def test_listing_sessions_by_a_status_that_does_not_exist_is_a_422(client: httpx.AsyncClient) -> None:
    refused = await client.get(f"{ECHO}?status=handedoff", headers=ACME)
    assert refused.status_code == 422 and refused.json()["code"] == "invalid-query"
    assert "running, handed_off, completed, aborted" in refused.json()["message"]
    assert (await client.get(f"{ECHO}?status=handed_off", headers=ACME)).status_code == 200


async def test_given_back_the_bot_answers_again_and_the_person_was_part_of_the_conversation(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    sid = await _handed_off(client)
    await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "Fixed it for you.", "by": "Ann"}, headers=ANN)
    released = await client.post(f"{ECHO}/{sid}/release", json={"by": "Ann"}, headers=ANN)
    assert released.json() == {"session": sid, "status": "running"}
    answer = (await client.post(f"{ECHO}/{sid}/messages", json={"text": "and my order?"}, headers=ACME)).json()
    assert answer["message"] == "reply 1: and my order?"
    doc = await runtime.store.load(sid)
    assert doc is not None and doc.status == "running"
    events = [e["type"] for e in (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"]]
    assert "released" in events
    loaded = await runtime.run("Echo", "again", session_id=sid)  # the window holds the person's message
    assert loaded.result is not None
    assert [m.text for m in loaded.result.session.messages if m.kind == "agent"] == ["Fixed it for you."]


async def test_the_openai_endpoint_hears_the_handoff_then_the_person(client: httpx.AsyncClient) -> None:
    def ask(text: str) -> dict:
        return {"model": "tether:Echo", "user": "cust-1", "messages": [{"role": "user", "content": text}]}

    async def content(text: str, **extra: object) -> str:
        answer = await client.post("/v1/chat/completions", json={**ask(text), **extra}, headers=ACME)
        assert answer.status_code == 200, answer.text
        if extra.get("stream"):
            chunks = [line.removeprefix("data: ") for line in answer.text.splitlines() if line.startswith("data: {")]
            import json

            return "".join(json.loads(c)["choices"][0]["delta"].get("content") or "" for c in chunks)
        return str(answer.json()["choices"][0]["message"]["content"])

    assert await content("human") == HANDOFF_LINE
    assert await content("hello?") == WAITING_REPLY
    sid = (await client.get("/v1/handoffs", headers=ANN)).json()["sessions"][0]["session"]
    await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "Ann here.", "by": "Ann"}, headers=ANN)
    await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "What's the order?", "by": "Ann"},
                      headers=ANN)
    assert await content("it's A-1") == "Ann here.\n\nWhat's the order?"
    assert await content("still there?", stream=True) == WAITING_REPLY
    await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "Refunded.", "by": "Ann"}, headers=ANN)
    assert await content("ok", stream=True) == "Refunded."


async def test_the_customers_stream_receives_the_persons_message(runtime: Runtime) -> None:
    app = create_app(runtime, api_keys=KEYS, operator_keys=OPERATOR_KEYS, scheduler=False, stream_keepalive=0.2)
    async for base in served(app):
        async with httpx.AsyncClient(base_url=base) as client:
            sid = await _handed_off(client)
            after = (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"][-1]["seq"]
            async with client.stream("GET", f"{ECHO}/{sid}/stream", params={"after": after},
                                     headers={**ACME, "Accept": "text/event-stream"}) as response:
                frames = Frames(response)
                await client.post(f"{ECHO}/{sid}/operator-messages", json={"text": "Ann here.", "by": "Ann"},
                                  headers=ANN)
                frame = await frames.next()
                while frame[1] is None:  # keepalives
                    frame = await frames.next()
    assert frame[1] == "operator-message"
    assert isinstance(frame[2], dict) and frame[2]["data"]["text"] == "Ann here." and frame[2]["data"]["by"] == "Ann"


async def test_the_waiting_list_pages_through_every_waiting_session_oldest_hand_off_first(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    """More waiting sessions than one page (and than the 500 the list once sorted): the pages
    together hold each exactly once, oldest hand-off first, whatever order they were saved in."""
    start = runtime.clock.now()
    made: dict[str, datetime] = {}

    async def waiting(index: int) -> None:
        since = start - timedelta(minutes=index)  # the later made, the older its hand-off
        doc = Session(id=f"s{index:04d}", agent="Echo", status="handed_off", created_at=since,
                      metadata={"config": {"tenant": "acme"}})
        await runtime.store.create(doc, TurnRecords(events=[{"type": "handoff", "at": since,
                                                             "reason": f"case {index}"}]))
        made[doc.id] = since

    await asyncio.gather(*(waiting(index) for index in range(620)))
    await runtime.store.create(Session(id="other", agent="Echo", status="handed_off", created_at=start,
                                       metadata={"config": {"tenant": "globex"}}))
    seen: list[dict[str, Any]] = []
    params: dict[str, str] = {"limit": "500"}
    while True:
        page = (await client.get("/v1/handoffs", params=params, headers=ANN)).json()
        seen += page["sessions"]
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert [row["session"] for row in seen] == sorted(made, key=lambda sid: (made[sid], sid))
    assert seen[0]["reason"] == "case 619" and len(seen) == 620
    bad = await client.get("/v1/handoffs", params={"after": "yesterday"}, headers=ANN)
    assert bad.status_code == 422 and "after" in bad.json()["message"]
