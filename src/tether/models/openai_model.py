"""The OpenAI chat-completions adapter, over the official ``openai`` SDK (imported lazily).

It speaks to any OpenAI-compatible endpoint by ``base_url``: OpenAI, vLLM, Ollama
(``http://localhost:11434/v1``), LM Studio, OpenRouter...

Wire mapping:

- ``system`` (stable) and ``instructions`` (per turn) become two system messages, in that order, so
  the stable prefix stays cacheable; the system messages that open the history (the conversation's
  summary, which changes per fold, not per turn) go between them, as the Anthropic adapter's
  system blocks do, so a cache reuses them too;
- tools become ``function`` tools with JSON Schema parameters; ``tool_choice`` is sent when tools
  are offered;
- ``response_format``: with native JSON Schema support it is sent as ``json_schema``; without, as
  ``json_object`` with the schema at the end of the stable system message (it changes with the
  step, not the turn, so it belongs before the per-turn part; a strict schema is shown shortened,
  :func:`~tether.models._adapter.prompt_schema`). Either way the reply text is
  parsed with :func:`tether.models.parsing.extract_json`; a reply that does not parse raises
  ``ModelError(kind="invalid")``. When the model answers with tool calls instead, ``data`` is None;
- ``max_tokens`` is sent as ``max_completion_tokens`` to reasoning models (``gpt-5*``, ``o1``,
  ``o3``...), which also get ``reasoning_effort``; other parameters are sent as they are
  (unknown ones through ``extra_body``);
- a refusal or a ``content_filter`` finish raises ``ModelError(kind="content")``.

The SDK's own retries are off (``max_retries=0``): wrap the adapter in
:class:`~tether.models.retry.RetryingModel` (``resolve_model`` does).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from tether.errors import ModelConfigurationError, ModelError
from tether.models._adapter import (
    import_sdk,
    parse_data,
    parse_tool_arguments,
    raise_mapped,
    schema_instructions,
    split_params,
)
from tether.models._guard import check_call_allowed
from tether.models.types import (
    Capabilities,
    ChatMessage,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    ToolCall,
    Usage,
)

__all__ = ["OPENAI_DEFAULT_BASE_URL", "OpenAIModel", "is_reasoning_model"]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_REASONING = re.compile(r"^(gpt-5($|[-.:])|o\d)")
_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
_SENT_AS_IS = (
    "temperature",
    "top_p",
    "reasoning_effort",
    "seed",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "parallel_tool_calls",
    "user",
    "logit_bias",
)


def is_reasoning_model(model: str) -> bool:
    """Whether an OpenAI model name is a reasoning model (``gpt-5``, ``gpt-5.1``, ``o1``, ``o3``...)."""
    return bool(_REASONING.match(model))


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    if message.name and message.role == "user":
        wire["name"] = message.name
    return wire


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=getattr(raw, "prompt_tokens", None),
        completion_tokens=getattr(raw, "completion_tokens", None),
        cached_input_tokens=getattr(prompt_details, "cached_tokens", None),
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
    )


class OpenAIModel:
    """A :class:`~tether.models.types.Model` over OpenAI chat completions (see the module doc).

    Args:
        model: the provider's model name (``gpt-4o-mini``, ``llama3.2``...).
        api_key: the key; defaults to ``OPENAI_API_KEY`` when no ``base_url`` is given. A custom
            ``base_url`` without a key gets a placeholder (local servers need none): an OpenAI key
            is never sent to another host.
        base_url: an OpenAI-compatible endpoint (default OpenAI's).
        provider: the ``provider`` part of :attr:`name`.
        params: default model parameters (a request's ``params`` win).
        capabilities: what the model can do (default: everything but prompt caching, which is on
            for OpenAI itself).
        reasoning: treat as a reasoning model (default: from the name, for provider ``openai``).
        stream_usage: ask for usage in streams (``stream_options.include_usage``).
        client_options: passed to ``openai.AsyncOpenAI`` (``default_headers``, ``http_client``...);
            ``max_retries`` is always 0.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider: str = "openai",
        params: Mapping[str, Any] | None = None,
        capabilities: Capabilities | None = None,
        reasoning: bool | None = None,
        stream_usage: bool = True,
        **client_options: Any,
    ) -> None:
        self._sdk = import_sdk("openai", "openai")
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY") if base_url is None else "not-needed"
        if not api_key:
            raise ModelConfigurationError(f"No API key for '{provider}:{model}': pass api_key= or set OPENAI_API_KEY.")
        client_options["max_retries"] = 0
        self._client = self._sdk.AsyncOpenAI(api_key=api_key, base_url=base_url, **client_options)
        self._api_key = api_key  # scrubbed from every error text the provider sends back
        self._model = model
        self._provider = provider
        self._params = dict(params or {})
        self._reasoning = is_reasoning_model(model) if reasoning is None else reasoning
        self._capabilities = capabilities or Capabilities(prompt_caching=provider == "openai")
        self._stream_usage = stream_usage
        self.base_url = str(self._client.base_url)

    @property
    def name(self) -> str:
        return f"{self._provider}:{self._model}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def build_request(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        params, timeout = split_params(self._params, request.params)
        if request.tools and not self._capabilities.tools:
            raise ModelConfigurationError(f"Model {self.name!r} does not support tools.")
        stable = request.system
        fmt = request.response_format
        native = self._capabilities.native_json_schema
        if fmt is not None and not native:
            # the schema changes with the step, not with the turn: it goes before the per-turn part
            stable = "\n\n".join(p for p in (stable, schema_instructions(fmt)) if p)
        # the system messages that open the history (the conversation's summary) change per fold, not
        # per turn: they go before the per-turn instructions, so a prompt cache reuses them too
        history = list(request.messages)
        lead = next((i for i, m in enumerate(history) if m.role != "system"), len(history))
        messages = [{"role": "system", "content": stable}] if stable else []
        messages += [_message(m) for m in history[:lead]]
        if request.instructions:
            messages.append({"role": "system", "content": request.instructions})
        messages += [_message(m) for m in history[lead:]]
        kwargs: dict[str, Any] = {"model": self._model, "messages": messages}
        if request.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
            kwargs["tool_choice"] = request.tool_choice
        if fmt is not None:
            kwargs["response_format"] = (
                {
                    "type": "json_schema",
                    "json_schema": {"name": fmt.name, "schema": fmt.schema, "strict": fmt.strict},
                }
                if native
                else {"type": "json_object"}
            )
        max_tokens = params.pop("max_tokens", None)
        if max_tokens is not None:
            kwargs["max_completion_tokens" if self._reasoning else "max_tokens"] = max_tokens
        for key in _SENT_AS_IS:
            if key in params:
                kwargs[key] = params.pop(key)
        if params:
            kwargs["extra_body"] = params
        kwargs["timeout"] = timeout
        return kwargs

    def _response(
        self,
        request: ModelRequest,
        text: str,
        calls: list[ToolCall],
        finish: str | None,
        usage: Usage,
        model: str | None,
        refusal: str | None = None,
    ) -> ModelResponse:
        finish = _FINISH.get(finish, finish) if finish else None
        if refusal or finish == "content_filter":
            raise ModelError(
                f"{self.name}: the reply was refused or filtered: {refusal or finish}",
                kind="content",
                provider=self._provider,
            )
        data = None
        if request.response_format is not None and not calls:
            data = parse_data(text, self.name)
        return ModelResponse(
            text=text, data=data, tool_calls=tuple(calls), finish_reason=finish, usage=usage, model=model
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one chat completion."""
        check_call_allowed(self.name, self.base_url)
        kwargs = self.build_request(request)
        try:
            raw = await self._client.chat.completions.create(**kwargs)
        except (Exception, asyncio.CancelledError) as exc:
            raise_mapped(exc, self._sdk, self.name, secret=self._api_key)
        if not raw.choices:
            raise ModelError(f"{self.name}: the reply has no choices", kind="unknown", provider=self._provider)
        choice = raw.choices[0]
        message = choice.message
        calls = [
            parse_tool_arguments(c.id, c.function.name, c.function.arguments, self.name)
            for c in (message.tool_calls or ())
            if getattr(c, "function", None) is not None
        ]
        return self._response(
            request,
            message.content or "",
            calls,
            choice.finish_reason,
            _usage(raw.usage),
            raw.model,
            getattr(message, "refusal", None),
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Run one chat completion as a stream: text deltas, then the whole response."""
        check_call_allowed(self.name, self.base_url)
        kwargs = self.build_request(request)
        kwargs["stream"] = True
        if self._stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage = Usage()
        model: str | None = None
        refusal: list[str] = []
        stream: Any = None
        try:
            stream = await self._client.chat.completions.create(**kwargs)
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if getattr(delta, "refusal", None):
                        refusal.append(delta.refusal)
                    for piece in getattr(delta, "tool_calls", None) or ():
                        acc = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                        acc["id"] = acc["id"] or (piece.id or "")
                        function = piece.function
                        if function is not None:
                            acc["name"] = acc["name"] or (function.name or "")
                            acc["arguments"] += function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
                    if delta.content:
                        text.append(delta.content)
                        yield StreamChunk(delta=delta.content)
        except (Exception, asyncio.CancelledError) as exc:
            raise_mapped(exc, self._sdk, self.name, secret=self._api_key)
        finally:
            if stream is not None:
                await stream.close()
        tool_calls = [
            parse_tool_arguments(c["id"], c["name"], c["arguments"], self.name) for _, c in sorted(calls.items())
        ]
        response = self._response(request, "".join(text), tool_calls, finish, usage, model, "".join(refusal))
        yield StreamChunk(done=True, response=response)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
