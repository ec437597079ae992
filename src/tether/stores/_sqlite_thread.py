"""The thread of ``SQLiteStore``: one thread per store runs every call on its connection, in order.

``asyncio.to_thread`` hands each call to the loop's shared pool: a pool work item, a wrapped
future and a thread wake-up each way, about twice what a call to one waiting thread costs (two
of them per turn, on the turn's critical path). The store has one connection used by one call at
a time anyway, so one thread of its own, fed by a queue, is the simpler shape: the caller puts
``(fn, loop, future)`` and awaits the future; the thread runs ``fn`` and settles the future on the
caller's loop. The thread starts with the first call and stops when the store is closed or
garbage-collected (it holds no reference to the store).

As with ``to_thread``, a caller cancelled while its call runs does not stop the call: the work
finishes on the thread and its result is dropped.

Grouped calls (``run_grouped``): a call may carry a *group runner* instead of running alone. When
the thread takes such a call, it also takes every grouped call of the same runner already waiting
behind it (up to :data:`MAX_GROUP`, stopping at the first call that is not one) and hands them all
to the runner at once, which returns one outcome per call; only then are the callers answered.
``SQLiteStore`` runs a group as one transaction with one commit (one fsync for all of them): while
one commit waits for the disk, the writes of other sessions queue up, and the next commit carries
them all. Nobody is answered before the commit that carries their write has returned.

Reads (``run(fn, read=True)``) found while a group is gathered run at once, before the group's
transaction, instead of ending the group: a turn's load would otherwise split the writes of other
sessions queued around it into two commits. That is safe because every caller awaits its call: a
read waiting in the queue was sent by a caller that awaits no write, so it does not depend on any
write still queued (a write it depends on, such as the save before a lease changed hands, was
answered before the read was sent), and it reads only what has been committed.

Lingering (the thread's :class:`Linger`): once a group is gathered, ``linger.siblings(jobs)`` says
how many more grouped calls it may expect soon (``SQLiteStore``: the writes of the other sessions
mid-turn, when the group's commit must be flushed). While that is more than 0 the thread waits, at
most ``linger.delay`` from when the group was gathered, taking the grouped calls as they come: the
caller whose call completes the count wakes it (one wake-up for the whole wait, not one per call),
and so does a read or ``stop``. A call that is not of the group ends the wait, as it ends a group.
The wait only moves the group's run later; its callers are answered after it as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_GROUP", "ConnectionThread", "GroupRunner", "Linger", "Outcome", "Siblings"]

T = TypeVar("T")
Outcome = tuple[bool, Any]
"""``(True, result)`` or ``(False, exception)``: what one call of a group came to."""
GroupRunner = Callable[[list[Any]], list[Outcome]]
"""Runs the jobs of a group together and returns one outcome per job, in order."""
_Item = tuple[Any, asyncio.AbstractEventLoop, "asyncio.Future[Any]", GroupRunner | None] | None
Siblings = Callable[[list[Any]], int]
"""How many more grouped calls a gathered group (its jobs) may expect soon: writes of other turns
under way (0: none; commit now)."""


def _read_marker(jobs: list[Any]) -> list[Outcome]:  # never called: marks a read (see the module notes)
    raise AssertionError("a read is not a group")


_READ: GroupRunner = _read_marker

MAX_GROUP = 256
"""The most calls one group takes (the rest wait for the next)."""


def _settle(future: asyncio.Future[Any], ok: bool, outcome: Any) -> None:
    if future.done():  # the caller was cancelled
        return
    if ok:
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


def _answer(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], ok: bool, outcome: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits for the result
        loop.call_soon_threadsafe(_settle, future, ok, outcome)


def _run_group(items: list[Any], runner: GroupRunner) -> None:
    """Hand the jobs of ``items`` to ``runner`` at once, then answer each caller with its outcome."""
    try:
        outcomes = runner([item[0] for item in items])
        if len(outcomes) != len(items):
            raise RuntimeError(f"a group runner returned {len(outcomes)} outcomes for {len(items)} jobs")
    except BaseException as exc:  # the runner itself failed: every caller gets its error
        outcomes = [(False, exc)] * len(items)
    # one wake-up of each caller's loop for the whole group, not one per caller
    answers: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
    for (_, loop, future, _), (ok, outcome) in zip(items, outcomes, strict=True):
        answers.setdefault(loop, []).append((future, ok, outcome))
    for loop, settles in answers.items():
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits for the result
            loop.call_soon_threadsafe(_settle_all, settles)


def _settle_all(settles: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, outcome in settles:
        _settle(future, ok, outcome)


def _run_alone(fn: Callable[[], Any], loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> None:
    try:
        outcome, ok = fn(), True
    except BaseException as exc:  # handed to the caller, whatever it is
        outcome, ok = exc, False
    _answer(loop, future, ok, outcome)


class Linger:
    """The commit delay of a :class:`ConnectionThread` (see the module notes): how long a gathered
    group that needs a flush may wait for the writes of other turns under way, and how many it
    expects (``siblings``); shared by the thread and its callers.

    Args:
        delay: the longest wait, in seconds (0: never wait).
        siblings: how many more grouped calls a group may expect (it must not hold the thread's
            owner: the thread outlives nothing it refers to).
    """

    __slots__ = ("delay", "siblings", "want", "woken")

    def __init__(self, delay: float = 0.0, siblings: Siblings | None = None) -> None:
        self.delay = delay
        self.siblings = siblings
        self.want = 0  # grouped calls still awaited by a lingering group (0: none lingers)
        self.woken = threading.Event()  # set by the caller whose call completes what is awaited

    def arrived(self, grouped: bool) -> None:
        """A call was queued (on the caller's thread): wake a lingering group when it completes
        what the group awaits, or at once for a read (it should not wait for the group).
        Unlocked on purpose: a count that races (callers of two loops at once) can only miss a
        wake-up, and the group then commits at its deadline, ``delay`` after it was gathered."""
        if self.want > 0:
            self.want = want = self.want - 1 if grouped else 0
            if want <= 0:
                self.woken.set()


def _take(calls: queue.SimpleQueue[_Item], group: list[Any], runner: GroupRunner, held: list[_Item]) -> bool:
    """Add the grouped calls of ``runner`` queued now to ``group`` (reads found among them run at
    once); False when a call that ends the group was found (kept in ``held``) or the group is full."""
    while len(group) < MAX_GROUP:
        try:
            waiting = calls.get_nowait()
        except queue.Empty:
            return True
        if waiting is not None and waiting[3] is _READ:  # a read does not end the group
            _run_alone(*waiting[:3])
            continue
        if waiting is None or waiting[3] != runner:
            held.append(waiting)
            return False
        group.append(waiting)
    return False


def _linger(calls: queue.SimpleQueue[_Item], group: list[Any], runner: GroupRunner, held: list[_Item],
            linger: Linger, siblings: Siblings) -> None:
    """Wait up to ``linger.delay`` for the grouped calls ``siblings`` expects (the writes of other
    turns under way), adding them to ``group``: woken by the caller whose call completes the count,
    by a read, or by the deadline, whichever comes first."""
    deadline = time.monotonic() + linger.delay
    while True:
        want = siblings([item[0] for item in group])
        left = deadline - time.monotonic()
        if want <= 0 or left <= 0:
            return
        linger.woken.clear()
        linger.want = want  # from now on, the callers count their calls down
        before = len(group)
        if not _take(calls, group, runner, held):  # calls queued before ``want`` was set
            linger.want = 0
            return
        if len(group) == before:
            linger.woken.wait(left)
            linger.want = 0
            if not _take(calls, group, runner, held):
                return


def _serve(calls: queue.SimpleQueue[_Item], linger: Linger) -> None:
    held: list[_Item] = []  # a call taken while gathering a group, run next
    while True:
        item = held.pop() if held else calls.get()
        if item is None:
            return
        fn, loop, future, runner = item
        if runner is None or runner is _READ:
            _run_alone(fn, loop, future)
        else:
            group = [item]
            siblings = linger.siblings
            if _take(calls, group, runner, held) and linger.delay > 0 and siblings is not None:
                _linger(calls, group, runner, held, linger, siblings)
            del siblings
            _run_group(group, runner)
            del group
        del item, fn, future, runner  # hold nothing between calls


class ConnectionThread:
    """Runs functions one at a time on a thread of its own (see the module notes)."""

    def __init__(self, name: str, linger: Linger | None = None) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[_Item] | None = None  # the running thread's queue
        self._start = threading.Lock()
        self.linger = linger if linger is not None else Linger()
        self.in_flight = 0
        """Calls sent and not yet answered, counted by the callers (0: the thread is idle). Not
        locked: callers on two loops at once may leave it off by one, which only changes where a
        point read is made (``SQLiteStore._point_read``), never what it reads."""

    async def run(self, fn: Callable[[], T], *, read: bool = False) -> T:
        """``fn()`` on the thread; its result, or its exception raised here. A ``read`` may run
        before grouped writes queued ahead of it (see the module notes)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        calls = self._calls or self._start_thread()
        calls.put((fn, loop, future, _READ if read else None))
        if self.linger.want:
            self.linger.arrived(False)
        self.in_flight += 1
        try:
            return await future
        finally:
            self.in_flight -= 1

    async def run_grouped(self, job: Any, runner: GroupRunner) -> Any:
        """``job`` run by ``runner`` together with the other grouped calls of ``runner`` waiting
        on the thread at the time (see the module notes); its outcome, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        calls = self._calls or self._start_thread()
        calls.put((job, loop, future, runner))
        if self.linger.want:
            self.linger.arrived(True)
        self.in_flight += 1
        try:
            return await future
        finally:
            self.in_flight -= 1

    def _start_thread(self) -> queue.SimpleQueue[_Item]:
        with self._start:
            if self._calls is None:
                calls: queue.SimpleQueue[_Item] = queue.SimpleQueue()
                threading.Thread(target=_serve, args=(calls, self.linger), name=self._name, daemon=True).start()
                weakref.finalize(self, calls.put, None)  # the owner is gone: its thread ends
                self._calls = calls
            return self._calls

    def stop(self) -> None:
        """End the thread once the calls already queued have run (a later ``run`` starts another)."""
        with self._start:
            if self._calls is not None:
                self._calls.put(None)
                self._calls = None
                self.linger.arrived(False)
