"""Automatic retries that never overlap, and a bound on executors that ignore their abort.

:func:`retry` runs a request up to ``1 + retries`` times, stopping at the first passing
attempt. The next attempt starts only after the previous one **settled** — for
:class:`~tether.executors.executor.SubprocessExecutor` that means its whole process group is
gone — so a retry budget can never put two live processes on one node.

The bound: each attempt gets its own abort event, set when the caller's ``abort`` fires or when
the request's ``timeout`` elapses (a backstop to the executor's own timeout). An executor that
does not settle within ``budget`` seconds after that event is given up on: its task is
cancelled (best effort, not awaited) and the attempt is recorded as ``abandoned`` — it delays
its own retry by the budget instead of wedging the caller. Only a misbehaving executor can be
abandoned; its work may then still be running, which is the price of not wedging.

An executor that declares only ``execute(request)`` (no ``abort`` parameter) keeps working: it is
called without the abort, the attempt still fails on timeout (the budget bounds the wait), and
only its spawned work goes unreaped.

Failures: timeouts and abandoned attempts count as failures and are retried. A
:class:`~tether.errors.SpawnError` is raised at once and never retried (it is a configuration
problem — a missing binary or workspace — that a retry cannot fix). Once the caller's abort
fires no further attempt starts.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, computed_field

from tether.errors import ExecutorError
from tether.executors.executor import Executor
from tether.executors.request import ProcessRequest
from tether.executors.result import ProcessResult

__all__ = ["DEFAULT_SETTLE_BUDGET", "ExecutorUnsettledError", "RetryOutcome", "retry", "settle_with_budget"]

T = TypeVar("T")

DEFAULT_SETTLE_BUDGET = 10.0
"""Seconds an executor may take to settle after its abort fired (exceeds grace + settle time)."""


class ExecutorUnsettledError(ExecutorError):
    """An executor did not settle within its budget after being aborted; it was abandoned."""

    code = "executor-unsettled"


class RetryOutcome(BaseModel):
    """Every settled attempt of one request, in order; ``final`` is the last."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    attempts: tuple[ProcessResult, ...]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def final(self) -> ProcessResult:
        """The last attempt (the one that decides the node)."""
        return self.attempts[-1]

    @property
    def passed(self) -> bool:
        """Whether the final attempt passed."""
        return self.final.passed


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Done-callback for an abandoned task: consume its outcome so nothing is logged."""
    if not task.cancelled():
        task.exception()


async def settle_with_budget(awaitable: Awaitable[T], abort: asyncio.Event, budget: float) -> T:
    """Await ``awaitable``, but give up ``budget`` seconds after ``abort`` fires.

    Returns the awaitable's result (or raises its exception) if it settles in time. Otherwise
    the underlying task is cancelled without being awaited and :class:`ExecutorUnsettledError`
    is raised. If the caller is cancelled, the task is cancelled too and given up to ``budget``
    seconds to finish before the cancellation propagates.
    """
    task = asyncio.ensure_future(awaitable)
    abort_waiter = asyncio.ensure_future(abort.wait())
    try:
        await asyncio.wait({task, abort_waiter}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait({task}, timeout=budget)
    except BaseException:
        # The caller was cancelled: cancel the work and give it the budget to clean up.
        task.cancel()
        task.add_done_callback(_retrieve)
        await asyncio.wait({task}, timeout=budget)
        raise
    finally:
        abort_waiter.cancel()
    if task.done():
        return task.result()
    task.cancel()
    task.add_done_callback(_retrieve)
    raise ExecutorUnsettledError(f"the executor did not settle within {budget}s of its abort; abandoned it")


def _accepts_abort(executor: Executor) -> bool:
    """Whether ``executor.execute`` takes a second (abort) argument."""
    try:
        parameters = list(inspect.signature(executor.execute).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return True
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return True
    positional = [p for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _attempt(
    executor: Executor, request: ProcessRequest, abort: asyncio.Event | None, budget: float
) -> ProcessResult:
    attempt_abort = asyncio.Event()
    relay = asyncio.ensure_future(_relay(abort, attempt_abort)) if abort is not None else None
    timer = (
        asyncio.get_running_loop().call_later(request.timeout, attempt_abort.set)
        if request.timeout is not None
        else None
    )
    try:
        work = executor.execute(request, attempt_abort) if _accepts_abort(executor) else executor.execute(request)
        result = await settle_with_budget(work, attempt_abort, budget)
    except ExecutorUnsettledError:
        caller_aborted = abort is not None and abort.is_set()
        return ProcessResult.unstarted(
            request, abandoned=True, aborted=caller_aborted, timed_out=not caller_aborted
        )
    finally:
        if relay is not None:
            relay.cancel()
        if timer is not None:
            timer.cancel()
    timer_fired = attempt_abort.is_set() and not (abort is not None and abort.is_set())
    if timer_fired and result.aborted:
        # Our backstop beat the executor's own timer: the cause was the timeout.
        result = result.model_copy(update={"aborted": False, "timed_out": True})
    return result


async def retry(
    executor: Executor,
    request: ProcessRequest,
    retries: int = 0,
    abort: asyncio.Event | None = None,
    *,
    budget: float = DEFAULT_SETTLE_BUDGET,
) -> RetryOutcome:
    """Run ``request`` until it passes, with ``retries`` extra attempts after the first.

    Attempts run strictly one after another (see the module docstring). If ``abort`` is
    already set, no process starts and the outcome holds a single aborted attempt.
    """
    if retries < 0:
        raise ValueError("retries must be >= 0")
    if budget < 0:
        raise ValueError("budget must be >= 0")
    if abort is not None and abort.is_set():
        return RetryOutcome(attempts=(ProcessResult.unstarted(request, aborted=True),))
    attempts: list[ProcessResult] = []
    for _ in range(retries + 1):
        result = await _attempt(executor, request, abort, budget)
        attempts.append(result)
        if result.passed or (abort is not None and abort.is_set()):
            break
    return RetryOutcome(attempts=tuple(attempts))
