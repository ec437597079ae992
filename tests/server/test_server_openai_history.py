"""OpenAI clients that keep no session id: the history they replay finds their session.

Driven by the official ``openai`` client against a real uvicorn server over SQLite: five messages
with full histories and no ``user`` are one session (plain and streamed) with nothing else stored;
a retried request (the same history, or an SDK retry after a 5xx) is one turn; a history that
continues no conversation, or several, is a 400 naming what to send; ``safety_identifier`` and
``prompt_cache_key`` name a conversation as ``user`` does; 32 concurrent first requests for one
``user`` all succeed in one session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai_served import base as base
from openai_served import openai_client as _client
from pydantic import BaseModel
from server_agents import echo_agent, talker_agent
from server_client import ACME

from tether import Agent, Flow, collect, end, goto, on_message, reply
from tether.errors import ModelError
from tether.models.types import ModelRequest
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import ScriptedModel


class _Name(BaseModel):
    name: str


def flaky_agent(failures: list[int]) -> Agent:
    """Greets ``Hello Ann`` after extracting the name; the extraction fails (a provider overload,
    which fails the turn with 502 and saves nothing) once for each entry of ``failures``."""

    def extract(request: ModelRequest) -> dict[str, str]:
        if failures:
            failures.pop()
            raise ModelError("the provider is overloaded", kind="overload", retryable=False)
        return {"name": "Ann"}

    ask = collect("ask", schema=_Name, required=["name"], ask="Your name?", on_complete=lambda d, s: goto("greet"))
    greet = reply("greet", response=lambda state: f"Hello {state['name']}", next=end("greeted"))
    flow = Flow("greet", start=ask, nodes=[ask, greet], on=[on_message(repeat="always")])
    return Agent("Flaky", flows=[flow]).with_model(ScriptedModel(extract=[extract] * 10))


@pytest.fixture
def failures() -> list[int]:
    return []


@pytest.fixture
async def runtime(tmp_path: Path, failures: list[int]) -> AsyncIterator[Runtime]:
    runtime = Runtime([echo_agent(), talker_agent(*["Hello there!"] * 2, *[f"Talk {n}." for n in range(20)]),
                       flaky_agent(failures)], store=SQLiteStore(tmp_path / "history.db"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def _sessions(runtime: Runtime, agent: str) -> list[str]:
    return [s.id for s in await runtime.store.list(agent=agent)]


async def _user_texts(base: str, agent: str, session: str) -> list[str]:
    async with httpx.AsyncClient(base_url=base, headers=ACME) as http:
        found = (await http.get(f"/v1/agents/{agent}/sessions/{session}/transcript")).json()["messages"]
    return [m["text"] for m in found if m["role"] == "user"]


WORDS = ["where is my order?", "A-1003", "and my refund?", "it came late", "the box was wet"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_five_messages_with_full_histories_and_no_user_are_one_session(
        base: str, runtime: Runtime, stream: bool) -> None:
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful assistant."}]
    seen: set[str] = set()
    async with _client(base, max_retries=0) as client:
        for n, words in enumerate(WORDS, start=1):
            history.append({"role": "user", "content": words})
            if stream:
                raw = await client.chat.completions.with_raw_response.create(
                    model="tether:Echo", messages=history, stream=True)  # type: ignore[arg-type]
                text = "".join([chunk.choices[0].delta.content or "" async for chunk in raw.parse()
                                if chunk.choices])
            else:
                raw = await client.chat.completions.with_raw_response.create(
                    model="tether:Echo", messages=history)  # type: ignore[arg-type]
                text = raw.parse().choices[0].message.content or ""
            assert text == f"reply {n}: {words}"
            seen.add(raw.headers["x-tether-session"])
            history.append({"role": "assistant", "content": text})
    assert len(seen) == 1
    (session,) = seen
    assert await _sessions(runtime, "Echo") == [session]  # no stray session
    assert await _user_texts(base, "Echo", session) == WORDS
    assert {w.session_id for w in await runtime.store.pending_wakes()} <= {session}


async def test_the_same_history_again_is_the_same_turn(base: str, runtime: Runtime) -> None:
    async with _client(base, max_retries=0) as client:
        first = [{"role": "user", "content": "hi"}]
        one = await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=first)
        said = one.parse().choices[0].message.content
        second = [*first, {"role": "assistant", "content": said}, {"role": "user", "content": "one more thing"}]
        answers = [await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=second)
                   for _ in range(3)]  # a client's retries after a lost answer
        assert {a.parse().choices[0].message.content for a in answers} == {"reply 2: one more thing"}
        assert {a.headers["x-tether-session"] for a in answers} == {one.headers["x-tether-session"]}
        streamed = await client.chat.completions.create(model="tether:Echo", messages=second, stream=True)
        assert "".join([c.choices[0].delta.content or "" async for c in streamed]) == "reply 2: one more thing"
    assert await _user_texts(base, "Echo", one.headers["x-tether-session"]) == ["hi", "one more thing"]


async def test_an_sdk_retry_after_a_5xx_runs_one_turn_in_one_session(
        base: str, runtime: Runtime, failures: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # the SDK still retries each 502 on its own; only its back-off before a retry (0.5 s, then
    # 1 s: ~2 s of this test) is shortened, which the server cannot tell from a slow client
    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.01)
    failures.extend([1, 1])  # the first request and its first retry fail with 502; the second retry works
    async with _client(base, max_retries=2) as client:
        first = [{"role": "user", "content": "hi"}]
        one = await client.chat.completions.with_raw_response.create(model="tether:Flaky", messages=first)
        assert one.parse().choices[0].message.content == "Hello Ann"
        failures.extend([1])
        second = [*first, {"role": "assistant", "content": "Hello Ann"}, {"role": "user", "content": "and then?"}]
        two = await client.chat.completions.with_raw_response.create(model="tether:Flaky", messages=second)
        assert two.headers["x-tether-session"] == one.headers["x-tether-session"]
    assert not failures
    assert await _sessions(runtime, "Flaky") == [one.headers["x-tether-session"]]
    assert await _user_texts(base, "Flaky", one.headers["x-tether-session"]) == ["hi", "and then?"]


async def test_a_first_request_retried_with_its_idempotency_key_is_one_turn(base: str, runtime: Runtime) -> None:
    async with _client(base, max_retries=0) as client:
        hello = [{"role": "user", "content": "hello"}]
        key = {"Idempotency-Key": "first-hello"}
        answers = [await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=hello,
                                                                          extra_headers=key) for _ in range(2)]
        assert answers[0].parse().choices[0].message.content == answers[1].parse().choices[0].message.content
        assert answers[0].headers["x-tether-session"] == answers[1].headers["x-tether-session"]
        other = await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=hello)
        assert other.headers["x-tether-session"] != answers[0].headers["x-tether-session"]  # another customer
    assert len(await _sessions(runtime, "Echo")) == 2


async def test_a_history_tether_cannot_place_is_a_400_saying_what_to_send(base: str, runtime: Runtime) -> None:
    async with _client(base, max_retries=0) as client:
        made_up = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "something I never said"},
                   {"role": "user", "content": "well?"}]
        with pytest.raises(openai.BadRequestError, match=r"continues no conversation.*X-Tether-Session.*user") as bad:
            await client.chat.completions.create(model="tether:Echo", messages=made_up)
        assert bad.value.body["code"] == "conversation-unknown"  # type: ignore[index]
        # two customers whose conversations are the same so far
        hello = [{"role": "user", "content": "hello"}]
        for _ in range(2):
            said = (await client.chat.completions.create(model="tether:Talker", messages=hello)).choices[0]
            assert said.message.content == "Hello there!"
        both = [*hello, {"role": "assistant", "content": "Hello there!"}, {"role": "user", "content": "hm"}]
        with pytest.raises(openai.BadRequestError, match="more than one conversation") as twice:
            await client.chat.completions.create(model="tether:Talker", messages=both)
        assert twice.value.body["code"] == "conversation-ambiguous"  # type: ignore[index]
        mine = await client.chat.completions.create(model="tether:Talker", messages=both, user="carol")
        assert mine.choices[0].message.content == "Talk 0."
    assert len(await _sessions(runtime, "Echo")) == 0  # the refused request stored nothing


@pytest.mark.parametrize("field", ["user", "safety_identifier", "prompt_cache_key"])
async def test_user_safety_identifier_and_prompt_cache_key_name_the_conversation(
        base: str, runtime: Runtime, field: str) -> None:
    async with _client(base, max_retries=0) as client:
        seen = set()
        for words in ("one", "two"):
            raw = await client.chat.completions.with_raw_response.create(
                model="tether:Echo", messages=[{"role": "user", "content": words}],
                extra_body={field: "customer-7"})
            seen.add(raw.headers["x-tether-session"])
    assert len(seen) == 1
    assert await _user_texts(base, "Echo", seen.pop()) == ["one", "two"]


async def test_32_concurrent_first_requests_for_one_user_all_succeed_in_one_session(
        base: str, runtime: Runtime) -> None:
    async with _client(base, max_retries=0) as client:
        async def ask(n: int) -> Any:
            return await client.chat.completions.with_raw_response.create(
                model="tether:Echo", messages=[{"role": "user", "content": f"message {n}"}], user="dana")

        answers = await asyncio.gather(*(ask(n) for n in range(32)))
    assert len({a.headers["x-tether-session"] for a in answers}) == 1
    assert await _sessions(runtime, "Echo") == [answers[0].headers["x-tether-session"]]
    said = await _user_texts(base, "Echo", answers[0].headers["x-tether-session"])
    assert sorted(said) == sorted(f"message {n}" for n in range(32))
