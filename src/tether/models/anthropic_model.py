"""The Anthropic messages adapter, over the official ``anthropic`` SDK (imported lazily).

Wire mapping:

- ``system`` (stable) is the first system block and carries ``cache_control: {"type":
  "ephemeral"}`` (prompt caching of tools + stable system prefix); ``instructions`` (per turn)
  follows as a second, uncached block. ``system`` messages inside the history join the system
  blocks. A request without messages sends its instructions as the user message instead;
- consecutive messages of the same role are merged (tool results travel as ``tool_result`` blocks
  of one user message);
- tools become ``{name, description, input_schema}``; ``tool_choice`` ``auto``/``required``/``none``
  becomes ``auto``/``any``/``none``;
- **structured output** uses a forced tool: when a ``response_format`` is asked for and no other
  tool is offered, a tool named after the format with the schema as ``input_schema`` is forced
  (``tool_choice {type: tool, name}``) and its input is the reply's ``data`` (the text is its
  JSON). When other tools are offered, the schema goes into the per-turn instructions and the
  reply text is parsed with :func:`~tether.models.parsing.extract_json` (``ModelError(kind=
  "invalid")`` when it does not parse; ``data`` None when the model called tools instead);
- ``max_tokens`` is required by the API: default 4096. Other parameters (``temperature``,
  ``top_p``, ``top_k``, ``stop_sequences``...) are sent as body fields;
- usage: ``prompt_tokens`` is the whole input (``input_tokens`` + cache reads + cache writes, as
  with OpenAI, where cached tokens are part of the prompt), ``cached_input_tokens`` is
  ``cache_read_input_tokens``, ``cache_creation_tokens`` is ``cache_creation_input_tokens``;
- a ``refusal`` stop raises ``ModelError(kind="content")``.

The SDK's own retries are off (``max_retries=0``): wrap the adapter in
:class:`~tether.models.retry.RetryingModel` (``resolve_model`` does).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from tether.errors import ModelConfigurationError, ModelError
from tether.models._adapter import (
    import_sdk,
    parse_data,
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

__all__ = ["ANTHROPIC_DEFAULT_MAX_TOKENS", "AnthropicModel"]

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    if message.role == "assistant":
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
    return blocks


def _usage(raw: Any, previous: Usage | None = None) -> Usage:
    before = previous or Usage()
    if raw is None:
        return before
    fresh = getattr(raw, "input_tokens", None)
    read = getattr(raw, "cache_read_input_tokens", None)
    created = getattr(raw, "cache_creation_input_tokens", None)
    output = getattr(raw, "output_tokens", None)
    prompt = None if fresh is None else fresh + (read or 0) + (created or 0)
    return Usage(
        prompt_tokens=prompt if prompt is not None else before.prompt_tokens,
        completion_tokens=output if output is not None else before.completion_tokens,
        cached_input_tokens=read if read is not None else before.cached_input_tokens,
        cache_creation_tokens=created if created is not None else before.cache_creation_tokens,
    )


class AnthropicModel:
    """A :class:`~tether.models.types.Model` over the Anthropic messages API (see the module doc).

    Args:
        model: the model name (``claude-haiku-4-5``...).
        api_key: the key; defaults to ``ANTHROPIC_API_KEY``.
        base_url: another endpoint speaking the messages API (default Anthropic's).
        provider: the ``provider`` part of :attr:`name`.
        params: default model parameters (a request's ``params`` win).
        capabilities: what the model can do (default: everything, with prompt caching).
        client_options: passed to ``anthropic.AsyncAnthropic``; ``max_retries`` is always 0.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider: str = "anthropic",
        params: Mapping[str, Any] | None = None,
        capabilities: Capabilities | None = None,
        **client_options: Any,
    ) -> None:
        self._sdk = import_sdk("anthropic", "anthropic")
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ModelConfigurationError(
                f"No API key for '{provider}:{model}': pass api_key= or set ANTHROPIC_API_KEY."
            )
        client_options["max_retries"] = 0
        self._client = self._sdk.AsyncAnthropic(api_key=api_key, base_url=base_url, **client_options)
        self._api_key = api_key  # scrubbed from every error text the provider sends back
        self._model = model
        self._provider = provider
        self._params = dict(params or {})
        self._capabilities = capabilities or Capabilities(prompt_caching=True)
        self.base_url = str(self._client.base_url)

    @property
    def name(self) -> str:
        return f"{self._provider}:{self._model}"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def _forced_tool(self, request: ModelRequest) -> str | None:
        fmt = request.response_format
        if fmt is None or not self._capabilities.native_json_schema:
            return None
        return fmt.name if not request.tools or request.tool_choice == "none" else None

    def build_request(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        params, timeout = split_params(self._params, request.params)
        if request.tools and not self._capabilities.tools:
            raise ModelConfigurationError(f"Model {self.name!r} does not support tools.")
        forced = self._forced_tool(request)
        instructions = request.instructions
        if request.response_format is not None and forced is None:
            instructions = "\n\n".join(p for p in (instructions, schema_instructions(request.response_format)) if p)
        system: list[dict[str, Any]] = []
        if request.system:
            block: dict[str, Any] = {"type": "text", "text": request.system}
            if self._capabilities.prompt_caching:
                block["cache_control"] = {"type": "ephemeral"}
            system.append(block)
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                if message.content:
                    system.append({"type": "text", "text": message.content})
                continue
            role = "assistant" if message.role == "assistant" else "user"
            blocks = _blocks(message)
            if not blocks:
                continue
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": blocks})
        if not messages:
            messages = [{"role": "user", "content": [{"type": "text", "text": instructions or "Begin."}]}]
        elif instructions:
            system.append({"type": "text", "text": instructions})
        kwargs: dict[str, Any] = {
            "model": self._model,
            "max_tokens": int(params.pop("max_tokens", ANTHROPIC_DEFAULT_MAX_TOKENS)),
            "messages": messages,
        }
        if system:
            kwargs["system"] = system
        tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools]
        if forced is not None and request.response_format is not None:
            tools = [
                {
                    "name": forced,
                    "description": f"Give the reply as {forced!r}.",
                    "input_schema": request.response_format.schema,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": forced}
        elif tools:
            kwargs["tool_choice"] = _CHOICE[request.tool_choice]
        if tools:
            kwargs["tools"] = tools
        if params:
            kwargs["extra_body"] = params
        kwargs["timeout"] = timeout
        return kwargs

    def _response(
        self,
        request: ModelRequest,
        text: str,
        calls: list[ToolCall],
        stop: str | None,
        usage: Usage,
        model: str | None,
    ) -> ModelResponse:
        finish = _FINISH.get(stop, stop) if stop else None
        if finish == "content_filter":
            raise ModelError(f"{self.name}: the model refused to answer", kind="content", provider=self._provider)
        forced = self._forced_tool(request)
        data = None
        if forced is not None:
            answer = [c for c in calls if c.name == forced]
            if not answer:
                raise ModelError(
                    f"{self.name}: the structured reply is missing", kind="invalid", provider=self._provider
                )
            data = answer[0].arguments
            calls = [c for c in calls if c.name != forced]
            text = json.dumps(data)
            finish = "stop" if finish == "tool_calls" and not calls else finish
        elif request.response_format is not None and not calls:
            data = parse_data(text, self.name)
        return ModelResponse(
            text=text, data=data, tool_calls=tuple(calls), finish_reason=finish, usage=usage, model=model
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one messages call."""
        check_call_allowed(self.name, self.base_url)
        kwargs = self.build_request(request)
        try:
            raw = await self._client.messages.create(**kwargs)
        except (Exception, asyncio.CancelledError) as exc:
            raise_mapped(exc, self._sdk, self.name, secret=self._api_key)
        text = "".join(b.text for b in raw.content if b.type == "text")
        calls = [
            ToolCall(id=b.id, name=b.name, arguments=dict(b.input or {})) for b in raw.content if b.type == "tool_use"
        ]
        return self._response(request, text, calls, raw.stop_reason, _usage(raw.usage), raw.model)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Run one messages call as a stream: text deltas, then the whole response."""
        check_call_allowed(self.name, self.base_url)
        kwargs = self.build_request(request)
        kwargs["stream"] = True
        text: list[str] = []
        tools: dict[int, dict[str, str]] = {}
        stop: str | None = None
        usage = Usage()
        model: str | None = None
        stream: Any = None
        try:
            stream = await self._client.messages.create(**kwargs)
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    model = event.message.model
                    usage = _usage(event.message.usage, usage)
                elif kind == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    tools[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        text.append(delta.text)
                        yield StreamChunk(delta=delta.text)
                    elif delta.type == "input_json_delta" and event.index in tools:
                        tools[event.index]["json"] += delta.partial_json
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    usage = _usage(event.usage, usage)
        except (Exception, asyncio.CancelledError) as exc:
            raise_mapped(exc, self._sdk, self.name, secret=self._api_key)
        finally:
            if stream is not None:
                await stream.close()
        calls = [self._streamed_call(t) for _, t in sorted(tools.items())]
        yield StreamChunk(done=True, response=self._response(request, "".join(text), calls, stop, usage, model))

    def _streamed_call(self, acc: dict[str, str]) -> ToolCall:
        try:
            arguments = json.loads(acc["json"]) if acc["json"].strip() else {}
        except (ValueError, RecursionError) as exc:
            raise ModelError(
                f"{self.name}: streamed input of tool {acc['name']!r} is not valid JSON",
                kind="invalid",
                provider=self._provider,
            ) from exc
        return ToolCall(id=acc["id"], name=acc["name"], arguments=arguments if isinstance(arguments, dict) else {})

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
