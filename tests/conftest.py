"""Shared fixtures."""

from __future__ import annotations

import pytest

from tether.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2026-01-05T09:00:00Z")
