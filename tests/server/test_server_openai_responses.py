"""``POST /v1/responses`` driven by the official ``openai`` client's ``responses.create``, plain and
streamed, against a real uvicorn server over SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai_served import base as base
from openai_served import openai_client as _client
from server_agents import echo_agent, talker_agent
from server_client import ACME

from tether.runtime import Runtime
from tether.stores import SQLiteStore


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime([echo_agent(), talker_agent(*[f"Streamed reply number {n}." for n in range(10)])],
                      store=SQLiteStore(tmp_path / "responses.db"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def _user_texts(base: str, agent: str, session: str) -> list[str]:
    async with httpx.AsyncClient(base_url=base, headers=ACME) as http:
        found = (await http.get(f"/v1/agents/{agent}/sessions/{session}/transcript")).json()["messages"]
    return [m["text"] for m in found if m["role"] == "user"]


async def test_responses_create_continues_by_previous_response_id_or_by_the_full_input(
        base: str, runtime: Runtime) -> None:
    async with _client(base) as client:
        raw = await client.responses.with_raw_response.create(model="tether:Echo", input="where is my order?",
                                                              instructions="Be brief.")
        first = raw.parse()
        session = raw.headers["x-tether-session"]
        assert first.output_text == "reply 1: where is my order?" and first.status == "completed"
        assert first.id.startswith("resp_") and first.usage is not None and first.usage.total_tokens == 0
        second = await client.responses.create(model="tether:Echo", input="A-1003", previous_response_id=first.id)
        assert second.output_text == "reply 2: A-1003"
        with pytest.raises(openai.NotFoundError, match="no response 'resp_nope'"):
            await client.responses.create(model="tether:Echo", input="hi", previous_response_id="resp_nope")
        # a client that replays the whole conversation as input items, the previous output included
        opened = await client.responses.with_raw_response.create(model="tether:Echo", input=[
            {"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hello"}])
        history: list[Any] = [{"role": "user", "content": "hello"}, *opened.parse().output,
                              {"role": "user", "content": [{"type": "input_text", "text": "A-1004"}]}]
        replayed = await client.responses.with_raw_response.create(model="tether:Echo", input=history)
        assert replayed.parse().output_text == "reply 4: A-1004"
        history += [{"role": "assistant", "content": replayed.parse().output_text},
                    {"role": "user", "content": "it came late"}]
        last = await client.responses.with_raw_response.create(model="tether:Echo", input=history)
        assert last.parse().output_text == "reply 5: it came late"
        other = opened.headers["x-tether-session"]
        assert other != session
        assert {replayed.headers["x-tether-session"], last.headers["x-tether-session"]} == {other}
    assert await _user_texts(base, "Echo", other) == ["hello", "A-1004", "it came late"]
    assert {s.id for s in await runtime.store.list(agent="Echo")} == {session, other}
    assert await _user_texts(base, "Echo", session) == ["where is my order?", "A-1003"]


async def test_a_streamed_response_says_its_text_in_deltas_and_completes(base: str, runtime: Runtime) -> None:
    async with _client(base) as client:
        stream = await client.responses.create(model="tether:Talker", input="hi", stream=True)
        events = [event async for event in stream]
        kinds = [event.type for event in events]
        assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                             "response.content_part.added"]
        assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                              "response.output_item.done", "response.completed"]
        deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
        assert len(deltas) > 3 and "".join(deltas) == "Streamed reply number 0."
        completed = events[-1]
        assert completed.type == "response.completed"
        assert completed.response.output_text == "Streamed reply number 0."
        assert [e.sequence_number for e in events] == list(range(len(events)))
        follow = await client.responses.stream(model="tether:Talker", input="more",
                                               previous_response_id=completed.response.id).__aenter__()
        final = await follow.get_final_response()
        assert final.output_text == "Streamed reply number 1."
    sessions = await runtime.store.list(agent="Talker")
    assert len(sessions) == 1 and await _user_texts(base, "Talker", sessions[0].id) == ["hi", "more"]


async def test_unsupported_responses_input_and_parameters_are_400s(base: str, runtime: Runtime) -> None:
    async with _client(base) as client:
        with pytest.raises(openai.BadRequestError, match="tools: not supported by tether"):
            await client.responses.create(model="tether:Echo", input="hi",
                                          tools=[{"type": "function", "name": "f", "parameters": {}, "strict": False}])
        with pytest.raises(openai.BadRequestError, match=r"text.format: not supported"):
            await client.responses.create(model="tether:Echo", input="hi", text={"format": {"type": "json_object"}})
        with pytest.raises(openai.BadRequestError, match=r"input.0: .* 'function_call_output' item is not supported"):
            await client.responses.create(model="tether:Echo", input=[
                {"type": "function_call_output", "call_id": "c1", "output": "42"}])
        with pytest.raises(openai.BadRequestError, match=r"input.0.content.0: .* 'input_image' part"):
            await client.responses.create(model="tether:Echo", input=[{"role": "user", "content": [
                {"type": "input_image", "image_url": "https://example.invalid/x.png"}]}])
    assert await runtime.store.list(agent="Echo") == []
