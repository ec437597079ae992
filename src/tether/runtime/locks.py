"""``SessionLocks``: one FIFO lock per session id, inside one process.

Requests carrying the same session id run one after another, in arrival order; requests for
different ids run concurrently. The lock is process-local: across processes the store's
compare-and-swap on ``revision`` is what keeps writers from losing updates.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["SessionLocks"]


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class SessionLocks:
    """Per-session FIFO mutexes; an entry is dropped as soon as nobody holds or waits for it."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @asynccontextmanager
    async def hold(self, session_id: str | None) -> AsyncIterator[None]:
        """Hold the lock of ``session_id`` for the body (no id: no lock at all).

        ``asyncio.Lock`` wakes its waiters first-in first-out and a newcomer never overtakes a
        waiter, so same-id requests run in the order they arrived.
        """
        if session_id is None:
            yield
            return
        entry = self._entries.get(session_id)
        if entry is None:
            entry = self._entries[session_id] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._entries.get(session_id) is entry:
                del self._entries[session_id]

    def __len__(self) -> int:
        """How many session ids are currently held or awaited."""
        return len(self._entries)

    def busy(self, session_id: str) -> bool:
        """True when a request for ``session_id`` holds or waits for its lock."""
        return session_id in self._entries
