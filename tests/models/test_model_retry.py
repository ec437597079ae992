"""RetryingModel: bounded retries with backoff, for retryable errors only, attempts recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from tether.errors import ModelError
from tether.models import Capabilities, ModelRequest, ModelResponse, RetryingModel, StreamChunk

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
REQUEST = ModelRequest(call="speak")


class Flaky:
    """Fails with the given errors, then answers."""

    def __init__(self, *errors: ModelError, fail_mid_stream: bool = False) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.fail_mid_stream = fail_mid_stream

    @property
    def name(self) -> str:
        return "test:flaky"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return ModelResponse(text="ok")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        if self.fail_mid_stream:
            yield StreamChunk(delta="partial")
        if self.errors:
            raise self.errors.pop(0)
        yield StreamChunk(delta="ok")
        yield StreamChunk(done=True, response=ModelResponse(text="ok"))


def _retrying(model: Flaky, sleeps: list[float], attempts: int = 3) -> RetryingModel:
    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return RetryingModel(model, attempts, sleep=sleep, random=lambda: 0.0, now=lambda: NOW)


async def test_retryable_errors_are_retried_with_exponential_backoff(sleeps: list[float]) -> None:
    inner = Flaky(ModelError("busy", kind="overload"), ModelError("slow", kind="rate"))
    response = await _retrying(inner, sleeps).complete(REQUEST)
    assert response.text == "ok"
    assert response.attempts == 3
    assert inner.calls == 3
    assert sleeps == [0.25, 0.5]  # base 0.5 s, doubled, jitter factor 0.5 with random() == 0


async def test_attempts_are_bounded(sleeps: list[float]) -> None:
    inner = Flaky(*[ModelError("busy", kind="overload") for _ in range(5)])
    with pytest.raises(ModelError) as caught:
        await _retrying(inner, sleeps).complete(REQUEST)
    assert caught.value.attempts == 3
    assert inner.calls == 3
    assert len(sleeps) == 2


async def test_non_retryable_errors_raise_at_once(sleeps: list[float]) -> None:
    inner = Flaky(ModelError("bad key", kind="auth"))
    with pytest.raises(ModelError) as caught:
        await _retrying(inner, sleeps).complete(REQUEST)
    assert caught.value.kind == "auth"
    assert caught.value.attempts == 1
    assert inner.calls == 1
    assert sleeps == []


async def test_a_short_reset_at_is_honoured_and_a_long_one_gives_up(sleeps: list[float]) -> None:
    inner = Flaky(ModelError("slow down", kind="rate", reset_at=NOW + timedelta(seconds=4)))
    assert (await _retrying(inner, sleeps).complete(REQUEST)).attempts == 2
    assert sleeps == [4.0]
    sleeps.clear()
    inner = Flaky(ModelError("quota", kind="quota", reset_at=NOW + timedelta(hours=1)))
    with pytest.raises(ModelError) as caught:
        await _retrying(inner, sleeps).complete(REQUEST)
    assert caught.value.retryable and caught.value.attempts == 1
    assert sleeps == []


async def test_backoff_is_capped() -> None:
    retrying = RetryingModel(Flaky(), 10, max_delay=2.0, random=lambda: 0.999)
    error = ModelError("busy", kind="overload")
    assert [round(retrying.delay(n, error) or 0, 2) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 2.0, 2.0]
    assert retrying.delay(10, error) is None


async def test_streams_retry_only_before_the_first_chunk(sleeps: list[float]) -> None:
    inner = Flaky(ModelError("busy", kind="overload"))
    chunks = [c async for c in _retrying(inner, sleeps).stream(REQUEST)]
    assert chunks[-1].response is not None and chunks[-1].response.attempts == 2
    assert [c.delta for c in chunks if not c.done] == ["ok"]

    inner = Flaky(ModelError("busy", kind="overload"), fail_mid_stream=True)
    seen: list[str] = []
    with pytest.raises(ModelError) as caught:
        async for chunk in _retrying(inner, sleeps).stream(REQUEST):
            seen.append(chunk.delta)
    assert seen == ["partial"] and inner.calls == 1 and caught.value.attempts == 1


def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RetryingModel(Flaky(), 0)
