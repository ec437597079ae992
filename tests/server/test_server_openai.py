"""``POST /v1/chat/completions`` and ``GET /v1/models`` driven by the official ``openai`` client
against a real uvicorn server: an agent served as the model ``tether:<agent>``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import pytest
from server_agents import echo_agent, talker_agent
from server_client import ACME, KEYS, served

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    runtime = Runtime([echo_agent(), talker_agent("Hello there, my good friend!", "Still here.")],
                      store=SQLiteStore(tmp_path / "oai.db"))
    try:
        async for url in served(create_app(runtime, api_keys=KEYS, scheduler=False)):
            yield url
    finally:
        await runtime.close()


def _client(base: str, key: str = "key-acme") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)


async def _acme_alice(base: str) -> str:
    """The session of tenant acme's user ``alice``."""
    async with _client(base) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="tether:Echo", messages=[{"role": "user", "content": "hi"}], user="alice")
        return raw.headers["x-tether-session"]


async def test_the_openai_client_talks_to_an_agent_and_user_keeps_the_session(base: str) -> None:
    async with _client(base) as client:
        models = [model.id async for model in client.models.list()]
        assert models == ["tether:Echo", "tether:Talker"]
        raw = await client.chat.completions.with_raw_response.create(
            model="tether:Echo", messages=[{"role": "user", "content": "where is my order?"}], user="alice")
        first = raw.parse()
        assert first.choices[0].message.content == "reply 1: where is my order?"
        assert first.choices[0].finish_reason == "stop" and first.model == "tether:Echo"
        session = raw.headers["x-tether-session"]
        second = await client.chat.completions.with_raw_response.create(
            model="tether:Echo", user="alice", messages=[
                {"role": "user", "content": "where is my order?"},
                {"role": "assistant", "content": "reply 1: where is my order?"},
                {"role": "user", "content": [{"type": "text", "text": "and my refund?"}]}])
        assert second.parse().choices[0].message.content == "reply 2: and my refund?"
        assert second.headers["x-tether-session"] == session  # the same user, the same session
        bob = await client.chat.completions.with_raw_response.create(
            model="tether:Echo", messages=[{"role": "user", "content": "hi"}], user="bob")
        assert bob.headers["x-tether-session"] != session
    async with httpx.AsyncClient(base_url=base, headers=ACME) as http:
        transcript = (await http.get(f"/v1/agents/Echo/sessions/{session}/transcript")).json()["messages"]
        assert [m["text"] for m in transcript if m["role"] == "user"] == ["where is my order?", "and my refund?"]


async def test_stream_true_yields_chunks_and_the_session_header_continues_a_session(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, headers=ACME) as http:
        sid = (await http.post("/v1/agents/Talker/sessions")).json()["session"]
    async with _client(base) as client:
        stream = await client.chat.completions.create(
            model="tether:Talker", messages=[{"role": "user", "content": "hi"}], stream=True,
            extra_headers={"X-Tether-Session": sid})
        pieces = [chunk.choices[0].delta.content or "" async for chunk in stream]
        assert len([p for p in pieces if p]) > 3 and "".join(pieces) == "Hello there, my good friend!"
        again = await client.chat.completions.create(
            model="tether:Talker", messages=[{"role": "user", "content": "still there?"}],
            extra_headers={"X-Tether-Session": sid})
        assert again.choices[0].message.content == "Still here."


async def test_bad_models_keys_sessions_and_messages_are_clear_errors(base: str) -> None:
    hello = [{"role": "user", "content": "hi"}]
    async with _client(base) as client:
        with pytest.raises(openai.NotFoundError, match="no agent 'Nobody' is served here"):
            await client.chat.completions.create(model="tether:Nobody", messages=hello)
        with pytest.raises(openai.UnprocessableEntityError, match="not a tether agent"):
            await client.chat.completions.create(model="gpt-4o", messages=hello)
        with pytest.raises(openai.UnprocessableEntityError, match="the last message must be the user's"):
            await client.chat.completions.create(model="tether:Echo", messages=[
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
        raw = await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=hello)
        acme_session = raw.headers["x-tether-session"]
    async with _client(base, "wrong") as stranger:
        with pytest.raises(openai.AuthenticationError):
            await stranger.chat.completions.create(model="tether:Echo", messages=hello)
    async with _client(base, "key-globex") as globex:
        with pytest.raises(openai.PermissionDeniedError, match="another tenant"):
            await globex.chat.completions.create(model="tether:Echo", messages=hello,
                                                 extra_headers={"X-Tether-Session": acme_session})
        theirs = await globex.chat.completions.with_raw_response.create(model="tether:Echo", messages=hello,
                                                                        user="alice")
        mine = await _acme_alice(base)
        assert theirs.headers["x-tether-session"] != mine  # a user name maps to a session per tenant
        with pytest.raises(openai.NotFoundError, match="has no session 'nope'"):
            await globex.chat.completions.create(model="tether:Echo", messages=hello,
                                                 extra_headers={"X-Tether-Session": "nope"})
