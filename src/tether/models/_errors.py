"""Map provider failures (HTTP statuses, error bodies, SDK exceptions) to :class:`ModelError`.

The rules, in order:

- a provider error ``type`` the status alone cannot tell (Anthropic's ``overloaded_error`` can
  arrive inside a 200 stream) decides first;
- ``429`` is ``rate``, or ``quota`` when the body says ``insufficient_quota`` / "exceeded your
  current quota"; ``402`` is ``quota``;
- ``400``/``422`` are ``invalid``, or ``context`` when the message is about the context length,
  ``content`` when it is about a content policy, ``quota`` for an exhausted credit balance;
- ``401`` is ``auth``; ``403`` is ``entitlement`` when the body speaks of permission or access,
  else ``auth``; ``404`` is ``model``; ``408``/``504`` are ``timeout``; ``413`` is ``context``;
  ``499`` is ``aborted``;
- ``502``/``503``/``529`` are ``overload``; ``500`` and any other status are ``unknown``.

``reset_at`` comes from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date).

The configured API key never leaves in an error: :func:`scrub` replaces every occurrence of it in
the text a provider sent back (a provider or proxy that echoes the key would leak it into
exceptions, envelopes, the session's error log and the CLI otherwise).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

from tether.errors import ModelError, ModelErrorKind

__all__ = ["REDACTED", "classify", "error_details", "map_sdk_error", "parse_retry_after", "scrub"]

REDACTED = "[redacted]"
"""What an API key in a provider's error text is replaced with."""
MIN_SECRET_CHARS = 8
"""Shorter "keys" (placeholders such as ``not-needed`` are longer, but ``x`` is not) are not scrubbed:
replacing them would mangle ordinary words."""


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by :data:`REDACTED`."""
    if not secret or len(secret) < MIN_SECRET_CHARS:
        return text
    return text.replace(secret, REDACTED)

_CONTEXT_HINTS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "exceed context limit",
    "reduce the length",
)
_CONTENT_HINTS = ("content_filter", "content_policy", "content management policy", "safety system")
_QUOTA_HINTS = ("insufficient_quota", "exceeded your current quota", "credit balance", "billing_hard_limit")
_PERMISSION_HINTS = ("permission", "access", "entitle", "not allowed", "unsupported_country")
_TYPE_KINDS: dict[str, ModelErrorKind] = {
    "overloaded_error": "overload",
    "rate_limit_error": "rate",
    "authentication_error": "auth",
    "permission_error": "entitlement",
    "not_found_error": "model",
    "request_too_large": "context",
    "insufficient_quota": "quota",
    "context_length_exceeded": "context",
    "model_not_found": "model",
    "content_filter": "content",
}


def error_details(body: object) -> tuple[str, str | None, str | None]:
    """``(message, type, code)`` from an OpenAI- or Anthropic-shaped error body."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        message = body.get("message")
        kind = body.get("type")
        code = body.get("code")
        return (
            str(message) if message is not None else "",
            str(kind) if kind is not None else None,
            str(code) if code is not None else None,
        )
    if isinstance(body, str | bytes):
        return (body.decode(errors="replace") if isinstance(body, bytes) else body), None, None
    return "", None, None


def classify(
    status: int | None, message: str = "", error_type: str | None = None, error_code: str | None = None
) -> ModelErrorKind:
    """The :data:`~tether.errors.ModelErrorKind` of a provider failure."""
    text = " ".join(p for p in (message, error_type or "", error_code or "") if p).lower()
    for key in (error_code, error_type):
        if key and key in _TYPE_KINDS:
            return _TYPE_KINDS[key]
    if any(h in text for h in _QUOTA_HINTS):
        return "quota"
    if status == 429:
        return "rate"
    if status == 402:
        return "quota"
    if status in (400, 422) or (status is None and error_type == "invalid_request_error"):
        if any(h in text for h in _CONTEXT_HINTS):
            return "context"
        if any(h in text for h in _CONTENT_HINTS):
            return "content"
        return "invalid"
    simple: dict[int, ModelErrorKind] = {
        401: "auth",
        404: "model",
        408: "timeout",
        413: "context",
        499: "aborted",
        504: "timeout",
        502: "overload",
        503: "overload",
        529: "overload",
    }
    if status == 403:
        return "entitlement" if any(h in text for h in _PERMISSION_HINTS) else "auth"
    if status is not None and status in simple:
        return simple[status]
    return "unknown"


def parse_retry_after(headers: Mapping[str, str] | None, now: datetime | None = None) -> datetime | None:
    """When the provider said to retry, from ``retry-after-ms`` or ``retry-after``; else ``None``."""
    if not headers:
        return None
    now = now or datetime.now(UTC)
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return now + timedelta(milliseconds=float(lower["retry-after-ms"]))
        value = lower.get("retry-after")
        if value is None:
            return None
        try:
            return now + timedelta(seconds=float(value))
        except ValueError:
            when = parsedate_to_datetime(value)
            return when if when.tzinfo else when.replace(tzinfo=UTC)
    except (ValueError, TypeError, OverflowError):
        return None


def _headers(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return dict(headers.items()) if headers is not None else None


def map_sdk_error(exc: BaseException, sdk: Any, provider: str, *, secret: str | None = None) -> ModelError:
    """Turn an exception raised by the ``openai`` or ``anthropic`` SDK into a :class:`ModelError`.

    ``sdk`` is the imported SDK module (its exception classes share names); ``secret`` (the API
    key) is scrubbed from the provider's text.
    """
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        return ModelError(f"{provider}: the call was aborted", kind="aborted", provider=provider)
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(f"{provider}: the request timed out", kind="timeout", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(f"{provider}: connection failed: {scrub(str(exc), secret)}", kind="network",
                          provider=provider)
    status = getattr(exc, "status_code", None)
    message, error_type, error_code = error_details(getattr(exc, "body", None))
    message = scrub(message or str(exc), secret)
    kind = classify(status if isinstance(status, int) else None, message, error_type, error_code)
    return ModelError(
        f"{provider}: {message}" + (f" (HTTP {status})" if status else ""),
        kind=kind,
        status=status if isinstance(status, int) else None,
        reset_at=parse_retry_after(_headers(exc)),
        provider=provider,
    )
