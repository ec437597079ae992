"""Provider error texts are scrubbed of the configured API key before they reach exceptions,
envelopes, the stored session and its error log (a provider or proxy that echoes the key)."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
from model_server import FakeProvider, Reply, anthropic_error, openai_error

from tether import Agent, Flow, Message, ModelError, on_message, reply
from tether.models import AnthropicModel, ChatMessage, ModelRequest, OpenAIModel
from tether.models._errors import REDACTED, scrub
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock

KEY = "sk-test-9f8e7d6c5b4a3210SECRET"
REQUEST = ModelRequest(call="speak", system="You are Ana.", instructions="Greet.",
                       messages=(ChatMessage("user", "Hi"),))


def _assert_scrubbed(error: ModelError) -> None:
    assert KEY not in error.message and REDACTED in error.message
    shown = "".join(traceback.format_exception(error))
    assert KEY not in shown  # the SDK exception that held the key is not chained


@pytest.mark.parametrize("status", [401, 400, 500])
async def test_openai_errors_are_scrubbed(provider: FakeProvider, status: int) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=provider.url + "/v1")
    provider.add(Reply(status, openai_error(f"Incorrect API key provided: {KEY}.", code="invalid_api_key")))
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(REQUEST)
    finally:
        await model.aclose()
    _assert_scrubbed(caught.value)


async def test_openai_streamed_errors_are_scrubbed(provider: FakeProvider) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=provider.url + "/v1")
    provider.add(Reply(401, openai_error(f"bad key {KEY}")))
    try:
        with pytest.raises(ModelError) as caught:
            [chunk async for chunk in model.stream(REQUEST)]
    finally:
        await model.aclose()
    _assert_scrubbed(caught.value)


async def test_anthropic_errors_are_scrubbed(provider: FakeProvider) -> None:
    model = AnthropicModel("claude-haiku-4-5", api_key=KEY, base_url=provider.url)
    provider.add(Reply(401, anthropic_error(f"invalid x-api-key: {KEY}", "authentication_error")))
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(REQUEST)
    finally:
        await model.aclose()
    _assert_scrubbed(caught.value)


async def test_errors_without_the_key_keep_their_cause(provider: FakeProvider) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=provider.url + "/v1")
    provider.add(Reply(429, openai_error("Rate limit reached", "requests")))
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(REQUEST)
    finally:
        await model.aclose()
    assert caught.value.__cause__ is not None and "Rate limit reached" in caught.value.message


async def test_the_key_never_reaches_the_envelope_or_the_store(provider: FakeProvider, tmp_path: Path) -> None:
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, base_url=provider.url + "/v1")
    talk = reply("talk", instructions="Chat.")
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[talk], on=[on_message()])], model=model)
    store = SQLiteStore(tmp_path / "t.db")
    runtime = Runtime(agent, store=store, clock=FakeClock())
    provider.add(Reply(401, openai_error(f"Incorrect API key provided: {KEY}", code="invalid_api_key")))
    try:
        response = await runtime.run("Ava", Message("hello", id="m1"))
        assert KEY not in response.model_dump_json()
        stored = await store.load(response.session) if response.session else None
        if stored is not None:
            assert KEY not in stored.model_dump_json()
            assert all(KEY not in str(e.as_dict() if hasattr(e, "as_dict") else e)
                       for e in await store.events(stored.id))
        assert response.result is not None  # the speak call failed for good: the outcome says why, scrubbed
        assert any(REDACTED in (line.detail or "") for line in response.result.outcomes)
        assert all(KEY not in (line.detail or "") for line in response.result.outcomes)
    finally:
        await runtime.close()
        await model.aclose()


def test_scrub_leaves_short_placeholders_alone() -> None:
    assert scrub("not needed", "x") == "not needed"
    assert scrub(f"a {KEY} b {KEY}", KEY) == f"a {REDACTED} b {REDACTED}"
    assert scrub("anything", None) == "anything"
