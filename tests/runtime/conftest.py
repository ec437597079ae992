"""Fixtures for the runtime tests: a store on every backend (memory, sqlite, postgres) behind a spy.

PostgreSQL cases reuse the store suite's helpers (``tests/stores/store_backends.py``): they skip,
saying why, when ``TETHER_TEST_POSTGRES_URL`` is unset or the server is unreachable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))

from backend_fixtures import backend as backend
from backend_fixtures import durable as durable
from runtime_helpers import SpyStore
from store_backends import Backend

from tether import Agent
from tether.runtime import Runtime
from tether.testing import FakeClock


@pytest.fixture
async def spy(backend: Backend) -> SpyStore:
    return SpyStore(await backend.make())


@pytest.fixture
def make_runtime(spy: SpyStore, clock: FakeClock) -> Callable[..., Runtime]:
    def build(agents: Agent | list[Agent], **options: Any) -> Runtime:
        return Runtime(agents, store=spy, clock=clock, **options)

    return build
