"""AnthropicModel through the real ``anthropic`` SDK against a scripted messages server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from model_server import FakeProvider, Reply, anthropic_error, anthropic_message, anthropic_sse

from tether.errors import ModelError
from tether.models import (
    AnthropicModel,
    ChatMessage,
    ModelRequest,
    ResponseFormat,
    RetryingModel,
    ToolCall,
    ToolSpec,
    Usage,
)

WEATHER = ToolSpec("get_weather", "Weather of a city", {"type": "object", "properties": {"city": {"type": "string"}}})
LABEL = ResponseFormat("label", {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
USAGE = {"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50}


@pytest.fixture
async def model(provider: FakeProvider) -> AsyncIterator[AnthropicModel]:
    adapter = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=provider.url)
    yield adapter
    await adapter.aclose()


def _request(**kwargs: object) -> ModelRequest:
    base: dict[str, object] = {
        "call": "speak",
        "system": "You are Ana.",
        "instructions": "Greet the user.",
        "messages": (ChatMessage("user", "Hi"),),
    }
    base.update(kwargs)
    return ModelRequest(**base)  # type: ignore[arg-type]


async def test_plain_text_prompt_caching_and_usage(model: AnthropicModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=anthropic_message([{"type": "text", "text": "Olá!"}], usage=USAGE)))
    response = await model.complete(_request(params={"temperature": 0.2, "max_tokens": 300, "timeout": 5}))
    assert response.text == "Olá!" and response.finish_reason == "stop" and response.model == "claude-haiku-4-5"
    assert response.usage == Usage(
        prompt_tokens=1070, completion_tokens=7, cached_input_tokens=1000, cache_creation_tokens=50
    )
    sent = provider.requests[-1]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.body["system"] == [
        {"type": "text", "text": "You are Ana.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Greet the user."},
    ]
    assert sent.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert sent.body["max_tokens"] == 300 and sent.body["temperature"] == 0.2
    assert "timeout" not in sent.body


async def test_default_max_tokens_and_no_messages(model: AnthropicModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    await model.complete(ModelRequest(call="summary", system="S", instructions="Summarise."))
    body = provider.requests[-1].body
    assert body["max_tokens"] == 4096
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Summarise."}]}]
    assert body["system"] == [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}]


async def test_tool_calls_both_ways(model: AnthropicModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            body=anthropic_message(
                [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Lisbon"}},
                ],
                stop="tool_use",
            )
        )
    )
    history = (
        ChatMessage("user", "Weather in Porto and Faro?"),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(
                ToolCall("t1", "get_weather", {"city": "Porto"}),
                ToolCall("t2", "get_weather", {"city": "Faro"}),
            ),
        ),
        ChatMessage("tool", "sunny", tool_call_id="t1"),
        ChatMessage("tool", "rainy", tool_call_id="t2"),
        ChatMessage("user", "And Lisbon?"),
    )
    response = await model.complete(_request(messages=history, tools=(WEATHER,), tool_choice="required"))
    assert response.tool_calls == (ToolCall("toolu_9", "get_weather", {"city": "Lisbon"}),)
    assert response.text == "Let me check." and response.finish_reason == "tool_calls"
    body = provider.requests[-1].body
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather of a city", "input_schema": WEATHER.parameters}
    ]
    assert body["tool_choice"] == {"type": "any"}
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Porto"}},
            {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {"city": "Faro"}},
        ],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "rainy"},
            {"type": "text", "text": "And Lisbon?"},
        ],
    }


async def test_structured_output_through_a_forced_tool(model: AnthropicModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            body=anthropic_message(
                [{"type": "tool_use", "id": "toolu_1", "name": "label", "input": {"label": "spam"}}], stop="tool_use"
            )
        )
    )
    response = await model.complete(_request(call="extract", response_format=LABEL))
    assert response.data == {"label": "spam"} and response.tool_calls == ()
    assert json.loads(response.text) == {"label": "spam"} and response.finish_reason == "stop"
    body = provider.requests[-1].body
    assert body["tool_choice"] == {"type": "tool", "name": "label"}
    assert body["tools"] == [
        {"name": "label", "description": "Give the reply as 'label'.", "input_schema": LABEL.schema}
    ]


async def test_structured_output_with_tools_falls_back_to_the_prompt(
    model: AnthropicModel, provider: FakeProvider
) -> None:
    provider.add(Reply(body=anthropic_message([{"type": "text", "text": '```json\n{"label": "ham"}\n```'}])))
    response = await model.complete(_request(call="decide", response_format=LABEL, tools=(WEATHER,)))
    assert response.data == {"label": "ham"}
    body = provider.requests[-1].body
    assert body["tool_choice"] == {"type": "auto"}
    assert json.dumps(LABEL.schema, separators=(",", ":")) in body["system"][-1]["text"]

    provider.add(Reply(body=anthropic_message([{"type": "text", "text": "I cannot decide."}])))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request(call="decide", response_format=LABEL, tools=(WEATHER,)))
    assert caught.value.kind == "invalid"


async def test_refusal_is_a_content_error(model: AnthropicModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=anthropic_message([], stop="refusal")))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request())
    assert caught.value.kind == "content"


def _stream_events(*blocks: list[dict[str, object]]) -> list[dict[str, object]]:
    events: list[dict[str, object]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 20,
                    "output_tokens": 1,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 0,
                },
            },
        }
    ]
    for block in blocks:
        events += block
    return events


async def test_streaming_text_and_tool_use(model: AnthropicModel, provider: FakeProvider) -> None:
    events = _stream_events(
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Check"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ing."}},
            {"type": "content_block_stop", "index": 0},
        ],
        [
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            },
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"ci'}},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": 'ty": "Porto"}'},
            },
            {"type": "content_block_stop", "index": 1},
        ],
        [
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 25},
            },
            {"type": "message_stop"},
        ],
    )
    provider.add(Reply(sse=anthropic_sse(events)))
    chunks = [c async for c in model.stream(_request(tools=(WEATHER,)))]
    assert [c.delta for c in chunks if not c.done] == ["Check", "ing."]
    response = chunks[-1].response
    assert response is not None and response.text == "Checking." and response.finish_reason == "tool_calls"
    assert response.tool_calls == (ToolCall("toolu_1", "get_weather", {"city": "Porto"}),)
    assert response.usage == Usage(
        prompt_tokens=1020, completion_tokens=25, cached_input_tokens=1000, cache_creation_tokens=0
    )
    assert provider.requests[-1].body["stream"] is True


async def test_streaming_error_event_is_mapped(model: AnthropicModel, provider: FakeProvider) -> None:
    events = _stream_events([{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}])
    provider.add(Reply(sse=anthropic_sse(events)))
    with pytest.raises(ModelError) as caught:
        [c async for c in model.stream(_request())]
    assert caught.value.kind == "overload" and caught.value.retryable


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, anthropic_error("Number of request tokens has exceeded your rate limit", "rate_limit_error"), "rate"),
        (500, anthropic_error("Internal server error", "api_error"), "unknown"),
        (529, anthropic_error("Overloaded", "overloaded_error"), "overload"),
        (401, anthropic_error("invalid x-api-key", "authentication_error"), "auth"),
        (403, anthropic_error("Your API key does not have permission", "permission_error"), "entitlement"),
        (400, anthropic_error("messages: roles must alternate", "invalid_request_error"), "invalid"),
        (
            400,
            anthropic_error("prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error"),
            "context",
        ),
        (404, anthropic_error("model: claude-9", "not_found_error"), "model"),
    ],
)
async def test_error_statuses(
    model: AnthropicModel, provider: FakeProvider, status: int, body: object, kind: str
) -> None:
    provider.add(Reply(status, body, headers={"retry-after": "1"} if status == 429 else {}))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request())
    assert caught.value.kind == kind and caught.value.status == status
    assert (caught.value.reset_at is not None) == (status == 429)
    assert len(provider.requests) == 1


@pytest.mark.parametrize(("statuses", "requests"), [([429, 500, 200], 3), ([401], 1), ([400], 1)])
async def test_retries_count_at_the_server(
    model: AnthropicModel, provider: FakeProvider, sleeps: list[float], statuses: list[int], requests: int
) -> None:
    for status in statuses:
        provider.add(
            Reply(body=anthropic_message([{"type": "text", "text": "ok"}]))
            if status == 200
            else Reply(status, anthropic_error("failed", "api_error" if status >= 500 else "x"))
        )

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    retrying = RetryingModel(model, 3, sleep=sleep)
    if statuses[-1] == 200:
        assert (await retrying.complete(_request())).attempts == 3
    else:
        with pytest.raises(ModelError) as caught:
            await retrying.complete(_request())
        assert caught.value.attempts == 1 and not caught.value.retryable
    assert len(provider.requests) == requests and len(sleeps) == requests - 1
