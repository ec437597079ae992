"""Shared fixtures: real model calls are blocked for the whole suite (only 127.0.0.1 gets through,
for the adapter tests' local provider server)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tether.cel import cel_env
from tether.testing import FakeClock, block_network_models

# Property tests run with a fixed seed (derandomized) so CI is repeatable; no deadline, because the
# machine is shared and slow runs are not failures.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

# cel-python raises the interpreter's recursion limit when its environment is made (tether makes it
# with the first CEL condition it compiles). Made inside a property test, that change makes
# Hypothesis fail the test ("the recursion limit will not be reset"), so it is made up front.
cel_env()

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so would
# every `tether chat` it spawns: the Ctrl-C tests need Python's default KeyboardInterrupt (children
# get the default disposition back at exec, since only an ignored signal is inherited).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The suite caches bytecode even where PYTHONDONTWRITEBYTECODE is set (as on some CI images): else
# pytest re-rewrites the asserts of every test module on every run, and each of the few hundred
# Python processes the tests spawn (`tether chat`, `tether serve`, store and runtime workers)
# compiles tether and its dependencies from source again (~0.4 s of CPU each). The caches are
# gitignored `__pycache__` directories.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test has its own node id: pytest-xdist (``scripts/test`` runs ``-n``) schedules by node
    id, and would silently run one test of several that share one."""
    seen: set[str] = set()
    shared = sorted({item.nodeid for item in items if item.nodeid in seen or seen.add(item.nodeid)})
    if shared:
        raise pytest.UsageError(f"tests sharing a node id (only one would run under -n): {shared[:5]}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Drop the PostgreSQL schemas the store tests kept for reuse (``tests/stores/store_backends.py``)."""
    backends = sys.modules.get("store_backends")
    if backends is not None:
        backends.SCHEMAS.drop_all()


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_network_models():
        yield


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2026-01-05T09:00:00Z")
