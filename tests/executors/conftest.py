"""Fixtures for the executor tests: real processes, and a guard that none are left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

import pytest
from executor_helpers import live_descendants

import tether.executors.executor as executor_module
from tether.executors import SubprocessExecutor, live_groups
from tether.executors.groups import group_alive


@pytest.fixture
def executor() -> SubprocessExecutor:
    """An executor with a short SIGTERM->SIGKILL grace, so kill tests stay fast."""
    return SubprocessExecutor(grace=0.2, settle_timeout=3.0)


@pytest.fixture(autouse=True)
def no_stray_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Fail any test that leaves a live descendant or a live executor process group behind."""
    me = os.getpid()
    before = live_descendants(me)
    spawned: list[int] = []
    register = executor_module.register_group

    def recording_register(pgid: int, node: str) -> None:
        spawned.append(pgid)
        register(pgid, node)

    monkeypatch.setattr(executor_module, "register_group", recording_register)
    yield spawned
    deadline = time.monotonic() + 1.0
    while True:
        strays = live_descendants(me) - before
        groups = [pgid for pgid in spawned if group_alive(pgid)]
        if not (strays or groups) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for pid in strays:  # clean up so one failure does not cascade
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    registered = live_groups()
    assert not strays, f"test left live descendant processes behind: {sorted(strays)}"
    assert not groups, f"test left live executor process groups behind: {groups}"
    assert not registered, f"executor registry still lists groups: {registered}"
