"""Timeouts, aborts, cancellation and the shutdown sweep: afterwards nothing the command started runs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from executor_helpers import is_dead, read_pids, wait_for_pids

import tether.executors.executor as executor_module
from tether.errors import ExecutorError
from tether.executors import ProcessRequest, SubprocessExecutor, kill_all_live_groups, live_groups
from tether.executors.groups import unregister_group


def stubborn(pids: Path) -> str:
    """A shell that ignores SIGTERM and leaves two TERM-ignoring grandchildren; writes all three pids."""
    return (
        f"trap '' TERM; sleep 100 & echo $! >> {pids}; sleep 100 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    )


async def registered_group(within: float = 10.0) -> dict[int, str]:
    """The registered groups, once there is one (registration follows the spawn's return)."""
    deadline = time.monotonic() + within
    while not live_groups() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return live_groups()


def request(tmp_path: Path, command: str, **fields: object) -> ProcessRequest:
    return ProcessRequest.model_validate({"node": "slow", "command": command, "cwd": tmp_path, **fields})


async def test_timeout_kills_a_term_ignoring_command_and_its_grandchildren(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    started = time.monotonic()
    result = await executor.execute(request(tmp_path, stubborn(pids_file), timeout=0.3))
    elapsed = time.monotonic() - started
    pids = read_pids(pids_file)
    assert len(pids) == 3
    assert all(is_dead(pid) for pid in pids), [(pid, is_dead(pid)) for pid in pids]
    assert result.timed_out and not result.aborted and not result.passed
    assert result.group_killed
    assert result.exit_code is None and result.signal == signal.SIGKILL  # TERM ignored -> escalated
    assert 0.5 <= elapsed < 30  # timeout + grace, then settled: never the command's 100 s (loose: CI may be loaded)
    assert live_groups() == {}


async def test_timeout_of_a_cooperative_command_needs_only_sigterm(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    result = await executor.execute(request(tmp_path, "sleep 100", timeout=0.2))
    assert result.timed_out and result.signal == signal.SIGTERM
    assert result.duration < 30  # SIGTERM ended it, not the command's 100 s


async def test_a_child_that_dies_on_sigterm_still_has_its_surviving_grandchildren_killed(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    command = f"(trap '' TERM; exec sleep 100) & echo $! >> {pids_file}; echo $$ >> {pids_file}; sleep 100"
    result = await executor.execute(request(tmp_path, command, timeout=0.3))
    grandchild, child = read_pids(pids_file)
    assert result.timed_out and result.signal == signal.SIGTERM  # the shell itself obeyed SIGTERM
    assert is_dead(child) and is_dead(grandchild)  # the TERM-ignoring grandchild got SIGKILL
    assert result.duration >= 0.45  # it waited out the grace for the grandchild


async def test_abort_mid_run_kills_the_whole_group(executor: SubprocessExecutor, tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    abort = asyncio.Event()
    task = asyncio.create_task(executor.execute(request(tmp_path, stubborn(pids_file)), abort))
    pids = await wait_for_pids(pids_file, 3)
    assert not any(is_dead(pid) for pid in pids)
    abort.set()
    result = await asyncio.wait_for(task, 5)
    assert result.aborted and not result.timed_out and not result.passed
    assert all(is_dead(pid) for pid in pids)


async def test_an_unused_abort_event_changes_nothing(executor: SubprocessExecutor, tmp_path: Path) -> None:
    result = await executor.execute(request(tmp_path, "exit 0"), asyncio.Event())
    assert result.passed and not result.aborted


async def test_grandchildren_left_behind_by_a_clean_exit_are_killed_before_settling(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    command = f"(trap '' TERM; exec sleep 100) & echo $! >> {pids_file}; echo done"
    result = await executor.execute(request(tmp_path, command, capture={"stdout": "fields.o"}, timeout=10))
    (orphan,) = read_pids(pids_file)
    assert is_dead(orphan)
    assert result.passed and result.exit_code == 0 and result.group_killed
    assert result.fields["o"] == "done\n"
    assert result.duration < 30  # the orphan's 100 s sleep was not waited for


async def test_cancelling_the_caller_kills_and_reaps_the_group(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    task = asyncio.create_task(executor.execute(request(tmp_path, stubborn(pids_file))))
    pids = await wait_for_pids(pids_file, 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(is_dead(pid) for pid in pids)
    assert live_groups() == {}


async def test_a_group_that_survives_sigkill_is_a_loud_error_and_stays_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor_module, "group_alive", lambda pgid: True)  # simulate an unkillable member
    executor = SubprocessExecutor(grace=0.05, settle_timeout=0.1)
    with pytest.raises(ExecutorError, match="still has live members"):
        await executor.execute(request(tmp_path, "sleep 100", timeout=0.1))
    (pgid,) = live_groups()
    assert is_dead(pgid)  # it really is gone; only the simulated check said otherwise
    unregister_group(pgid)


async def test_the_sweep_kills_live_groups_in_process(executor: SubprocessExecutor, tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    task = asyncio.create_task(executor.execute(request(tmp_path, stubborn(pids_file))))
    pids = await wait_for_pids(pids_file, 3)
    (pgid,) = await registered_group()  # the child may write its pids before execute registers it
    assert kill_all_live_groups() == [pgid]
    assert live_groups() == {}
    result = await asyncio.wait_for(task, 5)
    assert result.signal == signal.SIGKILL and not result.passed
    assert all(is_dead(pid) for pid in pids)


SWEEP_SCRIPT = textwrap.dedent(
    """
    import asyncio, atexit, sys
    from pathlib import Path
    from tether.executors import ProcessRequest, SubprocessExecutor, kill_all_live_groups, live_groups

    workspace, command, keep_sweep = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "sweep"
    if not keep_sweep:
        atexit.unregister(kill_all_live_groups)
    loop = asyncio.new_event_loop()
    request = ProcessRequest(node="n", command=command, cwd=workspace)
    task = loop.create_task(SubprocessExecutor().execute(request))

    async def spawned() -> None:
        pids = workspace / "pids"
        while not live_groups() or len(pids.read_text().split() if pids.exists() else []) < 3:
            await asyncio.sleep(0.01)

    loop.run_until_complete(spawned())
    sys.exit(0)  # the execute task is never cancelled: only the atexit sweep can stop the group
    """
)


def _exit_with_live_group(workspace: Path, mode: str) -> list[int]:
    workspace.mkdir()
    command = stubborn(workspace / "pids")
    subprocess.run(
        [sys.executable, "-c", SWEEP_SCRIPT, str(workspace), command, mode],
        check=True,
        timeout=30,
        capture_output=True,
    )
    return read_pids(workspace / "pids")


def test_the_atexit_sweep_kills_groups_still_live_at_interpreter_exit(tmp_path: Path) -> None:
    pids = _exit_with_live_group(tmp_path / "swept", "sweep")
    deadline = time.monotonic() + 2
    while not all(is_dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(is_dead(pid) for pid in pids)


def test_without_the_sweep_the_group_would_outlive_the_interpreter(tmp_path: Path) -> None:
    """Control for the test above: the sweep, not interpreter exit, is what kills the group."""
    pids = _exit_with_live_group(tmp_path / "unswept", "no-sweep")
    try:
        time.sleep(0.1)
        assert not any(is_dead(pid) for pid in pids)
    finally:
        os.killpg(os.getpgid(pids[0]), signal.SIGKILL)
    deadline = time.monotonic() + 2
    while not all(is_dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)


async def test_a_caller_cancelled_while_the_spawn_returns_leaks_no_process(
    executor: SubprocessExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids_file = tmp_path / "pids"
    spawn = SubprocessExecutor._spawn
    started = asyncio.Event()

    async def slow_return(self: SubprocessExecutor, request: ProcessRequest) -> object:
        spawned = await spawn(self, request)
        started.set()
        await asyncio.sleep(1.0)  # the child runs; execute has not registered it yet
        return spawned

    monkeypatch.setattr(SubprocessExecutor, "_spawn", slow_return)
    task = asyncio.create_task(executor.execute(request(tmp_path, stubborn(pids_file))))
    await asyncio.wait_for(started.wait(), 10)
    pids = await wait_for_pids(pids_file, 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(is_dead(pid) for pid in pids)
    assert live_groups() == {}
