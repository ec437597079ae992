"""Shared fixtures: real model calls are blocked for the whole suite (only 127.0.0.1 gets through,
for the adapter tests' local provider server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tether.testing import FakeClock, block_network_models


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_network_models():
        yield


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2026-01-05T09:00:00Z")
