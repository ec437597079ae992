"""The model seam's types: what the engine asks a model, and what comes back.

These are plain dataclasses (no I/O, no vendor SDK) shared by the engine, the adapters and the
testing doubles. A request keeps the stable system part (cacheable across turns) apart from the
per-turn part so that providers with prompt caching can cache the stable prefix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "CALL_NAMES",
    "CallName",
    "Capabilities",
    "ChatMessage",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ResponseFormat",
    "StreamChunk",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

CallName = Literal["understand", "speak", "extract", "decide", "subprompt", "summary", "judge", "agent"]
CALL_NAMES: tuple[str, ...] = ("understand", "speak", "extract", "decide", "subprompt", "summary", "judge", "agent")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the history a model sees.

    ``role`` is ``user``, ``assistant``, ``system`` or ``tool``. Assistant messages may carry
    ``tool_calls``; tool messages carry the ``tool_call_id`` they answer and the tool ``name``.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: a name, a description and JSON Schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Structured output: the reply must be JSON matching ``schema`` (named ``name``)."""

    name: str
    schema: dict[str, Any]
    strict: bool = True


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What the engine asks of a model.

    Attributes:
        call: which engine call this is (``understand``, ``speak``, ``extract``, ``decide``,
            ``subprompt``, ``summary``, ``judge``, ``agent``); scripted models queue by it.
        system: the stable system part (identity, knowledge), identical across turns: cacheable.
        instructions: the per-turn system part (step guideline, known facts, format).
        messages: conversation history, oldest first, ending with the latest user turn if any.
        tools: tools the model may call this round.
        tool_choice: ``auto``, ``required`` (must call a tool) or ``none``.
        response_format: when set, the reply must be JSON matching this schema.
        params: provider parameters (temperature, max_tokens...), validated by the catalog.
        tier: which configured model tier serves the call (``default``, ``small``, ``deep``).
    """

    call: CallName
    system: str = ""
    instructions: str = ""
    messages: tuple[ChatMessage, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: Literal["auto", "required", "none"] = "auto"
    response_format: ResponseFormat | None = None
    params: dict[str, Any] = field(default_factory=dict)
    tier: Literal["default", "small", "deep"] = "default"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one or more calls. A count is ``None`` (absent) when the provider did not
    report it, never a made-up zero."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            if a is None:
                return b
            if b is None:
                return a
            return a + b

        return Usage(
            add(self.prompt_tokens, other.prompt_tokens),
            add(self.completion_tokens, other.completion_tokens),
            add(self.cached_input_tokens, other.cached_input_tokens),
            add(self.cache_creation_tokens, other.cache_creation_tokens),
            add(self.reasoning_tokens, other.reasoning_tokens),
        )

    def as_dict(self) -> dict[str, int]:
        """The counts that are known, by name."""
        return {k: v for k in _USAGE_KEYS if (v := getattr(self, k)) is not None}


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_creation_tokens", "reasoning_tokens")


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What came back.

    Attributes:
        text: the reply's text (may be empty when the model only called tools).
        data: the parsed structured reply, when a ``response_format`` was asked for and it parsed.
        tool_calls: tools the model asked to call.
        finish_reason: the provider's stop reason, normalised (``stop``, ``length``,
            ``tool_calls``, ``content_filter``) when known.
        usage: token counts.
        attempts: how many attempts the call took (retries inside one call).
        model: the provider's model name, when known.
    """

    text: str = ""
    data: Any = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    attempts: int = 1
    model: str | None = None


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One piece of a streamed reply: a text ``delta``; the last chunk has ``done`` and the full
    ``response``."""

    delta: str = ""
    done: bool = False
    response: ModelResponse | None = None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a model can do."""

    tools: bool = True
    native_json_schema: bool = True
    streaming: bool = True
    prompt_caching: bool = False


@runtime_checkable
class Model(Protocol):
    """The one interface between tether and a language model."""

    @property
    def name(self) -> str:
        """``provider:model``."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Run one call to completion. Raises :class:`tether.errors.ModelError` on failure."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Run one call, yielding text deltas, then a final chunk with the whole response."""
        ...
