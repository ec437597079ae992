"""Fixtures for the workflow tests: a store on every backend, real executors, a scratch workspace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))

from backend_fixtures import backend as backend
from backend_fixtures import durable as durable

from tether.executors import SubprocessExecutor


@pytest.fixture
def executor() -> SubprocessExecutor:
    """A real executor with a short SIGTERM->SIGKILL grace."""
    return SubprocessExecutor(grace=0.2, settle_timeout=3.0)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path
