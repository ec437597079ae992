"""Bounded retries with exponential backoff and jitter, for any :class:`~tether.models.types.Model`.

:class:`RetryingModel` wraps a model: a retryable :class:`~tether.errors.ModelError` (per the
error's own ``retryable``) is retried up to ``attempts`` attempts in all; a non-retryable one raises
at once. The wait before attempt ``n + 1`` is ``min(max_delay, base_delay * 2 ** (n - 1))``
scaled by a jitter factor in ``[0.5, 1.0)``; when the provider said when to come back
(``reset_at``, from ``retry-after``) and that is at most ``max_reset_wait`` seconds away, that wait
is used instead; when it is further away the error is raised at once (the engine's own retry
ladder handles long waits). The attempt count lands on ``ModelResponse.attempts`` and
``ModelError.attempts``. ``sleep``, ``random`` and ``now`` are injectable so that tests never wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random as _random
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

from tether.errors import ModelError
from tether.models.types import Capabilities, Model, ModelRequest, ModelResponse, StreamChunk

__all__ = ["DEFAULT_ATTEMPTS", "RetryingModel"]

DEFAULT_ATTEMPTS = 3


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RetryingModel:
    """Wrap ``model`` so that each call is retried on retryable errors (see the module doc).

    A stream is retried only when it fails before its first chunk; once text has been yielded an
    error propagates (the consumer has already seen part of the reply).
    """

    def __init__(
        self,
        model: Model,
        attempts: int = DEFAULT_ATTEMPTS,
        *,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
        max_reset_wait: float = 30.0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        random: Callable[[], float] = _random.random,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.inner = model
        self.attempts = attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_reset_wait = max_reset_wait
        self._sleep = sleep
        self._random = random
        self._now = now

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def delay(self, attempt: int, error: ModelError) -> float | None:
        """Seconds to wait after failed attempt ``attempt`` (1-based), or ``None`` to give up."""
        if not error.retryable or attempt >= self.attempts:
            return None
        if error.reset_at is not None:
            wait = (error.reset_at - self._now()).total_seconds()
            if wait > self.max_reset_wait:
                return None
            return max(wait, 0.0)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return float(backoff * (0.5 + self._random() / 2))

    async def _pause(self, attempt: int, error: ModelError) -> None:
        wait = self.delay(attempt, error)
        if wait is None:
            error.attempts = attempt
            raise error
        await self._sleep(wait)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Call the wrapped model, retrying retryable failures."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self.inner.complete(request)
            except ModelError as error:
                await self._pause(attempt, error)
                continue
            return dataclasses.replace(response, attempts=attempt)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream from the wrapped model, retrying failures that happen before the first chunk."""
        attempt = 0
        while True:
            attempt += 1
            started = False
            try:
                async for chunk in self.inner.stream(request):
                    started = True
                    if chunk.done and chunk.response is not None:
                        chunk = dataclasses.replace(
                            chunk, response=dataclasses.replace(chunk.response, attempts=attempt)
                        )
                    yield chunk
                return
            except ModelError as error:
                if started:
                    error.attempts = attempt
                    raise
                await self._pause(attempt, error)

    async def aclose(self) -> None:
        """Close the wrapped model's client, when it has one."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
