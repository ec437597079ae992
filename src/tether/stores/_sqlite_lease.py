"""The session lease of ``SQLiteStore``: a row in ``tether_leases`` with an expiry.

Taking the lease writes ``(session_id, holder, expires_at)`` when there is no row, or the row
has expired, or its holder is a process of this host that no longer exists (a SIGKILLed worker
frees the session at once). A waiter polls with a growing pause (2 ms up to 50 ms) until its
timeout. While held, the lease is renewed every third of its time to live, so a long turn keeps
it. Releasing deletes the row if it is still ours.

A lease row is coordination, not data: its writes need no fsync of their own (the store runs them
as writes that do not flush: a group of such writes commits at ``synchronous = NORMAL``, and one
that rides in a group with a save is flushed by that save's commit). A power loss that drops a
lease write also stopped every process that could hold it; the WAL stays consistent either way.
So taking and releasing a lease costs no disk flush. Every statement here runs inside the write
transaction the store opened for it (``SQLiteStore._write``), often together with other sessions'
writes.

A request's first and last store calls ride along: the take reads the session's document in the
same worker call (``Store.lease_and_load``), and a save can delete the lease row inside its own
transaction (``Store.save_and_release``), so a one-save turn makes two thread hops, not four.

Lease times use the wall clock (``time.time``), shared by every process of the host, not the
store's clock: a test clock that stands still must not keep a dead holder's lease alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

from tether.errors import SessionLeaseTimeout
from tether.stores.leases import holder_is_dead, new_holder

__all__ = ["SQLiteLease", "hold_sqlite_lease"]

T = TypeVar("T")
Call = Callable[[str, str | None, Callable[[sqlite3.Connection], Any]], Awaitable[Any]]
"""Runs a function inside a write transaction on the store's connection (unflushed)."""
log = logging.getLogger("tether.stores")

_FIRST_PAUSE, _MAX_PAUSE = 0.002, 0.05


def _now_us() -> int:
    return int(time.time() * 1_000_000)


def _take(conn: sqlite3.Connection, session_id: str, holder: str, ttl_us: int) -> str | None:
    """Take the lease if it is free, expired or held by a dead process (inside the caller's write
    transaction); None when taken, else the live holder."""
    now = _now_us()
    row = conn.execute("SELECT holder, expires_at FROM tether_leases WHERE session_id = ?", (session_id,)).fetchone()
    if row is not None and row[1] > now and not holder_is_dead(row[0]):
        return str(row[0])
    conn.execute(
        "INSERT INTO tether_leases (session_id, holder, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
        (session_id, holder, now + ttl_us),
    )
    return None


class SQLiteLease(Generic[T]):
    """One holding of a session's lease row: taking it (with an optional read in the same call),
    renewing it every third of its time to live, releasing it (alone or inside a save)."""

    def __init__(self, call: Call, session_id: str, ttl: float) -> None:
        self.call = call
        self.session_id = session_id
        self.holder = new_holder()
        self.ttl_us = int(ttl * 1_000_000)
        self.found: T | None = None  # what the read made with the take returned
        self.closing = False  # a release (alone or with a save) is under way: a lost row is expected
        self._timer: asyncio.TimerHandle | None = None
        self._renewal: asyncio.Task[None] | None = None

    def _try_take(self, conn: sqlite3.Connection, read: Callable[[sqlite3.Connection], T] | None) -> str | None:
        current = _take(conn, self.session_id, self.holder, self.ttl_us)
        if current is None and read is not None:
            self.found = read(conn)
        return current

    async def take(self, timeout: float, read: Callable[[sqlite3.Connection], T] | None = None) -> None:
        """Take the lease (then run ``read`` in the same call, its result in ``found``); raises
        ``SessionLeaseTimeout`` when another holder keeps it for ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        pause = _FIRST_PAUSE
        while True:
            current = await self.call("lease", self.session_id, lambda conn: self._try_take(conn, read))
            if current is None:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionLeaseTimeout(self.session_id, timeout=timeout, holder=str(current))
            await asyncio.sleep(min(left, pause * random.uniform(0.5, 1.5)))
            pause = min(pause * 2, _MAX_PAUSE)
        self._schedule_renewal()

    def release_in(self, conn: sqlite3.Connection) -> None:
        """Delete the lease row if it is still ours, inside the caller's transaction."""
        conn.execute("DELETE FROM tether_leases WHERE session_id = ? AND holder = ?", (self.session_id, self.holder))

    async def release(self) -> None:
        """Stop renewing and delete the row (a failure is logged: the row expires anyway)."""
        self.closing = True
        await self.stop()
        try:
            await self.call("lease", self.session_id, self.release_in)
        except Exception as exc:  # the row expires (or its dead holder is detected) anyway
            log.warning("could not release the lease of session %r: %s", self.session_id, exc)

    async def stop(self) -> None:
        """Stop renewing (the row was released, or is about to be)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        renewal, self._renewal = self._renewal, None
        if renewal is not None and not renewal.done():
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal

    def _schedule_renewal(self) -> None:
        # a timer, not a sleeping task: most leases end long before their first renewal
        self._timer = asyncio.get_running_loop().call_later(self.ttl_us / 3_000_000, self._start_renewal)

    def _start_renewal(self) -> None:
        self._timer = None
        self._renewal = asyncio.ensure_future(self._renew())

    def _renew_row(self, conn: sqlite3.Connection) -> bool:
        cur = conn.execute(
            "UPDATE tether_leases SET expires_at = ? WHERE session_id = ? AND holder = ?",
            (_now_us() + self.ttl_us, self.session_id, self.holder),
        )
        return cur.rowcount == 1

    async def _renew(self) -> None:
        try:
            still_ours = await self.call("lease", self.session_id, self._renew_row)
        except Exception as exc:
            log.warning("could not renew the lease of session %r: %s", self.session_id, exc)
            still_ours = True  # try again at the next period
        if self.closing:
            return
        if not still_ours:  # expired and taken over; compare-and-swap still guards our saves
            log.warning("the lease of session %r was taken over by another worker", self.session_id)
            return
        self._schedule_renewal()


@asynccontextmanager
async def hold_sqlite_lease(call: Call, session_id: str, *, timeout: float, ttl: float,
                            read: Callable[[sqlite3.Connection], T] | None = None) -> AsyncIterator[SQLiteLease[T]]:
    """Hold the lease row of ``session_id`` for the body (``call`` runs a function on the store's
    connection); ``read`` runs right after the take in the same call. Raises
    ``SessionLeaseTimeout`` when it stays held by another for ``timeout``s. The body may end the
    lease itself (``closing`` set by a save that deleted the row): leaving then does nothing."""
    lease: SQLiteLease[T] = SQLiteLease(call, session_id, ttl)
    await lease.take(timeout, read)
    try:
        yield lease
    finally:
        if lease.closing:
            await lease.stop()
        else:
            await lease.release()
