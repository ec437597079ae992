"""The session lease of ``PostgresStore``: a session-level advisory lock on a lease connection.

A lease takes a connection from a pool of its own (so held leases never starve the store's
reads and writes) and, in one statement, sets ``lock_timeout`` to the lease timeout and takes
``pg_advisory_lock`` on a 64-bit hash of ``tether-lease:<schema>:<session id>``. The body runs
with the connection held; ``pg_advisory_unlock`` ends it, and the connection goes back to the
pool. Taking and releasing are one round trip each. When the holder dies (SIGKILL, a lost host)
its connection closes and the server releases the lock at once; a release that fails closes the
connection for the same effect, so a pooled connection never carries a lock.

``Store.lease_and_load`` reads the document in the same round trip as the take: the lock and the
read are two statements of one simple-protocol query, so the read's snapshot is taken after the
lock is granted (one statement would read with a snapshot taken before its wait). The release can
ride on the request's final save (``Store.save_and_release``, see ``_postgres_io``).

Two sessions whose keys hash alike merely wait for each other; correctness never depends on
the hash (compare-and-swap still guards every save).

A lease connection is taken as the store's others are (``_postgres_pool.take``): a database that
cannot be reached fails the take with ``StoreError`` once the store's connect wait has passed;
only a lease another connection holds, or a lease pool whose connections all hold leases for the
whole timeout, is ``SessionLeaseTimeout``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from tether.errors import SessionLeaseTimeout
from tether.stores._postgres_pool import Reach, discard, take
from tether.stores.base import backend_errors

if TYPE_CHECKING:
    from psycopg import sql
    from psycopg_pool import AsyncConnectionPool

    from tether.stores._postgres_io import Conn

__all__ = ["PostgresLease", "hold_postgres_lease"]

log = logging.getLogger("tether.stores")


class PostgresLease:
    """One holding of a session's advisory lock: its connection, its key, what the take read."""

    def __init__(self, pool: AsyncConnectionPool[Conn], conn: Conn, key: str, session_id: str,
                 found: list[Any] | None) -> None:
        self.pool = pool
        self.conn = conn
        self.key = key
        self.session_id = session_id
        self.found = found  # the rows of the read made with the take (None: no read)
        self.released = False

    async def release(self) -> None:
        """Unlock and give the connection back (a failure closes it: the lock goes with it)."""
        if self.released:
            return
        self.released = True
        try:
            cur = await self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.key,))
            row = await cur.fetchone()
            if not (row and row[0]):
                raise RuntimeError("the lock was not held")
        except BaseException as exc:
            log.warning("could not release the lease of session %r cleanly: %s", self.session_id, exc)
            await discard(self.pool, self.conn)
        else:
            await self.pool.putconn(self.conn)

    async def released_by_save(self) -> None:
        """The save unlocked it: give the connection back."""
        self.released = True
        await self.pool.putconn(self.conn)


@asynccontextmanager
async def hold_postgres_lease(
    pool: AsyncConnectionPool[Conn],
    schema: str,
    session_id: str,
    *,
    timeout: float,
    errors: tuple[type[BaseException], ...],
    reach: Reach,
    reach_wait: float,
    read: sql.Composable | None = None,
) -> AsyncIterator[PostgresLease]:
    """Hold the advisory lock of ``session_id`` for the body (``read``, a statement with its
    values inlined, runs right after the lock in the same round trip; its rows in ``found``).

    Raises ``SessionLeaseTimeout`` when another worker holds it for ``timeout`` seconds (or every
    lease connection stays in use that long); ``StoreError`` when the database cannot be reached
    for ``reach_wait`` seconds (``reach`` says why), and for backend ``errors`` while taking it.
    A failure to release is logged: the lock goes with the closed connection.
    """
    key = f"tether-lease:{schema}:{session_id}"
    with backend_errors(errors, "lease", session_id):
        lease = await _take(pool, reach, reach_wait, key, session_id, timeout, read)
    try:
        yield lease
    finally:
        await lease.release()


async def _take(pool: AsyncConnectionPool[Conn], reach: Reach, reach_wait: float, key: str, session_id: str,
                timeout: float, read: sql.Composable | None) -> PostgresLease:
    """A pool connection that holds the session's advisory lock ``key``."""
    import psycopg
    from psycopg import sql
    from psycopg_pool import PoolTimeout

    try:  # a database that cannot be reached is StoreError (raised by take), not a busy session
        conn = await take(pool, reach, wait=timeout, reach_wait=reach_wait, operation="lease", session_id=session_id)
    except PoolTimeout:
        raise SessionLeaseTimeout(session_id, timeout=timeout, holder="no free lease connection") from None
    found: list[Any] | None = None
    try:
        # the select list runs in order: the timeout is set before the wait
        lock = sql.SQL("SELECT set_config('lock_timeout', {}, false), pg_advisory_lock(hashtextextended({}, 0))")
        locking = lock.format(sql.Literal(f"{max(1, int(timeout * 1000))}ms"), sql.Literal(key))
        if read is None:
            await conn.execute(locking, prepare=False)
        else:  # no parameters, never prepared: the simple protocol runs both statements in one round trip
            cur = await conn.execute(sql.SQL("; ").join([locking, read]), prepare=False)
            cur.nextset()
            found = await cur.fetchall()
    except BaseException as exc:
        await discard(pool, conn)
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            raise SessionLeaseTimeout(session_id, timeout=timeout, holder="another connection") from None
        raise
    return PostgresLease(pool, conn, key, session_id, found)

