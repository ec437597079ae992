"""OpenAI parameters tether cannot honour are refused with 400 naming them; those it ignores are
named in ``X-Tether-Ignored``; ``usage`` is in every plain answer and, with
``stream_options.include_usage``, in the last streamed chunk.

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

from tether import Agent, Flow, on_message, reply
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import ScriptedModel

HELLO = [{"role": "user", "content": "hi"}]


def counted_agent() -> Agent:
    """Speaks with a model that reports its tokens (4 characters a token)."""
    talk = reply("talk", instructions="Chat.")
    model = ScriptedModel(speak=["Counted reply."] * 5, usage=True)
    return Agent("Counted", flows=[Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])]
                 ).with_model(model)


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime([echo_agent(), counted_agent()], store=SQLiteStore(tmp_path / "params.db"))
    try:
        yield runtime
    finally:
        await runtime.close()


TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}

REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("n", {"n": 2}),
    ("tools", {"tools": [TOOL]}),
    ("tool_choice", {"tool_choice": "required"}),
    ("functions", {"functions": [TOOL["function"]]}),
    ("response_format", {"response_format": {"type": "json_object"}}),
    ("stop", {"stop": ["\n"]}),
    ("logprobs", {"logprobs": True}),
    ("modalities", {"modalities": ["text", "audio"]}),
]


@pytest.mark.parametrize(("param", "options"), REFUSED, ids=[name for name, _ in REFUSED])
async def test_a_parameter_tether_cannot_honour_is_a_400_naming_it(
        base: str, runtime: Runtime, param: str, options: dict[str, Any]) -> None:
    async with _client(base) as client:
        with pytest.raises(openai.BadRequestError, match=f"{param}: not supported by tether") as refused:
            await client.chat.completions.create(model="tether:Echo", messages=HELLO,  # type: ignore[arg-type]
                                                 extra_body=options)
    assert refused.value.body["code"] == "unsupported-parameter"  # type: ignore[index]
    assert await runtime.store.list(agent="Echo") == []  # refused before anything was stored


async def test_harmless_values_of_those_parameters_are_accepted(base: str) -> None:
    async with _client(base) as client:
        answer = await client.chat.completions.create(
            model="tether:Echo", messages=HELLO, n=1, tools=[], tool_choice="auto", stop=[],  # type: ignore[arg-type]
            response_format={"type": "text"}, logprobs=False, modalities=["text"])
    assert answer.choices[0].message.content == "reply 1: hi"


async def test_ignored_parameters_are_named_in_a_header(base: str) -> None:
    async with _client(base) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="tether:Echo", messages=HELLO, temperature=0.2, max_tokens=5,  # type: ignore[arg-type]
            extra_body={"made_up_option": 1})
        assert raw.headers["x-tether-ignored"] == "made_up_option, max_tokens, temperature"
        assert raw.parse().choices[0].message.content == "reply 1: hi"  # max_tokens cuts nothing
        plain = await client.chat.completions.with_raw_response.create(model="tether:Echo", messages=HELLO)
        assert "x-tether-ignored" not in plain.headers


async def test_usage_is_in_every_plain_answer_and_in_the_last_chunk_when_asked(base: str) -> None:
    async with _client(base) as client:
        counted = await client.chat.completions.create(model="tether:Counted", messages=HELLO)  # type: ignore[arg-type]
        assert counted.usage is not None and counted.usage.completion_tokens == len("Counted reply.") // 4
        assert counted.usage.prompt_tokens > 0
        assert counted.usage.total_tokens == counted.usage.prompt_tokens + counted.usage.completion_tokens
        no_model = await client.chat.completions.create(model="tether:Echo", messages=HELLO)  # type: ignore[arg-type]
        assert no_model.usage is not None and no_model.usage.total_tokens == 0  # the turn called no model
        chunks = [c async for c in await client.chat.completions.create(
            model="tether:Counted", messages=HELLO, stream=True, user="u",  # type: ignore[arg-type]
            stream_options={"include_usage": True})]
        assert [c.usage is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.completion_tokens == len("Counted reply.") // 4
        plain_stream = [c async for c in await client.chat.completions.create(
            model="tether:Counted", messages=HELLO, stream=True, user="v")]  # type: ignore[arg-type]
        assert all(c.usage is None for c in plain_stream)
