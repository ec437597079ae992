"""The store probe behind ``/readyz``: an answer within ``READY_TIMEOUT`` seconds, whatever the store does.

A probe is a one-row ``Store.list``. It runs as a task of its own and ``/readyz`` waits for it
at most ``READY_TIMEOUT`` seconds, then answers and cancels it without waiting for the
cancellation: a query the database never answers (a network that stopped forwarding) is
cancelled by psycopg with a request on a new connection and a wait for the query to end, which
can take ten seconds more. One probe runs at a time: a ``/readyz`` that finds the last one still
running (or still being cancelled) waits for that one, so probes never pile up on a store that
hangs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tether.stores import Store

__all__ = ["READY_TIMEOUT", "StoreProbe"]

READY_TIMEOUT = 2.0
"""Seconds ``/readyz`` waits for the store."""


class StoreProbe:
    """Asks ``store`` whether it answers; at most one question in flight."""

    def __init__(self, store: Store, timeout: float = READY_TIMEOUT) -> None:
        self.store = store
        self.timeout = timeout
        self._task: asyncio.Task[Any] | None = None

    async def problem(self) -> str | None:
        """``None`` when the store answered within the timeout, else what went wrong."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.store.list(limit=1))
            self._task.add_done_callback(_retrieve)
        task = self._task
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            task.cancel()  # not awaited (see the module's docstring)
            return f"store unreachable: no answer within {self.timeout:g}s"
        if task.cancelled():
            return f"store unreachable: no answer within {self.timeout:g}s"
        error = task.exception()
        return None if error is None else f"store unreachable: {type(error).__name__}"

    def close(self) -> None:
        """Cancel a probe still in flight."""
        if self._task is not None:
            self._task.cancel()


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a finished probe's exception as seen (no "never retrieved" warning for a probe that
    failed after its ``/readyz`` had answered)."""
    if not task.cancelled():
        task.exception()
