"""OpenAIModel through the real ``openai`` SDK against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from model_server import FakeProvider, Reply, chat_completion, openai_chunk, openai_error

from tether.errors import ModelError
from tether.models import (
    Capabilities,
    ChatMessage,
    ModelRequest,
    OpenAIModel,
    ResponseFormat,
    RetryingModel,
    ToolCall,
    ToolSpec,
    Usage,
)
from tether.models._adapter import EXACT_OBJECTS

WEATHER = ToolSpec("get_weather", "Weather of a city", {"type": "object", "properties": {"city": {"type": "string"}}})
LABEL = ResponseFormat("label", {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 12},
}


@pytest.fixture
async def model(provider: FakeProvider) -> AsyncIterator[OpenAIModel]:
    adapter = OpenAIModel("gpt-4o-mini", api_key="sk-test", base_url=provider.url + "/v1", params={"temperature": 0.3})
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


async def test_plain_text_usage_and_wire(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=chat_completion("Hello!", usage=USAGE)))
    response = await model.complete(_request(params={"max_tokens": 50, "timeout": 5, "max_retries": 1}))
    assert response.text == "Hello!" and response.data is None and response.tool_calls == ()
    assert response.finish_reason == "stop" and response.model == "gpt-4o-mini"
    assert response.usage == Usage(
        prompt_tokens=120, completion_tokens=30, cached_input_tokens=100, reasoning_tokens=12
    )
    sent = provider.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are Ana."},
            {"role": "system", "content": "Greet the user."},
            {"role": "user", "content": "Hi"},
        ],
        "max_tokens": 50,
        "temperature": 0.3,
    }


async def test_unreported_usage_stays_absent(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(body=chat_completion("x", usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}))
    )
    assert (await model.complete(_request())).usage == Usage(prompt_tokens=3, completion_tokens=1)
    provider.add(Reply(body=chat_completion("x")))
    assert (await model.complete(_request())).usage == Usage()


async def test_tool_calls_both_ways(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            body=chat_completion(
                None,
                finish="tool_calls",
                tool_calls=[{"id": "call_9", "name": "get_weather", "arguments": '{"city": "Lisbon"}'}],
            )
        )
    )
    history = (
        ChatMessage("user", "Weather in Porto?"),
        ChatMessage("assistant", "", tool_calls=(ToolCall("call_1", "get_weather", {"city": "Porto"}),)),
        ChatMessage("tool", "sunny", tool_call_id="call_1", name="get_weather"),
        ChatMessage("user", "And Lisbon?"),
    )
    response = await model.complete(_request(messages=history, tools=(WEATHER,), tool_choice="required"))
    assert response.tool_calls == (ToolCall("call_9", "get_weather", {"city": "Lisbon"}),)
    assert response.finish_reason == "tool_calls" and response.text == ""
    body = provider.requests[-1].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather of a city", "parameters": WEATHER.parameters},
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["messages"][3] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Porto"}'}}
        ],
    }
    assert body["messages"][4] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


async def test_invalid_tool_arguments_are_an_invalid_error(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            body=chat_completion(
                None, finish="tool_calls", tool_calls=[{"id": "c", "name": "get_weather", "arguments": "{oops"}]
            )
        )
    )
    with pytest.raises(ModelError) as caught:
        await model.complete(_request(tools=(WEATHER,)))
    assert caught.value.kind == "invalid"


async def test_native_json_schema(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=chat_completion('{"label": "spam"}')))
    response = await model.complete(_request(call="extract", response_format=LABEL))
    assert response.data == {"label": "spam"}
    body = provider.requests[-1].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "label", "schema": LABEL.schema, "strict": True},
    }
    assert len([m for m in body["messages"] if m["role"] == "system"]) == 2


async def test_fallback_json_mode_with_schema_in_prompt(provider: FakeProvider) -> None:
    model = OpenAIModel(
        "llama3.2",
        provider="ollama",
        base_url=provider.url + "/v1",
        capabilities=Capabilities(native_json_schema=False),
    )
    try:
        provider.add(Reply(body=chat_completion('Here is the classification:\n{"label": "ham"}')))
        response = await model.complete(_request(call="extract", response_format=LABEL))
        assert response.data == {"label": "ham"}
        body = provider.requests[-1].body
        assert body["response_format"] == {"type": "json_object"}
        stable, per_turn = body["messages"][0]["content"], body["messages"][1]["content"]
        # the schema changes with the step, not the turn: it ends the stable part, before the per-turn one
        compact = json.dumps(LABEL.schema, separators=(",", ":"))  # no spaces: the same schema in fewer tokens
        assert stable.startswith("You are Ana.\n\n") and stable.endswith(compact)
        assert per_turn == "Greet the user."
        assert provider.requests[-1].headers["authorization"] == "Bearer not-needed"

        provider.add(Reply(body=chat_completion('the label is {"label": "ham"} I think')))
        with pytest.raises(ModelError) as caught:
            await model.complete(_request(call="extract", response_format=LABEL))
        assert caught.value.kind == "invalid" and "embedded" in str(caught.value) and not caught.value.retryable
    finally:
        await model.aclose()


def _expanded(node: object) -> object:
    """A shortened prompt schema with what EXACT_OBJECTS says written back on every object."""
    if isinstance(node, list):
        return [_expanded(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: ({n: _expanded(v) for n, v in value.items()} if k == "properties" else _expanded(value))
           for k, value in node.items()}
    if "properties" in node:
        out = {"type": "object", **out, "required": list(node["properties"]), "additionalProperties": False}
    return out


def _exact(properties: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


async def test_a_strict_schema_in_the_prompt_says_once_that_its_objects_are_exact() -> None:
    model = OpenAIModel("llama3.2", provider="ollama", base_url="http://127.0.0.1:9/v1",
                        capabilities=Capabilities(native_json_schema=False))
    try:
        # keys named like keywords ("type", "required") are field names, kept as they are
        envelope = _exact({"message": {"type": ["string", "null"]},
                           "collect": _exact({"c1": _exact({"type": {"type": ["string", "null"], "enum": ["a", None]},
                                                            "required": {"anyOf": [_exact({"x": {"type": "integer"}}),
                                                                                   {"type": "null"}]}})})})
        stable = model.build_request(_request(response_format=ResponseFormat("speak", envelope)))["messages"][0]
        head = f"You are Ana.\n\n{EXACT_OBJECTS}\nReply with a single JSON value (named 'speak') that matches"
        assert stable["content"].startswith(head)
        shown = json.loads(stable["content"].split("and nothing else:\n", 1)[1])
        assert "additionalProperties" not in json.dumps(shown) and '"object"' not in json.dumps(shown)
        assert shown["properties"]["collect"]["properties"]["c1"]["properties"]["type"] == {
            "type": ["string", "null"], "enum": ["a", None]}
        assert _expanded(shown) == envelope  # nothing lost: the sentence says what was left out

        # one object that is not exact (a key optional): the schema is shown as it is, with no sentence
        loose = _exact({"a": {"type": "string"}, "b": {"type": "object", "properties": {"c": {"type": "string"}}}})
        stable = model.build_request(_request(response_format=ResponseFormat("x", loose)))["messages"][0]["content"]
        assert EXACT_OBJECTS not in stable and stable.endswith(json.dumps(loose, separators=(",", ":")))
    finally:
        await model.aclose()


async def test_the_history_summary_goes_before_the_per_turn_instructions(model: OpenAIModel) -> None:
    history = (ChatMessage("system", "Summary of the earlier conversation: two orders."),
               ChatMessage("user", "Hi"), ChatMessage("system", "A note mid-conversation."),
               ChatMessage("assistant", "Hello"), ChatMessage("user", "Where is A-1?"))
    body = model.build_request(_request(messages=history))
    # stable (every call), then the summary (changes per fold), then the task (changes per turn)
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "You are Ana."), ("system", "Summary of the earlier conversation: two orders."),
        ("system", "Greet the user."), ("user", "Hi"), ("system", "A note mid-conversation."),
        ("assistant", "Hello"), ("user", "Where is A-1?")]


async def test_reasoning_model_parameters(provider: FakeProvider) -> None:
    model = OpenAIModel("gpt-5", api_key="k", base_url=provider.url + "/v1", params={"reasoning_effort": "low"})
    try:
        provider.add(Reply(body=chat_completion("ok", model="gpt-5")))
        await model.complete(_request(params={"max_tokens": 99}))
        body = provider.requests[-1].body
        assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
        assert body["reasoning_effort"] == "low"
    finally:
        await model.aclose()


async def test_content_filter_is_a_content_error(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=chat_completion("", finish="content_filter")))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request())
    assert caught.value.kind == "content"


async def test_streaming_text_and_usage(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            sse=[
                (None, openai_chunk({"role": "assistant", "content": ""})),
                (None, openai_chunk({"content": "Hel"})),
                (None, openai_chunk({"content": "lo!"})),
                (None, openai_chunk({}, finish="stop")),
                (None, openai_chunk(None, usage=USAGE)),
                (None, "[DONE]"),
            ]
        )
    )
    chunks = [c async for c in model.stream(_request())]
    assert [c.delta for c in chunks if not c.done] == ["Hel", "lo!"]
    final = chunks[-1]
    assert final.done and final.response is not None
    assert final.response.text == "Hello!" and final.response.finish_reason == "stop"
    assert final.response.usage.cached_input_tokens == 100 and final.response.usage.prompt_tokens == 120
    body = provider.requests[-1].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_streaming_tool_call_deltas(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(
        Reply(
            sse=[
                (
                    None,
                    openai_chunk(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": ""},
                                }
                            ],
                        }
                    ),
                ),
                (None, openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]})),
                (
                    None,
                    openai_chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": 1,
                                    "id": "call_b",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": ""},
                                }
                            ]
                        }
                    ),
                ),
                (None, openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Porto"}'}}]})),
                (None, openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"city": "Faro"}'}}]})),
                (None, openai_chunk({}, finish="tool_calls")),
                (None, "[DONE]"),
            ]
        )
    )
    chunks = [c async for c in model.stream(_request(tools=(WEATHER,)))]
    assert len(chunks) == 1
    response = chunks[0].response
    assert response is not None and response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall("call_a", "get_weather", {"city": "Porto"}),
        ToolCall("call_b", "get_weather", {"city": "Faro"}),
    )
    assert response.usage == Usage()


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, openai_error("Rate limit reached", "requests", "rate_limit_exceeded"), "rate"),
        (429, openai_error("You exceeded your current quota", "insufficient_quota", "insufficient_quota"), "quota"),
        (500, openai_error("The server had an error", "server_error"), "unknown"),
        (503, openai_error("Slow down", "server_error"), "overload"),
        (401, openai_error("Incorrect API key provided", "invalid_request_error", "invalid_api_key"), "auth"),
        (400, openai_error("Invalid value for 'temperature'"), "invalid"),
        (
            400,
            openai_error("This model's maximum context length is 128000 tokens.", code="context_length_exceeded"),
            "context",
        ),
        (404, openai_error("The model `gpt-9` does not exist", code="model_not_found"), "model"),
    ],
)
async def test_error_statuses(model: OpenAIModel, provider: FakeProvider, status: int, body: object, kind: str) -> None:
    provider.add(Reply(status, body))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request())
    assert caught.value.kind == kind and caught.value.status == status
    assert caught.value.provider == "openai:gpt-4o-mini"
    assert len(provider.requests) == 1  # the SDK did not retry on its own


async def test_streaming_error_status(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(429, openai_error("Rate limit reached", "requests"), headers={"retry-after": "2"}))
    with pytest.raises(ModelError) as caught:
        [c async for c in model.stream(_request())]
    assert caught.value.kind == "rate" and caught.value.reset_at is not None


async def test_retry_after_becomes_reset_at(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(429, openai_error("Rate limit reached", "requests"), headers={"retry-after": "3"}))
    before = datetime.now(UTC)
    with pytest.raises(ModelError) as caught:
        await model.complete(_request())
    reset_at = caught.value.reset_at
    assert reset_at is not None and 2.5 < (reset_at - before).total_seconds() < 5


@pytest.mark.parametrize(
    ("statuses", "requests", "outcome"),
    [
        ([429, 429, 200], 3, "ok"),
        ([500, 200], 2, "ok"),
        ([500, 503, 500], 3, "overload-or-unknown"),
        ([401], 1, "auth"),
        ([400], 1, "invalid"),
    ],
)
async def test_retries_count_at_the_server(
    model: OpenAIModel, provider: FakeProvider, sleeps: list[float], statuses: list[int], requests: int, outcome: str
) -> None:
    for status in statuses:
        provider.add(Reply(body=chat_completion("ok")) if status == 200 else Reply(status, openai_error("failed")))

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    retrying = RetryingModel(model, 3, sleep=sleep)
    if outcome == "ok":
        response = await retrying.complete(_request())
        assert response.attempts == requests
    else:
        with pytest.raises(ModelError) as caught:
            await retrying.complete(_request())
        assert caught.value.attempts == requests
        if outcome in ("auth", "invalid"):
            assert caught.value.kind == outcome
    assert len(provider.requests) == requests
    assert len(sleeps) == (requests - 1 if outcome == "ok" or requests == 3 else 0)
    assert {r.headers["x-stainless-retry-count"] for r in provider.requests} == {"0"}


async def test_timeout(model: OpenAIModel, provider: FakeProvider) -> None:
    provider.add(Reply(body=chat_completion("late"), delay=1.0))
    with pytest.raises(ModelError) as caught:
        await model.complete(_request(params={"timeout": 0.2}))
    assert caught.value.kind == "timeout" and caught.value.retryable


async def test_connection_refused_is_a_network_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIModel("gpt-4o-mini", api_key="k", base_url=f"http://127.0.0.1:{port}/v1")
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(_request())
        assert caught.value.kind == "network" and caught.value.retryable
    finally:
        await model.aclose()


def test_a_request_with_no_timeout_set_gets_the_default_not_the_sdks_ten_minutes(model: OpenAIModel) -> None:
    from tether.models._adapter import DEFAULT_TIMEOUT

    assert model.build_request(_request())["timeout"] == DEFAULT_TIMEOUT == 60.0
    assert model.build_request(_request(params={"timeout": 5}))["timeout"] == 5.0
