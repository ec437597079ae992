"""The stray-process guard itself: it sees descendants and every group the executor spawned."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from executor_helpers import is_dead, live_descendants

from tether.executors import ProcessRequest, SubprocessExecutor


def test_live_descendants_sees_a_child_and_is_dead_sees_it_go() -> None:
    child = subprocess.Popen(["sleep", "100"])
    try:
        assert child.pid in live_descendants(os.getpid())
        assert not is_dead(child.pid)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in live_descendants(os.getpid())
    assert is_dead(child.pid)


async def test_the_guard_records_every_spawned_group(
    executor: SubprocessExecutor, tmp_path: Path, no_stray_processes: list[int]
) -> None:
    await executor.execute(ProcessRequest(node="n", command="exit 0", cwd=tmp_path))
    await executor.execute(ProcessRequest(node="n", command="exit 1", cwd=tmp_path))
    assert len(no_stray_processes) == 2
    assert all(is_dead(pgid) for pgid in no_stray_processes)
