"""Provider failures map to the right ModelError kind; retry-after becomes reset_at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tether.errors import ModelError
from tether.models._errors import classify, error_details, parse_retry_after

CASES = [
    (429, "Rate limit reached for gpt-4o on tokens per min", "requests", "rate_limit_exceeded", "rate"),
    (
        429,
        "You exceeded your current quota, please check your plan",
        "insufficient_quota",
        "insufficient_quota",
        "quota",
    ),
    (429, "Number of request tokens has exceeded your per-minute rate limit", "rate_limit_error", None, "rate"),
    (402, "Insufficient credits", None, None, "quota"),
    (500, "The server had an error", "server_error", None, "unknown"),
    (502, "Bad gateway", None, None, "overload"),
    (503, "Service unavailable", None, None, "overload"),
    (529, "Overloaded", "overloaded_error", None, "overload"),
    (200, "Overloaded", "overloaded_error", None, "overload"),
    (401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key", "auth"),
    (401, "invalid x-api-key", "authentication_error", None, "auth"),
    (
        403,
        "Your API key does not have permission to use the specified resource.",
        "permission_error",
        None,
        "entitlement",
    ),
    (403, "Forbidden", None, None, "auth"),
    (400, "Invalid value for 'temperature'", "invalid_request_error", None, "invalid"),
    (
        400,
        "This model's maximum context length is 128000 tokens.",
        "invalid_request_error",
        "context_length_exceeded",
        "context",
    ),
    (400, "prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error", None, "context"),
    (400, "Your credit balance is too low to access the Anthropic API.", "invalid_request_error", None, "quota"),
    (
        400,
        "The response was filtered due to the prompt triggering content management policy",
        None,
        "content_filter",
        "content",
    ),
    (404, "The model `gpt-9` does not exist", "invalid_request_error", "model_not_found", "model"),
    (404, "model: claude-9", "not_found_error", None, "model"),
    (408, "Request timeout", None, None, "timeout"),
    (413, "Request exceeds the maximum size", "request_too_large", None, "context"),
    (422, "Unprocessable", None, None, "invalid"),
    (499, "Client closed request", None, None, "aborted"),
    (504, "Gateway timeout", None, None, "timeout"),
]


@pytest.mark.parametrize(("status", "message", "type_", "code", "kind"), CASES)
def test_classify(status: int, message: str, type_: str | None, code: str | None, kind: str) -> None:
    assert classify(status, message, type_, code) == kind


def test_retryable_follows_the_kind() -> None:
    assert ModelError("x", kind=classify(429)).retryable
    assert ModelError("x", kind=classify(500)).retryable
    assert not ModelError("x", kind=classify(401)).retryable
    assert not ModelError("x", kind=classify(400)).retryable


def test_error_details_of_both_body_shapes() -> None:
    assert error_details({"message": "m", "type": "t", "code": "c"}) == ("m", "t", "c")
    assert error_details({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}) == (
        "busy",
        "overloaded_error",
        None,
    )
    assert error_details("plain") == ("plain", None, None)
    assert error_details(None) == ("", None, None)


def test_retry_after() -> None:
    now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "7"}, now) == now + timedelta(seconds=7)
    assert parse_retry_after({"retry-after-ms": "1500"}, now) == now + timedelta(milliseconds=1500)
    assert parse_retry_after({"retry-after": "Mon, 05 Jan 2026 09:01:00 GMT"}, now) == now + timedelta(minutes=1)
    assert parse_retry_after({"retry-after": "soon"}, now) is None
    assert parse_retry_after({}, now) is None
    assert parse_retry_after(None, now) is None
