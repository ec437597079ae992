"""block_network_models: real adapters refuse non-local hosts; local test servers still work."""

from __future__ import annotations

import pytest
from model_server import FakeProvider, Reply, anthropic_message, chat_completion

from tether.models import AnthropicModel, ModelRequest, OpenAIModel
from tether.models._guard import check_call_allowed, is_blocked
from tether.testing import RealModelCallBlocked, allow_network_models, block_network_models

REQUEST = ModelRequest(call="speak")


async def test_real_hosts_are_blocked_in_tests() -> None:
    assert is_blocked()  # the autouse fixture of tests/models
    for model in (
        OpenAIModel("gpt-4o", api_key="k"),
        AnthropicModel("claude-haiku-4-5", api_key="k"),
        OpenAIModel("x", base_url="https://openrouter.ai/api/v1"),
    ):
        with pytest.raises(RealModelCallBlocked, match="real model calls are blocked in tests"):
            await model.complete(REQUEST)
        with pytest.raises(RealModelCallBlocked):
            [c async for c in model.stream(REQUEST)]
        await model.aclose()  # type: ignore[attr-defined]
    assert issubclass(RealModelCallBlocked, AssertionError)


async def test_local_servers_go_through(provider: FakeProvider) -> None:
    provider.add(Reply(body=chat_completion("a")), Reply(body=anthropic_message([{"type": "text", "text": "b"}])))
    openai = OpenAIModel("m", base_url=provider.url.replace("127.0.0.1", "localhost") + "/v1")
    anthropic = AnthropicModel("claude-haiku-4-5", api_key="k", base_url=provider.url)
    assert (await openai.complete(REQUEST)).text == "a"
    assert (await anthropic.complete(REQUEST)).text == "b"
    await openai.aclose()
    await anthropic.aclose()


def test_switches_nest_and_restore() -> None:
    assert is_blocked()
    with allow_network_models():
        assert not is_blocked()
        check_call_allowed("openai:gpt-4o", "https://api.openai.com/v1")
        with block_network_models():
            assert is_blocked()
            with pytest.raises(RealModelCallBlocked):
                check_call_allowed("openai:gpt-4o", "https://api.openai.com/v1")
        assert not is_blocked()
    assert is_blocked()
    check_call_allowed("x", "http://[::1]:8000/v1")
    check_call_allowed("x", "http://127.0.0.1:8000/v1")
