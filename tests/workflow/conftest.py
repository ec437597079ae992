"""Fixtures for the workflow tests: a store on every backend, real executors, a scratch workspace."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))

from store_backends import BACKENDS, Backend, open_backend

from tether.executors import SubprocessExecutor
from tether.testing import FakeClock


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> AsyncIterator[Backend]:
    b = await open_backend(request.param, clock, tmp_path)
    try:
        yield b
    finally:
        await b.aclose()


@pytest.fixture
def executor() -> SubprocessExecutor:
    """A real executor with a short SIGTERM->SIGKILL grace."""
    return SubprocessExecutor(grace=0.2, settle_timeout=3.0)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path
