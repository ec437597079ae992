"""The agent's ``on_busy`` policy for a message arriving while a turn of the same session runs:
``queue`` waits behind it, ``reject`` is 409 ``session-busy``, ``interrupt`` cuts the reply being
spoken (the engine's barge-in) and then runs the new message."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_agents import GatedModel, busy_agent
from server_client import ACME, KEYS, app_client

from tether import Agent
from tether.errors import FlowDefinitionError
from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore

BUSY = "/v1/agents/Busy/sessions"
FIRST = "Hello there, my good friend!"


async def _client(tmp_path: Path, model: GatedModel, policy: str) -> AsyncIterator[httpx.AsyncClient]:
    runtime = Runtime(busy_agent(model, policy), store=SQLiteStore(tmp_path / "busy.db"))
    try:
        async for client in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
            yield client
    finally:
        await runtime.close()


async def _streamed(client: httpx.AsyncClient, sid: str, text: str) -> dict[str, Any]:
    """The envelope of a message sent with ``Accept: text/event-stream`` (the reply is streamed:
    only a streamed reply can be interrupted)."""
    response = await client.post(f"{BUSY}/{sid}/messages", json={"text": text},
                                 headers={**ACME, "Accept": "text/event-stream"})
    last = response.text.strip().split("\n\n")[-1]
    assert last.startswith("event: envelope"), response.text
    return dict(json.loads(last.split("data: ", 1)[1]))


async def _first_turn_speaking(client: httpx.AsyncClient,
                               model: GatedModel) -> tuple[str, asyncio.Task[dict[str, Any]]]:
    sid = (await client.post(BUSY, headers=ACME)).json()["session"]
    first = asyncio.ensure_future(_streamed(client, sid, "one"))
    async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
        await model.started.wait()
    return sid, first


async def _transcript(client: httpx.AsyncClient, sid: str) -> list[tuple[str, str]]:
    messages = (await client.get(f"{BUSY}/{sid}/transcript", headers=ACME)).json()["messages"]
    return [(m["role"], m["text"]) for m in messages]


async def test_queue_runs_the_second_message_after_the_first_turn(tmp_path: Path) -> None:
    model = GatedModel(FIRST, "Second answer.")
    async for client in _client(tmp_path, model, "queue"):
        sid, first = await _first_turn_speaking(client, model)
        second = asyncio.ensure_future(client.post(f"{BUSY}/{sid}/messages", json={"text": "two"}, headers=ACME))
        async with asyncio.timeout(60):
            while client._transport.app.state.busy.running(sid) < 2:  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)
        model.gate.set()
        assert (await first)["message"] == FIRST
        assert (await second).json()["message"] == "Second answer."
        assert await _transcript(client, sid) == [("user", "one"), ("assistant", FIRST), ("user", "two"),
                                                  ("assistant", "Second answer.")]


async def test_reject_answers_409_session_busy_while_a_turn_runs(tmp_path: Path) -> None:
    model = GatedModel(FIRST, "Later answer.")
    async for client in _client(tmp_path, model, "reject"):
        sid, first = await _first_turn_speaking(client, model)
        refused = await client.post(f"{BUSY}/{sid}/messages", json={"text": "two"}, headers=ACME)
        assert (refused.status_code, refused.json()["code"]) == (409, "session-busy")
        assert sid in refused.json()["message"]
        model.gate.set()
        assert (await first)["message"] == FIRST
        later = await client.post(f"{BUSY}/{sid}/messages", json={"text": "three"}, headers=ACME)
        assert (later.status_code, later.json()["message"]) == (200, "Later answer.")
        assert ("user", "two") not in await _transcript(client, sid)  # the refused message left no trace


async def test_interrupt_cuts_the_spoken_reply_and_runs_the_new_message(tmp_path: Path) -> None:
    model = GatedModel(FIRST, "About your new question.")
    async for client in _client(tmp_path, model, "interrupt"):
        sid, first = await _first_turn_speaking(client, model)
        second = asyncio.ensure_future(client.post(f"{BUSY}/{sid}/messages", json={"text": "wait"}, headers=ACME))
        async with asyncio.timeout(60):
            while client._transport.app.state.busy.running(sid) < 2:  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)
        model.gate.set()  # the model goes on; the engine sees the barge-in after the next piece
        cut = (await first)
        assert cut["success"] and cut["message"] == FIRST[:10]
        assert (await second).json()["message"] == "About your new question."
        assert await _transcript(client, sid) == [("user", "one"), ("assistant", FIRST[:10]), ("user", "wait"),
                                                  ("assistant", "About your new question.")]


def test_an_unknown_busy_policy_fails_when_the_agent_is_defined() -> None:
    with pytest.raises(FlowDefinitionError, match="on_busy must be one of queue, reject, interrupt"):
        Agent("Bad", on_busy="drop")
