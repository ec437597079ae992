"""The session lease of ``SQLiteStore``: a row in ``tether_leases`` with an expiry.

Taking the lease writes ``(session_id, holder, expires_at)`` when there is no row, or the row
has expired, or its holder is a process of this host that no longer exists (a SIGKILLed worker
frees the session at once). A waiter polls with a growing pause (2 ms up to 50 ms) until its
timeout. While held, the lease is renewed every third of its time to live, so a long turn keeps
it. Releasing deletes the row if it is still ours.

A lease row is coordination, not data: its commits skip the fsync (``synchronous = NORMAL`` for
the lease's own statements; the store's connection is ``FULL`` for everything else). A power
loss that drops a lease write also stopped every process that could hold it; the WAL stays
consistent either way. So taking and releasing a lease costs no disk flush, and a turn's only
durable commit is its save.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TypeVar

from tether.errors import SessionLeaseTimeout
from tether.stores.leases import holder_is_dead, new_holder

__all__ = ["hold_sqlite_lease"]

T = TypeVar("T")
Call = Callable[[str, str | None, Callable[[sqlite3.Connection], T]], Awaitable[T]]
log = logging.getLogger("tether.stores")

_FIRST_PAUSE, _MAX_PAUSE = 0.002, 0.05


def _now_us() -> int:
    return int(time.time() * 1_000_000)


@contextlib.contextmanager
def _unsynced(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the body's commits without an fsync (outside any transaction: SQLite refuses to change
    the safety level inside one), then restore the store's ``FULL``."""
    conn.execute("PRAGMA synchronous = NORMAL")
    try:
        yield
    finally:
        conn.execute("PRAGMA synchronous = FULL")


def _try_take(conn: sqlite3.Connection, session_id: str, holder: str, ttl_us: int) -> str | None:
    """Take the lease if it is free, expired or held by a dead process; None when taken, else
    the live holder. Reads first so a held lease costs no write lock."""
    with _unsynced(conn):
        return _take(conn, session_id, holder, ttl_us)


def _take(conn: sqlite3.Connection, session_id: str, holder: str, ttl_us: int) -> str | None:
    now = _now_us()
    row = conn.execute("SELECT holder, expires_at FROM tether_leases WHERE session_id = ?", (session_id,)).fetchone()
    if row is not None and row[1] > now and not holder_is_dead(row[0]):
        return str(row[0])
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT holder, expires_at FROM tether_leases WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is not None and row[1] > now and not holder_is_dead(row[0]):
            conn.execute("ROLLBACK")
            return str(row[0])
        conn.execute(
            "INSERT INTO tether_leases (session_id, holder, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
            (session_id, holder, now + ttl_us),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return None


def _renew(conn: sqlite3.Connection, session_id: str, holder: str, ttl_us: int) -> bool:
    with _unsynced(conn):
        cur = conn.execute(
            "UPDATE tether_leases SET expires_at = ? WHERE session_id = ? AND holder = ?",
            (_now_us() + ttl_us, session_id, holder),
        )
    return cur.rowcount == 1


def _release(conn: sqlite3.Connection, session_id: str, holder: str) -> None:
    with _unsynced(conn):
        conn.execute("DELETE FROM tether_leases WHERE session_id = ? AND holder = ?", (session_id, holder))


@asynccontextmanager
async def hold_sqlite_lease(call: Call[object], session_id: str, *, timeout: float, ttl: float) -> AsyncIterator[None]:
    """Hold the lease row of ``session_id`` for the body (``call`` runs a function on the store's
    connection). Raises ``SessionLeaseTimeout`` when it stays held by another for ``timeout``s."""
    holder = new_holder()
    ttl_us = int(ttl * 1_000_000)
    deadline = time.monotonic() + timeout
    pause = _FIRST_PAUSE
    while True:
        current = await call("lease", session_id, lambda conn: _try_take(conn, session_id, holder, ttl_us))
        if current is None:
            break
        left = deadline - time.monotonic()
        if left <= 0:
            raise SessionLeaseTimeout(session_id, timeout=timeout, holder=str(current))
        await asyncio.sleep(min(left, pause * random.uniform(0.5, 1.5)))
        pause = min(pause * 2, _MAX_PAUSE)
    renewer = asyncio.create_task(_keep_renewed(call, session_id, holder, ttl_us))
    try:
        yield
    finally:
        renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewer
        try:
            await call("lease", session_id, lambda conn: _release(conn, session_id, holder))
        except Exception as exc:  # the row expires (or its dead holder is detected) anyway
            log.warning("could not release the lease of session %r: %s", session_id, exc)


async def _keep_renewed(call: Call[object], session_id: str, holder: str, ttl_us: int) -> None:
    while True:
        await asyncio.sleep(ttl_us / 3_000_000)
        try:
            still_ours = await call("lease", session_id, lambda conn: _renew(conn, session_id, holder, ttl_us))
        except Exception as exc:
            log.warning("could not renew the lease of session %r: %s", session_id, exc)
            continue
        if not still_ours:  # expired and taken over; compare-and-swap still guards our saves
            log.warning("the lease of session %r was taken over by another worker", session_id)
            return
