"""The ``backend`` (every store: memory, sqlite, postgres) and ``durable`` (the stores that persist)
fixtures, shared by the store, runtime and workflow suites: a conftest imports them by name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_backends import BACKENDS, DURABLE, Backend, open_backend

from tether.testing import FakeClock

__all__ = ["backend", "durable"]


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> AsyncIterator[Backend]:
    b = await open_backend(request.param, clock, tmp_path)
    try:
        yield b
    finally:
        await b.aclose()


@pytest.fixture(params=DURABLE)
async def durable(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> AsyncIterator[Backend]:
    b = await open_backend(request.param, clock, tmp_path)
    try:
        yield b
    finally:
        await b.aclose()
