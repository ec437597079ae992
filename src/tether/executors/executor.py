"""The :class:`Executor` seam and :class:`SubprocessExecutor`, which runs real processes.

Lifecycle of one :meth:`SubprocessExecutor.execute`:

1. The request's ``cwd`` must be a directory and the argv must start; otherwise
   :class:`~tether.errors.SpawnError` (naming the node and the command) is raised — a spawn
   failure is never reported as an exit code. An attempt whose abort event is already set is
   not spawned at all (``aborted=True``, ``exit_code=None``).
2. The process starts in its own session and process group (``start_new_session=True``) with
   stdin at ``/dev/null``; the group is registered for the shutdown sweep
   (:mod:`tether.executors.groups`). Both output pipes are read concurrently to the end.
3. On ``timeout`` or abort, the whole group gets SIGTERM, then SIGKILL after ``grace``
   seconds (default 2.0). When the direct child exits by itself but members of its group are
   still running (background grandchildren), they are terminated the same way.
4. The attempt settles only once the direct child has been reaped **and** the group has no
   running member, so a caller can never have two live processes for one node. If the group
   survives SIGKILL for ``settle_timeout`` seconds, :class:`~tether.errors.ExecutorError` is
   raised and the group stays registered for the sweep.
5. If the awaiting task is cancelled, the group is SIGKILLed and reaped before the
   cancellation propagates.

POSIX only (process groups, ``os.killpg``). A process that moves itself into another session
(``setsid``) escapes the group and therefore the kill; the executor then stops waiting for its
output pipes after ``settle_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from tether.errors import ExecutorError, SpawnError
from tether.executors.capture import CaptureProtocol
from tether.executors.groups import group_alive, register_group, unregister_group
from tether.executors.request import ProcessRequest, build_env, resolve_argv
from tether.executors.result import ProcessRecord, ProcessResult

__all__ = ["DEFAULT_GRACE", "Executor", "SubprocessExecutor"]

DEFAULT_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL of a process group."""


@runtime_checkable
class Executor(Protocol):
    """Runs one :class:`ProcessRequest` and reports how it settled.

    ``abort`` is optional: an executor may ignore it and still work; callers that need a
    bound on how long an ignored abort can delay them use
    :func:`~tether.executors.retry.settle_with_budget`.
    """

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        """Run ``request`` to settlement; raise :class:`~tether.errors.SpawnError` if it cannot start."""
        ...


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


