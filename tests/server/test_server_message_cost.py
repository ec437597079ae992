"""A message over HTTP costs what the turn costs: the session is loaded once (by the runtime, which
checks the agent and the tenant), and a conversation's first message creates its session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from server_agents import echo_agent
from server_client import ACME, GLOBEX, KEYS, app_client

from tether import Agent
from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore
from tether.stores import sqlite as sqlite_store

ECHO = "/v1/agents/Echo"


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every read of a session document on the SQLite store's connection."""
    reads: list[str] = []
    read = sqlite_store._read_doc

    def counted(session_id: str, conn: Any) -> Any:
        reads.append(session_id)
        return read(session_id, conn)

    monkeypatch.setattr(sqlite_store, "_read_doc", counted)
    return reads


async def test_a_message_loads_its_session_once(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = (await client.post(f"{ECHO}/sessions", headers=ACME)).json()["session"]
    await client.post(f"{ECHO}/sessions/{sid}/messages", json={"text": "one"}, headers=ACME)
    reads = _count_reads(monkeypatch)
    sent = await client.post(f"{ECHO}/sessions/{sid}/messages", json={"text": "two"}, headers=ACME)
    assert sent.status_code == 200 and sent.json()["message"] == "reply 2: two"
    assert reads == [sid]  # was two: the route's load, then the runtime's


async def test_the_one_load_still_refuses_another_tenant_and_an_unknown_session(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    sid = (await client.post(f"{ECHO}/messages", json={"text": "secret"}, headers=ACME)).json()["session"]
    other = await client.post(f"{ECHO}/sessions/{sid}/messages", json={"text": "hi"}, headers=GLOBEX)
    assert other.status_code == 403 and other.json()["code"] == "forbidden" and "secret" not in other.text
    wrong_agent = await client.post(f"/v1/agents/Refunder/sessions/{sid}/messages", json={"text": "hi"},
                                    headers=ACME)
    assert wrong_agent.status_code == 404 and wrong_agent.json()["code"] == "session-not-found"
    missing = await client.post(f"{ECHO}/sessions/nope/messages", json={"text": "hi"}, headers=ACME)
    assert missing.status_code == 404 and missing.json()["code"] == "session-not-found"
    assert [m.text for m in await runtime.store.transcript(sid)] == ["secret", "reply 1: secret"]
    assert await runtime.store.load("nope") is None  # nothing was created for the unknown id


async def test_the_first_message_creates_the_conversation(client: httpx.AsyncClient, runtime: Runtime) -> None:
    first = await client.post(f"{ECHO}/messages", json={"text": "hi"}, headers={**ACME, "Idempotency-Key": "m1"})
    assert first.status_code == 200
    body = first.json()
    assert body["success"] and body["message"] == "reply 1: hi" and body["session"]
    sid = body["session"]
    doc = await runtime.store.load(sid)
    assert doc is not None and doc.agent == "Echo" and doc.metadata["config"] == {"tenant": "acme"}
    nxt = await client.post(f"{ECHO}/sessions/{sid}/messages", json={"text": "again"}, headers=ACME)
    assert nxt.json()["message"] == "reply 2: again" and nxt.json()["session"] == sid
    listed = (await client.get(f"{ECHO}/sessions", headers=ACME)).json()["sessions"]
    assert [s["id"] for s in listed] == [sid]
    assert (await client.get(f"{ECHO}/sessions", headers=GLOBEX)).json()["sessions"] == []
    unknown = await client.post("/v1/agents/Nobody/messages", json={"text": "hi"}, headers=ACME)
    assert unknown.status_code == 404 and unknown.json()["code"] == "agent-not-found"
    bad = await client.post(f"{ECHO}/messages", json={"txt": "hi"}, headers=ACME)
    assert bad.status_code == 422


async def test_a_turn_that_says_nothing_says_why(tmp_path: Path) -> None:
    # the envelope's message stays a string; its code tells a client there is no answer to show
    runtime = Runtime([echo_agent(), Agent("Mute", flows=[], idle="silent")],
                      store=SQLiteStore(tmp_path / "t.db"))
    async for client in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        mute = (await client.post("/v1/agents/Mute/messages", json={"text": "hello?"}, headers=ACME)).json()
        assert mute["success"] and mute["message"] == "" and mute["code"] == "no-reply" and mute["session"]
        handed = (await client.post(f"{ECHO}/messages", json={"text": "human"}, headers=ACME)).json()
        assert handed["completed"] and handed["code"] is None and handed["message"]  # the hand-off is said
        quiet = await client.post(f"{ECHO}/sessions/{handed['session']}/messages", json={"text": "anyone?"},
                                  headers=ACME)
        assert quiet.status_code == 200
        assert quiet.json()["message"] == "" and quiet.json()["code"] == "handed-off"
        spoken = (await client.post(f"{ECHO}/messages", json={"text": "hi"}, headers=ACME)).json()
        assert spoken["message"] == "reply 1: hi" and spoken["code"] is None
    await runtime.close()
