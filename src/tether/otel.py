"""The OpenTelemetry API, read at its first use: ``opentelemetry.trace`` for :mod:`tether.tracing`,
``opentelemetry.metrics`` for :mod:`tether.metrics`. Importing it takes tens of milliseconds that
``import tether`` (and so every CLI command) need not pay; without the otel extra it is None and
every hook is a no-op."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

__all__ = ["otel_api"]


@cache
def otel_api(part: str) -> Any:
    """``opentelemetry.<part>`` (``"trace"`` or ``"metrics"``), imported once; None when the otel
    extra is not installed."""
    try:
        return importlib.import_module(f"opentelemetry.{part}")
    except ImportError:
        return None
