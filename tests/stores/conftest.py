"""Fixtures for the store conformance suite: one ``backend`` per store implementation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from store_backends import BACKENDS, DURABLE, Backend, open_backend

from tether.engine.session import Session
from tether.stores import Store
from tether.testing import FakeClock


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


@pytest.fixture
async def store(backend: Backend) -> Store:
    return await backend.make()


@pytest.fixture
def new_session(clock: FakeClock) -> Callable[..., Session]:
    """Build a valid, unsaved session document."""

    def build(agent: str = "support", **fields: Any) -> Session:
        return Session(id=str(uuid.uuid4()), agent=agent, created_at=clock.now(), **fields)

    return build
