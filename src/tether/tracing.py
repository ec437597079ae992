"""OpenTelemetry spans (the ``otel`` extra): a span per turn, per engine phase and per model call.

With ``opentelemetry-api`` installed, tether makes its spans on the tracer ``tether``; they are
recorded by whatever ``TracerProvider`` the application configured. With none configured (the
API's default proxy provider, or its no-op provider) nothing would record them, so none is made:
a span of the API costs more than a phase of a turn. A provider configured later is used from
the next span on. Without the package every hook here is a no-op: nothing is imported and no
span object is made.

* ``tether.turn`` (INTERNAL): one request through the runtime; attributes ``tether.agent``,
  ``tether.session``, ``tether.input``, ``tether.success``, ``tether.code``,
  ``tether.model_calls``; an error status when the request failed.
* ``tether.phase <name>`` (INTERNAL): the engine's phases, ``understand``, ``decide``, ``run``,
  ``speak`` and ``settle``, inside the turn span.
* ``chat <model>`` (CLIENT): each model call, with the GenAI semantic conventions:
  ``gen_ai.operation.name``, ``gen_ai.provider.name`` (and the older ``gen_ai.system``),
  ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.response.finish_reasons``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``error.type`` on failure, plus
  ``tether.call`` (which engine call it was).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from tether.models.types import Capabilities, Model, ModelRequest, ModelResponse, StreamChunk
from tether.otel import otel_api

__all__ = ["TracedModel", "enabled", "end_turn", "phase_span", "recording", "traced", "traced_models", "turn_span"]


def _api() -> Any:
    """``opentelemetry.trace`` at the first hook that asks (None without the otel extra)."""
    return otel_api("trace")


def enabled() -> bool:
    """True when ``opentelemetry-api`` is importable."""
    return _api() is not None


def recording() -> bool:
    """True when tether's spans would be recorded: the API is installed and a provider configured."""
    return _tracer() is not None


def _tracer() -> Any:
    """The ``tether`` tracer of the configured provider; None when nothing would record its spans."""
    trace = _api()
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer("tether")


def turn_span(agent_id: str, session_id: str | None, input_label: str) -> contextlib.AbstractContextManager[Any]:
    """The span of one runtime request (None when nothing records it); :func:`end_turn` records its result."""
    tracer = _tracer()
    if tracer is None:
        return contextlib.nullcontext()
    attributes = {"tether.agent": agent_id, "tether.input": input_label}
    if session_id:
        attributes["tether.session"] = session_id
    return tracer.start_as_current_span("tether.turn", attributes=attributes)  # type: ignore[no-any-return]


class TurnEnvelope(Protocol):
    """What :func:`end_turn` reads of a request's envelope (the runtime's ``RunResponse``)."""

    @property
    def success(self) -> bool: ...
    @property
    def message(self) -> str: ...
    @property
    def session(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    @property
    def result(self) -> Any: ...


def end_turn(span: Any, response: TurnEnvelope) -> None:
    """Record a request's envelope on its turn span."""
    trace = _api()
    if span is None or trace is None:
        return
    span.set_attribute("tether.success", response.success)
    if response.session:
        span.set_attribute("tether.session", response.session)
    if response.code:
        span.set_attribute("tether.code", response.code)
    if response.result is not None:
        span.set_attribute("tether.model_calls", response.result.llm_calls)
    if not response.success:
        span.set_status(trace.Status(trace.StatusCode.ERROR, response.message))


def phase_span(name: str) -> contextlib.AbstractContextManager[Any]:
    """The span of an engine phase (``TurnOptions.phase``)."""
    tracer = _tracer()
    if tracer is None:
        return contextlib.nullcontext()
    return tracer.start_as_current_span(f"tether.phase {name}", attributes={"tether.phase": name})  # type: ignore[no-any-return]


def traced(model: Model) -> Model:
    """``model`` with a span around each call (itself when OpenTelemetry is absent)."""
    if _api() is None or isinstance(model, TracedModel):
        return model
    return TracedModel(model)


class TracedModel:
    """A model whose every call is a GenAI ``chat`` span; everything else is the wrapped model's."""

    def __init__(self, model: Model) -> None:
        self.model = model
        provider, _, name = model.name.partition(":")
        self._provider, self._model = (provider, name) if name else ("unknown", provider)

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def capabilities(self) -> Capabilities:
        return self.model.capabilities

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.model, attr)

    @contextlib.contextmanager
    def _span(self, request: ModelRequest) -> Iterator[Any]:
        """The call's span, a child of the current one; never made current (a streamed call's span
        outlives the context it started in, and a model span has no children)."""
        trace = _api()
        assert trace is not None
        tracer = _tracer()
        if tracer is None:
            yield None
            return
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": self._provider,
                      "gen_ai.system": self._provider, "gen_ai.request.model": self._model, "tether.call": request.call}
        span = tracer.start_span(f"chat {self._model}", kind=trace.SpanKind.CLIENT, attributes=attributes)
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", str(getattr(exc, "code", None) or type(exc).__name__))
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
            raise
        finally:
            span.end()

    @staticmethod
    def _record(span: Any, response: ModelResponse) -> None:
        if span is None:
            return
        if response.model:
            span.set_attribute("gen_ai.response.model", response.model)
        if response.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
        if response.usage.prompt_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.prompt_tokens)
        if response.usage.completion_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.completion_tokens)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        with self._span(request) as span:
            response = await self.model.complete(request)
            self._record(span, response)
            return response

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        with self._span(request) as span:
            async for chunk in self.model.stream(request):
                if chunk.done and chunk.response is not None:
                    self._record(span, chunk.response)
                yield chunk


class _TracedSource:
    """An agent's models (the engine's ``ModelSource``), each call traced."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def model_for(self, tier: str) -> Model | None:
        model = self.source.model_for(tier)
        return traced(model) if model is not None else None

    def gate_judge_model(self) -> Model | None:
        model = self.source.gate_judge_model()
        return traced(model) if model is not None else None


def traced_models(source: Any) -> Any:
    """The ``ModelSource`` the engine gets: ``source`` itself when OpenTelemetry is absent."""
    return _TracedSource(source) if _api() is not None else source
