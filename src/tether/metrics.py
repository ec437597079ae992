"""OpenTelemetry metrics (the ``otel`` extra), on the meter ``tether``.

* ``tether.model.calls`` (counter, ``{call}``): model calls made by turns of a runtime, with the
  attribute ``tether.model`` (the selection, ``openai:gpt-4o-mini``);
* ``tether.model.tokens`` (counter, ``{token}``): their tokens, with ``tether.model`` and
  ``tether.token.type`` (``input`` or ``output``);
* ``tether.turn.duration`` (histogram, seconds): each request through the runtime, with
  ``tether.agent`` and ``tether.success``.

They are recorded by the ``MeterProvider`` the application configures (none: the API's no-op).
Without the package every hook here is a no-op.
"""

from __future__ import annotations

from typing import Any

from tether.otel import otel_api

__all__ = ["count_model_call", "record_turn"]

_instruments: dict[str, Any] = {}
_provider: Any = None


def _api() -> Any:
    """``opentelemetry.metrics`` at the first turn recorded (None without the otel extra)."""
    return otel_api("metrics")


def _meter_provider() -> Any:
    """The application's ``MeterProvider`` (the API's no-op one when none is configured)."""
    return _api().get_meter_provider()


def _records(provider: Any) -> bool:
    """False for the API's providers that record nothing: the no-op one and the proxy that stands
    in until the application configures one (a proxy's instruments would discard every value)."""
    return not isinstance(provider, _api().NoOpMeterProvider) and type(provider).__name__ != "_ProxyMeterProvider"


def _instrument(name: str) -> Any:
    """The instrument ``name`` of the configured provider's ``tether`` meter (made again when the
    application configures another provider); None when nothing would record it."""
    global _provider
    provider = _meter_provider()
    if provider is not _provider:
        if not _records(provider):
            return None
        _instruments.clear()
        _provider = provider
    found = _instruments.get(name)
    if found is None:
        meter = provider.get_meter("tether")
        if name == "tether.turn.duration":
            found = meter.create_histogram(name, unit="s", description="requests through the runtime")
        elif name == "tether.model.calls":
            found = meter.create_counter(name, unit="{call}", description="model calls made by turns")
        else:
            found = meter.create_counter(name, unit="{token}", description="tokens of the model calls")
        _instruments[name] = found
    return found


def count_model_call(model: str, tokens_in: int, tokens_out: int) -> None:
    """Count one model call of ``model`` and its tokens."""
    if _api() is None:
        return
    calls = _instrument("tether.model.calls")
    if calls is None:
        return
    calls.add(1, {"tether.model": model})
    tokens = _instrument("tether.model.tokens")
    tokens.add(tokens_in, {"tether.model": model, "tether.token.type": "input"})
    tokens.add(tokens_out, {"tether.model": model, "tether.token.type": "output"})


def record_turn(agent: str, seconds: float, success: bool) -> None:
    """Record the duration of one request of ``agent``."""
    if _api() is None:
        return
    duration = _instrument("tether.turn.duration")
    if duration is not None:
        duration.record(seconds, {"tether.agent": agent, "tether.success": success})
