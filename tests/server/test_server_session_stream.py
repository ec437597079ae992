"""The session event stream (``GET .../stream``) over a real uvicorn socket: replay after a
cursor, live records as turns commit, ``Last-Event-ID`` resume, keepalives, tenant scoping, the end
on delete, and (PostgreSQL) records committed by another runtime, picked up by the poll."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from server_agents import echo_agent
from server_client import ACME, GLOBEX, KEYS, Frames, served
from store_backends import PostgresBackend, require_postgres

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore
from tether.testing import FakeClock

ECHO = "/v1/agents/Echo/sessions"


@pytest.fixture
async def base(runtime: Runtime) -> AsyncIterator[str]:
    async for url in served(create_app(runtime, api_keys=KEYS, scheduler=False, stream_keepalive=0.2)):
        yield url


async def _say(client: httpx.AsyncClient, sid: str, text: str) -> None:
    response = await client.post(f"{ECHO}/{sid}/messages", json={"text": text}, headers=ACME)
    assert response.status_code == 200, response.text


async def _records(frames: Frames, count: int) -> list[tuple[int | None, str | None, object]]:
    """The next ``count`` event frames (keepalive comments skipped)."""
    got = []
    while len(got) < count:
        frame = await frames.next()
        if frame[1] is not None:
            got.append(frame)
    return got


async def test_the_stream_replays_then_sends_records_as_turns_commit_and_resumes(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        sid = (await client.post(ECHO, headers=ACME)).json()["session"]
        await _say(client, sid, "one")
        paged = (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"]
        assert paged
        async with client.stream("GET", f"{ECHO}/{sid}/stream",
                                 headers={**ACME, "Accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            frames = Frames(response)
            replayed = await _records(frames, len(paged))
            assert [data for _, _, data in replayed] == paged
            assert [(seq, kind) for seq, kind, _ in replayed] == [(e["seq"], e["type"]) for e in paged]
            await _say(client, sid, "two")  # committed while the stream is open
            every = (await client.get(f"{ECHO}/{sid}/events", headers=ACME)).json()["events"]
            live = await _records(frames, len(every) - len(paged))
            assert [data for _, _, data in live] == every[len(paged):]
        cut = every[len(paged) - 1]["seq"]
        async with client.stream("GET", f"{ECHO}/{sid}/stream",
                                 headers={**ACME, "Last-Event-ID": str(cut)}) as resumed:
            again = await _records(Frames(resumed), len(every) - len(paged))
            assert [data for _, _, data in again] == every[len(paged):]
        async with client.stream("GET", f"{ECHO}/{sid}/stream?after={cut}", headers=ACME) as by_query:
            first = await _records(Frames(by_query), 1)
            assert first[0][0] == every[len(paged)]["seq"]


async def test_a_quiet_stream_sends_keepalives_and_ends_when_the_session_is_deleted(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        sid = (await client.post(ECHO, headers=ACME)).json()["session"]
        async with client.stream("GET", f"{ECHO}/{sid}/stream", headers=ACME) as response:
            frames = Frames(response)
            assert await frames.next() == (None, None, ": keepalive")
            assert (await client.delete(f"{ECHO}/{sid}", headers=ACME)).status_code == 204
            assert await frames.rest() == []  # the stream ended by itself


async def test_the_stream_is_tenant_scoped_and_checks_its_cursor(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        sid = (await client.post(ECHO, headers=ACME)).json()["session"]
        assert (await client.get(f"{ECHO}/{sid}/stream")).json()["code"] == "unauthenticated"
        other = await client.get(f"{ECHO}/{sid}/stream", headers=GLOBEX)
        assert (other.status_code, other.json()["code"]) == (403, "forbidden")
        missing = await client.get(f"{ECHO}/nope/stream", headers=ACME)
        assert (missing.status_code, missing.json()["code"]) == (404, "session-not-found")
        bad = await client.get(f"{ECHO}/{sid}/stream", headers={**ACME, "Last-Event-ID": "x7"})
        assert (bad.status_code, bad.json()["code"]) == (422, "invalid-query")
        assert "Last-Event-ID" in bad.json()["message"]
        negative = await client.get(f"{ECHO}/{sid}/stream?after=-1", headers=ACME)
        assert negative.status_code == 422


@pytest.mark.postgres
async def test_a_turn_of_another_process_reaches_the_stream_on_postgres(tmp_path: Path) -> None:
    clock = FakeClock("2026-01-05T09:00:00Z")
    backend = PostgresBackend(clock, require_postgres())
    streaming = Runtime([echo_agent()], store=await backend.make(), clock=clock)
    other = Runtime([echo_agent()], store=await backend.make(), clock=clock)  # its commits never signal `streaming`
    try:
        async for url in served(create_app(streaming, api_keys=KEYS, scheduler=False, stream_poll=0.05)):
            async with httpx.AsyncClient(base_url=url) as client:
                sid = (await client.post(ECHO, headers=ACME)).json()["session"]
                async with client.stream("GET", f"{ECHO}/{sid}/stream", headers=ACME) as response:
                    frames = Frames(response)
                    reply = await other.run("Echo", "from elsewhere", session_id=sid)
                    assert reply.success and reply.message == "reply 1: from elsewhere"
                    records = await other.store.events(sid)
                    got = await _records(frames, len(records))
                    assert [seq for seq, _, _ in got] == [r.seq for r in records]
    finally:
        await streaming.close()
        await other.close()
        await backend.aclose()


async def test_a_sqlite_runtime_streams_its_own_turns_without_waiting_for_the_poll(tmp_path: Path) -> None:
    runtime = Runtime([echo_agent()], store=SQLiteStore(tmp_path / "s.db"))
    try:
        # a poll of an hour: only the in-process commit signal can deliver the new records
        async for url in served(create_app(runtime, api_keys=KEYS, scheduler=False, stream_poll=3600,
                                           stream_keepalive=3600)):
            async with httpx.AsyncClient(base_url=url) as client:
                sid = (await client.post(ECHO, headers=ACME)).json()["session"]
                async with client.stream("GET", f"{ECHO}/{sid}/stream", headers=ACME) as response:
                    frames = Frames(response)
                    await _say(client, sid, "hi")
                    records = await runtime.store.events(sid)
                    got = await _records(frames, len(records))
                    assert [kind for _, kind, _ in got] == [r.type for r in records]
    finally:
        await runtime.close()
