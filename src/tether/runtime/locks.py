"""``SessionLocks``: one FIFO lock per session id, inside one process.

Requests carrying the same session id run one after another, in arrival order; requests for
different ids run concurrently. The lock is process-local: across processes the store's lease
and its compare-and-swap on ``revision`` keep workers from losing updates. The mechanism is the
stores' process-local lease (:class:`tether.stores.leases.LocalLeases`), held with no timeout.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from tether.stores.leases import LocalLeases

__all__ = ["SessionLocks"]


class SessionLocks(LocalLeases):
    """Per-session FIFO mutexes; an entry is dropped as soon as nobody holds or waits for it."""

    def hold(self, key: str | None, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
        """Hold the lock of ``key`` (a session id; None: no lock at all) for the body, waiting as
        long as it takes unless a ``timeout`` is given."""
        return super().hold(key, timeout)

    def busy(self, session_id: str) -> bool:
        """True when a request for ``session_id`` holds or waits for its lock."""
        return self.held(session_id)
