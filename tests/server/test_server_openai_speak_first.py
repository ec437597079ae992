"""A voice bot that lets the agent speak first sends no user message: the agent says its opening.

Driven by the official ``openai`` client against a real uvicorn server over SQLite.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai_served import base as base
from openai_served import openai_client as _client
from server_agents import echo_agent

from tether import Agent, Flow, action, end, goto, on_event, on_message, reply
from tether.runtime import Runtime
from tether.stores import SQLiteStore

OPENING = "Hi, this is Sam. How can I help?"
SYSTEM = {"role": "system", "content": "You are Sam, a voice assistant."}


def opener_agent() -> Agent:
    """Says :data:`OPENING` when a session starts, then ``you said: TEXT`` to every message."""
    hello = reply("hello", response=OPENING, next=end("greeted"))
    greet = Flow("greet", start=hello, nodes=[hello], on=[on_event("start")])

    @action("note")
    async def note(state: dict[str, Any], ctx: Any) -> Any:
        return goto("echo", data={"said": ctx.message})

    echo = reply("echo", response=lambda state: f"you said: {state['said']}", next=end("answered"))
    chat = Flow("chat", start=note, nodes=[note, echo], on=[on_message(repeat="always")])
    return Agent("Sam", flows=[greet, chat])


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime([opener_agent(), echo_agent()], store=SQLiteStore(tmp_path / "voice.db"))
    try:
        yield runtime
    finally:
        await runtime.close()


async def _ask(client: openai.AsyncOpenAI, messages: list[dict[str, str]], stream: bool = False,
               **options: Any) -> tuple[str, str]:
    """The reply's text and the session header."""
    raw = await client.chat.completions.with_raw_response.create(
        model="tether:Sam", messages=messages, stream=stream, **options)  # type: ignore[call-overload]
    if stream:
        text = "".join([c.choices[0].delta.content or "" async for c in raw.parse() if c.choices])
    else:
        text = raw.parse().choices[0].message.content or ""
    return text, raw.headers["x-tether-session"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_request_with_only_a_system_message_returns_the_opening_and_the_call_goes_on(
        base: str, runtime: Runtime, stream: bool) -> None:
    async with _client(base) as client:
        opening, session = await _ask(client, [SYSTEM], stream)
        assert opening == OPENING
        history = [SYSTEM, {"role": "assistant", "content": opening}, {"role": "user", "content": "my order"}]
        answer, same = await _ask(client, history, stream)
        assert (answer, same) == ("you said: my order", session)
    assert [s.id for s in await runtime.store.list(agent="Sam")] == [session]


async def test_a_last_assistant_message_starts_the_session_too_and_calls_tell_apart_by_user(
        base: str, runtime: Runtime) -> None:
    async with _client(base) as client:
        primed = [SYSTEM, {"role": "assistant", "content": "(the call starts)"}]
        first, session_1 = await _ask(client, primed, user="call-1")
        second, session_2 = await _ask(client, primed, user="call-2")
        assert first == second == OPENING and session_1 != session_2
        for call, session in (("call-1", session_1), ("call-2", session_2)):
            history = [SYSTEM, {"role": "assistant", "content": OPENING}, {"role": "user", "content": call}]
            assert await _ask(client, history, user=call) == (f"you said: {call}", session)


async def test_two_calls_with_the_same_opening_and_no_name_are_told_to_name_themselves(base: str) -> None:
    async with _client(base) as client:
        await _ask(client, [SYSTEM])
        await _ask(client, [SYSTEM])
        history = [SYSTEM, {"role": "assistant", "content": OPENING}, {"role": "user", "content": "hello?"}]
        with pytest.raises(openai.BadRequestError, match=r"more than one conversation.*`user`"):
            await _ask(client, history)


async def test_an_agent_without_an_opening_says_nothing_and_stores_nothing(base: str, runtime: Runtime) -> None:
    async with _client(base) as client:
        answer = await client.chat.completions.create(model="tether:Echo", messages=[SYSTEM])  # type: ignore[list-item]
        assert answer.choices[0].message.content == ""
    assert await runtime.store.list(agent="Echo") == []
