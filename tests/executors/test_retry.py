"""retry(): attempts never overlap, stop on success or abort, and a deaf executor cannot wedge them."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path

import pytest
from executor_helpers import is_dead, read_pids, wait_for_pids

from tether.errors import SpawnError
from tether.executors import (
    ExecutorUnsettledError,
    ProcessRequest,
    ProcessResult,
    RetryOutcome,
    SubprocessExecutor,
    retry,
    settle_with_budget,
)


def request(tmp_path: Path, command: str | list[str], **fields: object) -> ProcessRequest:
    return ProcessRequest.model_validate({"node": "job", "command": command, "cwd": tmp_path, **fields})


def locking_script(tmp_path: Path) -> str:
    """Takes an exclusive lock (held on by a TERM-ignoring grandchild too) or fails loudly."""
    return textwrap.dedent(
        f"""
        import fcntl, os, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        fd = os.open({str(tmp_path / "lock")!r}, os.O_CREAT | os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with open({str(tmp_path / "log")!r}, "a") as log:
                log.write("BUSY\\n")
            print("lock is held by a live previous attempt", file=sys.stderr)
            sys.exit(99)
        with open({str(tmp_path / "log")!r}, "a") as log:
            log.write(f"locked {{os.getpid()}}\\n")
        child = subprocess.Popen(["sleep", "100"], pass_fds=[fd])  # inherits the lock and SIG_IGN
        with open({str(tmp_path / "pids")!r}, "a") as pids:
            pids.write(f"{{os.getpid()}}\\n{{child.pid}}\\n")
        time.sleep(100)
        """
    )


async def test_retries_never_overlap_even_when_attempts_ignore_sigterm(tmp_path: Path) -> None:
    executor = SubprocessExecutor(grace=0.1, settle_timeout=3.0)
    req = request(tmp_path, locking_script(tmp_path), runtime="python", timeout=0.3)
    outcome = await retry(executor, req, retries=2)
    assert len(outcome.attempts) == 3
    assert all(a.timed_out and a.group_killed and not a.passed for a in outcome.attempts)
    log = (tmp_path / "log").read_text().split("\n")
    assert "BUSY" not in log
    assert sum(line.startswith("locked") for line in log) == 3
    pids = read_pids(tmp_path / "pids")
    assert len(pids) == 6 and all(is_dead(pid) for pid in pids)


async def test_the_lock_does_detect_overlapping_attempts(tmp_path: Path) -> None:
    """Control for the test above: two attempts alive at once do collide on the lock."""
    executor = SubprocessExecutor(grace=0.1)
    req = request(tmp_path, locking_script(tmp_path), runtime="python", timeout=0.5)
    first = asyncio.create_task(executor.execute(req))
    await wait_for_pids(tmp_path / "pids", 2)
    second = await executor.execute(req)
    await first
    assert second.exit_code == 99
    assert "BUSY" in (tmp_path / "log").read_text()


async def test_retry_stops_at_the_first_passing_attempt(executor: SubprocessExecutor, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    command = f"echo x >> {counter}; [ $(wc -l < {counter}) -ge 3 ] && exit 0; exit 1"
    outcome = await retry(executor, request(tmp_path, command), retries=5)
    assert [a.passed for a in outcome.attempts] == [False, False, True]
    assert outcome.final.passed and outcome.passed
    assert len(counter.read_text().split()) == 3


async def test_retry_exhausts_its_budget_and_reports_every_attempt(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    outcome = await retry(
        executor, request(tmp_path, "echo fail; exit 4", capture={"stdout": "fields.o"}), retries=2
    )
    assert len(outcome.attempts) == 3
    assert [a.exit_code for a in outcome.attempts] == [4, 4, 4]
    assert not outcome.passed and outcome.final is outcome.attempts[-1]
    assert RetryOutcome.model_validate_json(outcome.model_dump_json()) == outcome


async def test_no_retries_means_one_attempt(executor: SubprocessExecutor, tmp_path: Path) -> None:
    outcome = await retry(executor, request(tmp_path, "exit 1"))
    assert len(outcome.attempts) == 1


class CountingExecutor:
    def __init__(self, inner: SubprocessExecutor) -> None:
        self.inner = inner
        self.calls = 0

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        self.calls += 1
        return await self.inner.execute(request, abort)


async def test_spawn_failures_are_raised_and_not_retried(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    counting = CountingExecutor(executor)
    with pytest.raises(SpawnError):
        await retry(counting, request(tmp_path, ["no-such-binary-for-tether"]), retries=3)
    assert counting.calls == 1


async def test_an_abort_stops_the_attempt_and_further_retries(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    command = f"trap '' TERM; sleep 100 & echo $! >> {pids_file}; echo $$ >> {pids_file}; wait"
    abort = asyncio.Event()
    task = asyncio.create_task(retry(executor, request(tmp_path, command), retries=5, abort=abort))
    pids = await wait_for_pids(pids_file, 2)
    abort.set()
    outcome = await asyncio.wait_for(task, 5)
    assert len(outcome.attempts) == 1 and outcome.final.aborted
    assert all(is_dead(pid) for pid in pids)


async def test_an_already_set_abort_runs_nothing(executor: SubprocessExecutor, tmp_path: Path) -> None:
    abort = asyncio.Event()
    abort.set()
    outcome = await retry(executor, request(tmp_path, f"touch {tmp_path / 'ran'}"), retries=3, abort=abort)
    assert len(outcome.attempts) == 1 and outcome.final.aborted
    assert not (tmp_path / "ran").exists()


class DeafExecutor:
    """Ignores its abort and its request's timeout entirely (but can be cancelled)."""

    def __init__(self) -> None:
        self.calls = 0
        self.cancelled = 0

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        self.calls += 1
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


async def test_an_executor_that_ignores_abort_cannot_wedge_retry_beyond_the_budget(tmp_path: Path) -> None:
    deaf = DeafExecutor()
    started = time.monotonic()
    outcome = await retry(deaf, request(tmp_path, "true", timeout=0.2), retries=1, budget=0.3)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 30  # 2 x (timeout + budget), never the executor's 100 s
    assert deaf.calls == 2
    assert all(a.abandoned and a.timed_out and not a.passed for a in outcome.attempts)
    await asyncio.sleep(0)
    assert deaf.cancelled == 2


async def test_the_budget_also_bounds_a_caller_abort(tmp_path: Path) -> None:
    deaf = DeafExecutor()
    abort = asyncio.Event()
    asyncio.get_running_loop().call_later(0.1, abort.set)
    started = time.monotonic()
    outcome = await retry(deaf, request(tmp_path, "true"), retries=3, abort=abort, budget=0.2)
    assert time.monotonic() - started < 1.5
    assert len(outcome.attempts) == 1
    assert outcome.final.abandoned and outcome.final.aborted and not outcome.final.timed_out


class AbortOnlyExecutor:
    """Honours the abort event but never enforces the request's timeout itself."""

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        assert abort is not None
        await abort.wait()
        return ProcessResult.unstarted(request, aborted=True)


async def test_the_retry_timeout_backstop_reports_a_timeout(tmp_path: Path) -> None:
    outcome = await retry(AbortOnlyExecutor(), request(tmp_path, "true", timeout=0.05), retries=1)
    assert len(outcome.attempts) == 2
    assert all(a.timed_out and not a.aborted and not a.abandoned for a in outcome.attempts)


class RequestOnlyExecutor:
    """Declares only ``execute(request)``: no abort parameter at all."""

    def __init__(self, inner: SubprocessExecutor) -> None:
        self.inner = inner
        self.calls = 0

    async def execute(self, request: ProcessRequest) -> ProcessResult:
        self.calls += 1
        return await self.inner.execute(request)


async def test_an_executor_declaring_only_execute_request_keeps_working(
    executor: SubprocessExecutor, tmp_path: Path
) -> None:
    plain = RequestOnlyExecutor(executor)
    outcome = await retry(plain, request(tmp_path, "exit 3"), retries=1)
    assert plain.calls == 2 and [a.exit_code for a in outcome.attempts] == [3, 3]
    passed = await retry(plain, request(tmp_path, "exit 0"))
    assert passed.passed


async def test_a_request_only_executor_still_fails_on_timeout(tmp_path: Path) -> None:
    deaf = DeafExecutor()

    class Plain:
        async def execute(self, request: ProcessRequest) -> ProcessResult:
            return await deaf.execute(request)

    outcome = await retry(Plain(), request(tmp_path, "true", timeout=0.1), budget=0.1)
    assert outcome.final.timed_out and outcome.final.abandoned and not outcome.passed


async def test_settle_with_budget() -> None:
    abort = asyncio.Event()

    async def value() -> int:
        return 7

    async def boom() -> int:
        raise SpawnError("nope")

    assert await settle_with_budget(value(), abort, 0.1) == 7
    with pytest.raises(SpawnError):
        await settle_with_budget(boom(), abort, 0.1)
    abort.set()
    started = time.monotonic()
    with pytest.raises(ExecutorUnsettledError, match="did not settle"):
        await settle_with_budget(asyncio.sleep(100), abort, 0.1)
    assert time.monotonic() - started < 1


def test_retry_rejects_negative_retries_and_budgets() -> None:
    with pytest.raises(ValueError, match="retries"):
        asyncio.run(retry(DeafExecutor(), request(Path("/tmp"), "true"), retries=-1))
    with pytest.raises(ValueError, match="budget"):
        asyncio.run(retry(DeafExecutor(), request(Path("/tmp"), "true"), budget=-1))
