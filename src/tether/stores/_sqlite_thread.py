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
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ConnectionThread"]

T = TypeVar("T")
_Item = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"] | None


def _settle(future: asyncio.Future[Any], ok: bool, outcome: Any) -> None:
    if future.done():  # the caller was cancelled
        return
    if ok:
        future.set_result(outcome)
    else:
        future.set_exception(outcome)


def _serve(calls: queue.SimpleQueue[_Item]) -> None:
    while True:
        item = calls.get()
        if item is None:
            return
        fn, loop, future = item
        try:
            outcome, ok = fn(), True
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits for the result
            loop.call_soon_threadsafe(_settle, future, ok, outcome)
        del item, fn, future, outcome  # hold nothing between calls


class ConnectionThread:
    """Runs functions one at a time on a thread of its own (see the module notes)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[_Item] | None = None  # the running thread's queue
        self._start = threading.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread; its result, or its exception raised here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        calls = self._calls or self._start_thread()
        calls.put((fn, loop, future))
        return await future

    def _start_thread(self) -> queue.SimpleQueue[_Item]:
        with self._start:
            if self._calls is None:
                calls: queue.SimpleQueue[_Item] = queue.SimpleQueue()
                threading.Thread(target=_serve, args=(calls,), name=self._name, daemon=True).start()
                weakref.finalize(self, calls.put, None)  # the owner is gone: its thread ends
                self._calls = calls
            return self._calls

    def stop(self) -> None:
        """End the thread once the calls already queued have run (a later ``run`` starts another)."""
        with self._start:
            if self._calls is not None:
                self._calls.put(None)
                self._calls = None
