"""Model doubles: a scripted model that fails loudly when called once too often, and a model that
answers with a function."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tether.models.types import (
    Capabilities,
    ModelRequest,
    ModelResponse,
    StreamChunk,
    ToolCall,
    Usage,
)

__all__ = ["FunctionModel", "ScriptExhausted", "ScriptedCall", "ScriptedModel", "to_response", "tool_calls"]

Reply = Any  # a str, a dict/list, a ModelResponse, or a callable(request) -> one of those


class ScriptExhausted(AssertionError):
    """A scripted model was called with no reply left in that call's queue.

    It is an ``AssertionError`` so that no engine error handling mistakes it for a provider
    failure: a test that spends one model call too many fails loudly.
    """


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded call: its name and the request."""

    call: str
    request: ModelRequest


def to_response(reply: Any, request: ModelRequest, usage: Usage | None = None) -> ModelResponse:
    """Turn a scripted reply into a ModelResponse.

    - a ``ModelResponse`` is returned as is;
    - a ``str`` is the reply text;
    - a dict or list: when the request forces one tool, it becomes that tool's arguments; when
      the request asks for structured output, it is the parsed data; otherwise the text is its
      ``"message"`` (if a string) or its JSON.
    """
    usage = usage or Usage()
    if isinstance(reply, ModelResponse):
        return reply
    if isinstance(reply, str):
        return ModelResponse(text=reply, finish_reason="stop", usage=usage)
    if isinstance(reply, dict | list):
        if isinstance(reply, dict) and request.tool_choice == "required" and len(request.tools) == 1:
            call = ToolCall(id="call_1", name=request.tools[0].name, arguments=dict(reply))
            return ModelResponse(tool_calls=(call,), finish_reason="tool_calls", usage=usage)
        text = reply.get("message") if isinstance(reply, dict) else None
        if not isinstance(text, str):
            text = json.dumps(reply)
        data = reply if request.response_format is not None else None
        return ModelResponse(text=text, data=data, finish_reason="stop", usage=usage)
    raise TypeError(f"cannot turn a scripted reply of type {type(reply).__name__} into a model response")


def tool_calls(*calls: tuple[str, dict[str, Any]], text: str = "") -> ModelResponse:
    """A scripted reply that calls tools, in order: ``tool_calls(("set_guests", {"guests": 2}))``
    (call ids ``call_0``, ``call_1``, ...)."""
    return ModelResponse(text=text, finish_reason="tool_calls",
                         tool_calls=tuple(ToolCall(f"call_{i}", name, dict(args))
                                          for i, (name, args) in enumerate(calls)))


def _fake_usage(request: ModelRequest, response: ModelResponse) -> Usage:
    seen = len(request.system) + len(request.instructions) + sum(len(m.content) for m in request.messages)
    return Usage(prompt_tokens=max(1, seen // 4), completion_tokens=max(1, len(response.text) // 4))


class QueuedReplies:
    """What the scripted fakes share: replies queued per call name, and the calls made."""

    _queues: dict[str, deque[Reply]]
    calls: list[ScriptedCall]

    def add(self, call: str, *replies: Reply) -> None:
        """Queue more replies for ``call``."""
        self._queues.setdefault(call, deque()).extend(replies)

    def unused(self) -> dict[str, int]:
        """How many queued replies were never used, per call name (empty queues omitted)."""
        return {call: len(queue) for call, queue in self._queues.items() if queue}

    def count(self, call: str | None = None) -> int:
        """How many calls were made (of one name, or in all)."""
        return sum(1 for c in self.calls if call is None or c.call == call)


class ScriptedModel(QueuedReplies):
    """Replies from one FIFO queue per call name, records every call, and raises
    :class:`ScriptExhausted` when a queue is empty.

    >>> model = ScriptedModel(extract=[{"address": "1 Main St"}], speak=["Booked!"])

    Each entry is a value or a function of the request (see :func:`to_response`). ``usage=True``
    fakes token counts from the text lengths (4 characters a token).
    """

    def __init__(
        self,
        *,
        usage: bool = False,
        name: str = "scripted:model",
        capabilities: Capabilities | None = None,
        **queues: list[Reply],
    ) -> None:
        self._queues: dict[str, deque[Reply]] = {call: deque(replies) for call, replies in queues.items()}
        self._usage = usage
        self._name = name
        self._capabilities = capabilities or Capabilities(prompt_caching=True)
        self.calls: list[ScriptedCall] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(ScriptedCall(request.call, request))
        queue = self._queues.get(request.call)
        if not queue:
            raise ScriptExhausted(
                f"ScriptedModel: no scripted reply left for call {request.call!r} "
                f"(call #{len(self.calls)}; calls so far: {[c.call for c in self.calls]})"
            )
        reply = queue.popleft()
        if callable(reply):
            reply = reply(request)
        response = to_response(reply, request)
        if self._usage and response.usage == Usage():
            response = _with_usage(response, _fake_usage(request, response))
        return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        if response.text:
            yield StreamChunk(delta=response.text)
        yield StreamChunk(done=True, response=response)


def _with_usage(response: ModelResponse, usage: Usage) -> ModelResponse:
    return ModelResponse(
        text=response.text,
        data=response.data,
        tool_calls=response.tool_calls,
        finish_reason=response.finish_reason,
        usage=usage,
        attempts=response.attempts,
        model=response.model,
    )


class FunctionModel:
    """A model that answers with ``fn(request)`` (sync or async), for tests that compute replies."""

    def __init__(
        self,
        fn: Callable[[ModelRequest], Any] | Callable[[ModelRequest], Awaitable[Any]],
        *,
        name: str = "function:model",
        capabilities: Capabilities | None = None,
    ) -> None:
        self._fn = fn
        self._name = name
        self._capabilities = capabilities or Capabilities()
        self.calls: list[ScriptedCall] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(ScriptedCall(request.call, request))
        reply = self._fn(request)
        if isinstance(reply, Awaitable):
            reply = await reply
        return to_response(reply, request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        if response.text:
            yield StreamChunk(delta=response.text)
        yield StreamChunk(done=True, response=response)
