"""Shared fixtures: real model calls are blocked for the whole suite (only 127.0.0.1 gets through,
for the adapter tests' local provider server)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tether.testing import FakeClock, block_network_models

# Property tests run with a fixed seed (derandomized) so CI is repeatable; no deadline, because the
# machine is shared and slow runs are not failures.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so would
# every `tether chat` it spawns: the Ctrl-C tests need Python's default KeyboardInterrupt (children
# get the default disposition back at exec, since only an ignored signal is inherited).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_network_models():
        yield


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2026-01-05T09:00:00Z")
