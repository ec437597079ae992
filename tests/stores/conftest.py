"""Fixtures for the store conformance suite: one ``backend`` per store implementation."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from backend_fixtures import backend as backend
from backend_fixtures import durable as durable
from store_backends import Backend

from tether.engine.core.session import Session
from tether.stores import Store
from tether.testing import FakeClock


@pytest.fixture
async def store(backend: Backend) -> Store:
    return await backend.make()


@pytest.fixture
def new_session(clock: FakeClock) -> Callable[..., Session]:
    """Build a valid, unsaved session document."""

    def build(agent: str = "support", **fields: Any) -> Session:
        return Session(id=str(uuid.uuid4()), agent=agent, created_at=clock.now(), **fields)

    return build