class SubprocessExecutor:
    """Runs requests as subprocesses, each in its own process group.

    Args:
        grace: seconds between SIGTERM and SIGKILL (default 2.0).
        settle_timeout: seconds to wait, after SIGKILL, for the group to disappear before
            raising :class:`~tether.errors.ExecutorError`; also bounds the wait for the output
            pipes to close once the group is gone.
        python: the interpreter for ``runtime="python"`` (default: ``sys.executable``).
        node: the interpreter for ``runtime="node"`` (default: ``node`` from PATH).
        environ: the parent environment to inherit from (default: ``os.environ`` at spawn).
        poll_interval: seconds between checks that the process group is gone.
    """

    def __init__(
        self,
        *,
        grace: float = DEFAULT_GRACE,
        settle_timeout: float = 5.0,
        python: str = sys.executable,
        node: str = "node",
        environ: Mapping[str, str] | None = None,
        poll_interval: float = 0.02,
    ) -> None:
        if grace < 0 or settle_timeout <= 0 or poll_interval <= 0:
            raise ValueError("grace must be >= 0; settle_timeout and poll_interval must be > 0")
        self.grace = grace
        self.settle_timeout = settle_timeout
        self.python = python
        self.node = node
        self.environ = environ
        self.poll_interval = poll_interval

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        """Run ``request`` (see the module docstring for the full lifecycle)."""
        if abort is not None and abort.is_set():
            return ProcessResult.unstarted(request, aborted=True)
        transport, protocol, pgid = await self._start(request)
        settled = False
        try:
            result = await self._supervise(request, transport, protocol, pgid, abort)
            settled = True
            return result
        finally:
            if not settled:
                await self._kill_after_interruption(pgid, protocol)
            transport.close()

    async def _start(self, request: ProcessRequest) -> tuple[asyncio.SubprocessTransport, CaptureProtocol, int]:
        """Spawn the child and register its group. A caller cancelled while the spawn is still
        returning does not leak the child (it may already run, even have written output): the
        spawn is finished, and what it started is killed and reaped before the cancellation
        goes through."""
        spawning = asyncio.ensure_future(self._spawn(request))
        try:
            transport, protocol = await asyncio.shield(spawning)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                transport, protocol = await spawning
                pgid = transport.get_pid()
                register_group(pgid, request.node)
                try:
                    await self._kill_after_interruption(pgid, protocol)
                finally:
                    transport.close()
            raise
        pgid = transport.get_pid()  # start_new_session: the child leads its own group
        register_group(pgid, request.node)
        return transport, protocol, pgid

    async def _spawn(self, request: ProcessRequest) -> tuple[asyncio.SubprocessTransport, CaptureProtocol]:
        described = request.describe_command()
        if not request.cwd.is_dir():
            raise SpawnError(
                f"node {request.node!r}: cannot run {described!r}: working directory "
                f"{str(request.cwd)!r} does not exist or is not a directory"
            )
        argv = resolve_argv(request, python=self.python, node=self.node)
        env = build_env(request, os.environ if self.environ is None else self.environ)
        protocol = CaptureProtocol(request.capture_limit)
        try:
            transport, _ = await asyncio.get_running_loop().subprocess_exec(
                lambda: protocol,
                *argv,
                cwd=request.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise SpawnError(f"node {request.node!r}: cannot run {described!r}: {exc}") from exc
        return transport, protocol

    async def _supervise(
        self,
        request: ProcessRequest,
        transport: asyncio.SubprocessTransport,
        protocol: CaptureProtocol,
        pgid: int,
        abort: asyncio.Event | None,
    ) -> ProcessResult:
        started = time.monotonic()
        aborted, timed_out = await self._wait_for_exit_or_interrupt(protocol.exited, abort, request.timeout)
        group_killed = aborted or timed_out or group_alive(pgid)
        if group_killed:
            await self._terminate(request, pgid, protocol.exited)
        unregister_group(pgid)
        # Every writer is gone now; an escaped process (own session) could still hold a pipe.
        await asyncio.wait({protocol.closed}, timeout=self.settle_timeout)
        returncode = transport.get_returncode()
        if returncode is None:  # pragma: no cover - _settle/_wait only return after the reap
            raise ExecutorError(f"node {request.node!r}: settled without an exit status")
        sinks = {"stdout": protocol.stdout, "stderr": protocol.stderr}
        return ProcessResult(
            node=request.node,
            process=ProcessRecord.of(request),
            exit_code=returncode if returncode >= 0 else None,
            signal=-returncode if returncode < 0 else None,
            timed_out=timed_out,
            aborted=aborted,
            group_killed=group_killed,
            duration=time.monotonic() - started,
            fields={target.removeprefix("fields."): sinks[s].text() for s, target in request.capture.items()},
            stdout_bytes=protocol.stdout.total,
            stderr_bytes=protocol.stderr.total,
            stdout_truncated=protocol.stdout.truncated,
            stderr_truncated=protocol.stderr.truncated,
            origins={name: binding.origins for name, binding in request.inputs.items()},
        )

    @staticmethod
    async def _wait_for_exit_or_interrupt(
        exited: asyncio.Future[None], abort: asyncio.Event | None, timeout: float | None
    ) -> tuple[bool, bool]:
        """Wait for the child; return ``(aborted, timed_out)``."""
        abort_waiter = asyncio.ensure_future(abort.wait()) if abort is not None else None
        waiters: set[asyncio.Future[Any]] = {exited} if abort_waiter is None else {exited, abort_waiter}
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if abort_waiter is not None:
                abort_waiter.cancel()
        if exited.done():
            return False, False
        aborted = abort is not None and abort.is_set()
        return aborted, not aborted

    async def _terminate(self, request: ProcessRequest, pgid: int, exited: asyncio.Future[None]) -> None:
        """SIGTERM the group, SIGKILL it after the grace, and wait until it is gone."""
        _signal_group(pgid, signal.SIGTERM)
        if await self._settle(pgid, exited, self.grace):
            return
        _signal_group(pgid, signal.SIGKILL)
        if await self._settle(pgid, exited, self.settle_timeout):
            return
        raise ExecutorError(
            f"node {request.node!r}: process group {pgid} of {request.describe_command()!r} "
            f"still has live members {self.settle_timeout}s after SIGKILL"
        )

    async def _settle(self, pgid: int, exited: asyncio.Future[None], timeout: float) -> bool:
        """Wait up to ``timeout`` for the child to be reaped and the group to empty."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not exited.done():
            await asyncio.wait({exited}, timeout=timeout)
            if not exited.done():
                return False
        while group_alive(pgid):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(self.poll_interval)
        return True

    async def _kill_after_interruption(self, pgid: int, protocol: CaptureProtocol) -> None:
        """The caller was cancelled (or supervision failed): SIGKILL the group and reap it."""
        _signal_group(pgid, signal.SIGKILL)
        if await self._settle(pgid, protocol.exited, self.settle_timeout):
            unregister_group(pgid)
