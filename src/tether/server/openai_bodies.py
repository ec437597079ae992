"""The request bodies of the OpenAI-compatible routes, and which of OpenAI's parameters tether
honours, ignores or refuses.

An agent decides what it says and how (its flows, its own tools and models), so a parameter that
would change that cannot be honoured. Those that only tune sampling or length are accepted and
ignored (:data:`IGNORED`; the response names each one given in its ``X-Tether-Ignored`` header,
with any parameter tether does not know). Those a client relies on for what it gets back (more
than one choice, its own tools, structured output, stop sequences, log probabilities, audio) are
refused with 400 ``unsupported-parameter`` naming the parameter, rather than answered as if they
had been honoured.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tether.server.problems import ApiError

__all__ = ["IGNORED", "ChatCompletionBody", "ChatMessageIn", "ResponsesBody", "StreamOptions", "ignored_parameters"]

IGNORED = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "seed", "logit_bias", "max_tokens",
           "max_completion_tokens", "max_output_tokens", "parallel_tool_calls", "reasoning_effort", "reasoning",
           "service_tier", "store", "metadata", "verbosity", "truncation", "top_logprobs", "include", "prediction",
           "web_search_options")
"""Parameters accepted and ignored: they tune a model's sampling or length, which the agent's own
model settings decide (a reply is never cut short)."""

class StreamOptions(BaseModel):
    """``stream_options``: ``include_usage`` adds a last chunk carrying ``usage``."""

    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class _OpenAIBody(BaseModel):
    """What the chat and responses bodies share: the model, streaming, the conversation keys and
    the parameters tether refuses."""

    model_config = ConfigDict(extra="allow")

    model: str
    stream: bool = False
    user: str | None = Field(default=None, min_length=1, max_length=200,
                             description="names the conversation: one session per tenant, agent and user")
    safety_identifier: str | None = Field(default=None, min_length=1, max_length=500,
                                          description="OpenAI's replacement for user: the same as user here")
    prompt_cache_key: str | None = Field(default=None, min_length=1, max_length=500,
                                         description="names the conversation when user and safety_identifier "
                                                     "are absent")
    tools: list[Any] | None = Field(default=None, description="refused when not empty (the agent has its own)")
    tool_choice: Any = Field(default=None, description="only 'none' or 'auto'")

    def conversation_name(self) -> str | None:
        """The client's name for the conversation: ``user``, else ``safety_identifier``, else
        ``prompt_cache_key``."""
        return self.user or self.safety_identifier or self.prompt_cache_key

    def refuse_unsupported(self) -> None:
        """Raise 400 ``unsupported-parameter`` naming the first parameter tether cannot honour."""
        if self.tools:
            _refuse("tools", "a tether agent calls its own tools; the client's tools would never be called")
        if self.tool_choice not in (None, "none", "auto"):
            _refuse("tool_choice", "only 'none' or 'auto' (a tether agent calls its own tools)")


def _refuse(name: str, why: str) -> None:
    raise ApiError(400, "unsupported-parameter", f"{name}: not supported by tether: {why}", details={"param": name})


class ChatMessageIn(BaseModel):
    """One message of ``POST /v1/chat/completions`` (OpenAI's shape; other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    role: str
    content: str | list[Any] | None = None


class ChatCompletionBody(_OpenAIBody):
    """``POST /v1/chat/completions``: ``model`` is ``tether:<agent>``. tether keeps the
    conversation: the last message is the new one (the user's; with no user message at all the
    agent speaks first), the history before it finds the session when no session header or
    ``user`` names it. Sampling and length options are ignored (see :data:`IGNORED`)."""

    messages: list[ChatMessageIn] = Field(min_length=1)
    stream_options: StreamOptions | None = None
    n: int | None = Field(default=None, description="only 1")
    functions: list[Any] | None = Field(default=None, description="refused when not empty")
    function_call: Any = Field(default=None, description="only 'none' or 'auto'")
    response_format: dict[str, Any] | None = Field(default=None, description="only {'type': 'text'}")
    stop: str | list[str] | None = Field(default=None, description="refused when not empty")
    logprobs: bool | None = Field(default=None, description="only false")
    modalities: list[str] | None = Field(default=None, description="only ['text']")
    audio: Any = Field(default=None, description="refused")

    def refuse_unsupported(self) -> None:
        super().refuse_unsupported()
        if self.n is not None and self.n != 1:
            _refuse("n", "a turn has one reply, so n must be 1")
        if self.functions:
            _refuse("functions", "a tether agent calls its own tools; the client's functions would never be called")
        if self.function_call not in (None, "none", "auto"):
            _refuse("function_call", "only 'none' or 'auto' (a tether agent calls its own tools)")
        if self.response_format is not None and self.response_format.get("type", "text") != "text":
            _refuse("response_format", "a tether agent answers text; only {'type': 'text'}")
        if self.stop:
            _refuse("stop", "a reply is never cut at stop sequences")
        if self.logprobs:
            _refuse("logprobs", "an agent's reply has no log probabilities")
        if self.modalities is not None and set(self.modalities) - {"text"}:
            _refuse("modalities", "a tether agent answers text; only ['text']")
        if self.audio is not None:
            _refuse("audio", "a tether agent answers text")


class ResponsesBody(_OpenAIBody):
    """``POST /v1/responses`` (the Responses API, text only): ``input`` is a text or a list of
    messages (a full history finds its session as on the chat route); ``previous_response_id``
    continues the session of that response. ``instructions`` are ignored (the agent has its own)."""

    input: str | list[Any]
    instructions: str | None = None
    previous_response_id: str | None = Field(default=None, min_length=1, max_length=200)
    text: dict[str, Any] | None = Field(default=None, description="only the text format")
    conversation: Any = Field(default=None, description="refused: use previous_response_id or X-Tether-Session")
    background: bool | None = Field(default=None, description="only false")

    def refuse_unsupported(self) -> None:
        super().refuse_unsupported()
        text_format = (self.text or {}).get("format") or {}
        if isinstance(text_format, dict) and text_format.get("type", "text") != "text":
            _refuse("text.format", "a tether agent answers text; only {'type': 'text'}")
        if self.conversation is not None:
            _refuse("conversation", "tether keeps the conversation: send previous_response_id or the "
                                    "X-Tether-Session header")
        if self.background:
            _refuse("background", "a response is answered in the request")


def ignored_parameters(body: BaseModel) -> list[str]:
    """The parameters of ``body`` that were given and are ignored (those of :data:`IGNORED`, and
    any tether does not know)."""
    return sorted(body.model_extra or {})
