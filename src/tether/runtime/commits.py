"""``CommitSignal``: wakes the watchers of a session when this process commits a write of it.

The runtime notifies after every save that carries a turn's records (and after a delete), so a
live view of a session (the server's event stream) sees a turn of this process at once. Writes of
other processes are not seen here: a watcher also re-reads the store now and then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["CommitSignal"]


class CommitSignal:
    """Per-session ``asyncio.Event`` watchers, set by :meth:`notify`."""

    def __init__(self) -> None:
        self._watchers: dict[str, set[asyncio.Event]] = {}

    def notify(self, session_id: str) -> None:
        """Wake every watcher of ``session_id``."""
        for event in self._watchers.get(session_id, ()):
            event.set()

    @contextmanager
    def watch(self, session_id: str) -> Iterator[asyncio.Event]:
        """An event set on each commit of ``session_id`` while the body runs (clear it before
        reading the store, so a commit between the read and the wait is not missed)."""
        event = asyncio.Event()
        watchers = self._watchers.setdefault(session_id, set())
        watchers.add(event)
        try:
            yield event
        finally:
            watchers.discard(event)
            if not watchers and self._watchers.get(session_id) is watchers:
                del self._watchers[session_id]
