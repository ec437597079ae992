"""Session leases: one worker at a time on a session, across tasks, runtimes and processes.

The runtime holds a session's lease from the load to the last save of a request, inside its
process-local FIFO lock, so a second worker (another ``Runtime``, process or host on the same
store) waits for the first one's turn to finish instead of loading its mid-turn checkpoint.
Compare-and-swap stays the safety net; the lease is what keeps concurrent workers from racing.

Each store implements ``Store.lease``:

* ``MemoryStore`` (and any store that does not override it): ``LocalLeases``, process-local.
* ``SQLiteStore``: an operating-system lock on a byte of a file beside the database, which the
  kernel drops when its process ends (``_sqlite_lease``).
* ``PostgresStore``: a session-level advisory lock on a dedicated connection
  (``_postgres_lease``); the server releases it when the holder's connection dies.

A lease not obtained within the timeout raises ``SessionLeaseTimeout``
(``SESSION_LEASE_TIMEOUT``).

A request's lease brackets its I/O: the load comes right after the take and the final save right
before the release. ``Store.lease_and_load`` and ``Store.save_and_release`` let a backend fold
each pair into one call (one thread hop on SQLite, one round trip on PostgreSQL); the defaults
compose ``lease``, ``load`` and ``save``, so a store that overrides none of them still works.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from tether.errors import SessionLeaseTimeout

if TYPE_CHECKING:
    from tether.engine.core.session import Session

__all__ = ["DEFAULT_LEASE_TIMEOUT", "Leased", "LocalLeases"]

DEFAULT_LEASE_TIMEOUT = 30.0
"""Seconds a worker waits for a session's lease before giving up."""


class Leased:
    """A held session lease, as ``Store.lease_and_load`` yields it.

    ``load()`` returns the session's document: the first call answers from the read the store
    made together with the take (no I/O of its own; nobody else may write the session meanwhile,
    so it is current as long as the holder has not written yet), every later call reads again.
    ``release()`` ends the lease early (idempotent; leaving the ``async with`` releases it too);
    ``Store.save_and_release`` ends it with the save.
    """

    __slots__ = ("_first", "_read", "_release", "backend", "released", "session_id")

    def __init__(self, session_id: str, first: Callable[[], Session | None] | None,
                 read: Callable[[], Awaitable[Session | None]],
                 release: Callable[[], Awaitable[None]]) -> None:
        self.session_id = session_id
        self._first = first  # decodes the document read with the take (None: nothing was read)
        self._read = read
        self._release = release
        self.released = False
        self.backend: object = None  # the store's own handle on the lease (``save_and_release`` reads it)

    async def load(self) -> Session | None:
        """The document of the leased session (None when there is none); see the class notes."""
        first, self._first = self._first, None
        if first is not None:
            return first()
        return await self._read()

    async def release(self) -> None:
        """Release the lease now (nothing when it is released already)."""
        if not self.released:
            self.released = True
            await self._release()

    def mark_released(self) -> None:
        """Record that the store released the lease itself (with a save): leaving does nothing."""
        self.released = True
        self._first = None


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class _Hold:
    """One holding of a key's lock, as an async context manager (a class, not a generator: every
    request enters two of them)."""

    __slots__ = ("_entry", "_key", "_locks", "_timeout")

    def __init__(self, locks: LocalLeases, key: str | None, timeout: float | None) -> None:
        self._locks, self._key, self._timeout = locks, key, timeout
        self._entry: _Entry | None = None

    async def __aenter__(self) -> None:
        key = self._key
        if key is None:
            return
        entries = self._locks._entries
        entry = entries.get(key)
        if entry is None:
            entry = entries[key] = _Entry()
        entry.users += 1
        try:
            if self._timeout is not None and entry.lock.locked():  # wait_for costs a task: only when waiting
                await asyncio.wait_for(entry.lock.acquire(), self._timeout)
            else:
                await entry.lock.acquire()
        except TimeoutError:
            self._locks._leave(key, entry)
            raise SessionLeaseTimeout(key, timeout=self._timeout or 0.0,
                                      holder="another task of this process") from None
        except BaseException:
            self._locks._leave(key, entry)
            raise
        self._entry = entry

    async def __aexit__(self, *exc: object) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            entry.lock.release()
            self._locks._leave(self._key, entry)


class LocalLeases:
    """Process-local leases: one FIFO ``asyncio.Lock`` per key, dropped as soon as nobody holds or
    waits for it. ``asyncio.Lock`` wakes its waiters first-in first-out and a newcomer never
    overtakes a waiter, so the holders of one key take turns in arrival order."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def hold(self, key: str | None, timeout: float | None = DEFAULT_LEASE_TIMEOUT) -> AbstractAsyncContextManager[None]:
        """Hold the lease of ``key`` for the body (None: no lock at all); ``SessionLeaseTimeout``
        after ``timeout`` seconds of waiting (None: wait as long as it takes)."""
        return _Hold(self, key, timeout)

    def _leave(self, key: str | None, entry: _Entry) -> None:
        entry.users -= 1
        if entry.users == 0 and key is not None and self._entries.get(key) is entry:
            del self._entries[key]

    def held(self, key: str) -> bool:
        """True when a task holds or awaits the lease of ``key``."""
        return key in self._entries

    def __len__(self) -> int:
        """How many keys are currently held or awaited."""
        return len(self._entries)
