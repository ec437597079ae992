"""The session lease of ``PostgresStore``: a session-level advisory lock on a lease connection.

A lease takes a connection from a pool of its own (so held leases never starve the store's
reads and writes) and, in one statement, sets ``lock_timeout`` to the lease timeout and takes
``pg_advisory_lock`` on a 64-bit hash of ``tether-lease:<schema>:<session id>``. The body runs
with the connection held; ``pg_advisory_unlock`` ends it, and the connection goes back to the
pool. Taking and releasing are one round trip each. When the holder dies (SIGKILL, a lost host)
its connection closes and the server releases the lock at once; a release that fails closes the
connection for the same effect, so a pooled connection never carries a lock.

Two sessions whose keys hash alike merely wait for each other; correctness never depends on
the hash (compare-and-swap still guards every save).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from tether.errors import SessionLeaseTimeout
from tether.stores.base import backend_errors

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from tether.stores._postgres_io import Conn

__all__ = ["hold_postgres_lease"]

log = logging.getLogger("tether.stores")


@asynccontextmanager
async def hold_postgres_lease(
    pool: AsyncConnectionPool[Conn],
    schema: str,
    session_id: str,
    *,
    timeout: float,
    errors: tuple[type[BaseException], ...],
) -> AsyncIterator[None]:
    """Hold the advisory lock of ``session_id`` for the body.

    Raises ``SessionLeaseTimeout`` when another worker holds it for ``timeout`` seconds (or no
    lease connection frees up in that time); backend ``errors`` while taking it become
    ``StoreError``. A failure to release is logged: the lock goes with the closed connection.
    """
    key = f"tether-lease:{schema}:{session_id}"
    with backend_errors(errors, "lease", session_id):
        conn = await _take(pool, key, session_id, timeout)
    try:
        yield
    finally:
        try:
            cur = await conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
            row = await cur.fetchone()
            if not (row and row[0]):
                raise RuntimeError("the lock was not held")
        except BaseException as exc:
            log.warning("could not release the lease of session %r cleanly: %s", session_id, exc)
            await _discard(pool, conn)
        else:
            await pool.putconn(conn)


async def _take(pool: AsyncConnectionPool[Conn], key: str, session_id: str, timeout: float) -> Conn:
    """A pool connection that holds the session's advisory lock ``key``."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        conn = await pool.getconn(timeout=timeout)
    except PoolTimeout:
        raise SessionLeaseTimeout(session_id, timeout=timeout, holder="no free lease connection") from None
    try:
        await conn.execute(  # the select list runs in order: the timeout is set before the wait
            "SELECT set_config('lock_timeout', %s, false), pg_advisory_lock(hashtextextended(%s, 0))",
            (f"{max(1, int(timeout * 1000))}ms", key),
        )
    except BaseException as exc:
        await _discard(pool, conn)
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            raise SessionLeaseTimeout(session_id, timeout=timeout, holder="another connection") from None
        raise
    return conn


async def _discard(pool: AsyncConnectionPool[Conn], conn: Conn) -> None:
    """Close ``conn`` (the server drops its locks) and hand it back so the pool replaces it."""
    with contextlib.suppress(Exception):
        await conn.close()
    with contextlib.suppress(Exception):
        await pool.putconn(conn)
