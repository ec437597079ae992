"""The connections of ``PostgresStore``: how they are made, pooled, handed out and first opened.

* ``libpq_options``: TCP keepalives, ``tcp_user_timeout`` and ``connect_timeout`` by default (a
  URL that sets one keeps its own), so a peer that vanishes without a reset (a network that stops
  forwarding, a host that is gone) fails the connection's query within about ten seconds instead
  of leaving it to wait for ever.
* ``Reach``: what the latest attempt to connect said, so a wait for a connection that ends with
  none says that the database could not be reached, and why.
* ``new_pool``: a pool whose reconnection attempts give up after ``RECONNECT`` seconds. psycopg's
  pool retries with a doubling backoff (1, 2, 4, 8 s...): after an outage of 20 s its next try
  could come 10 s after the database is back. Here a chain of tries is short, and the next
  request that waits starts a new one at once, so the pool reconnects about a second after the
  database answers again.
* ``take``: a live connection, waiting in slices of ``SLICE`` seconds (each slice's wait starts
  a new chain of tries when the last one gave up), checked here rather than by the pool, so dead
  connections left by an outage are dropped one after the other without the pool's backoff
  between them. It fails with ``StoreError`` once the database has been unreachable for the
  store's connect wait, whatever the caller would wait for a free connection.
* ``first_connection``: the store's first connection, made directly, so an error no retry can fix
  (authentication, a missing database or role, a malformed URL) fails at once with libpq's own
  words, and one a retry may fix (a refused connection, a timeout) is retried for the connect
  wait and then reported with its cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import time
from typing import TYPE_CHECKING, Any, Self

from tether.errors import StoreError

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from tether.stores._postgres_io import Conn

__all__ = ["LIBPQ_DEFAULTS", "RECONNECT", "SLICE", "Reach", "discard", "first_connection", "libpq_options",
           "new_pool", "take"]

LIBPQ_DEFAULTS = {
    "connect_timeout": "5",  # seconds for one attempt to connect (each host of the URL)
    "keepalives": "1",
    "keepalives_idle": "5",  # an idle connection is probed after 5 s of silence...
    "keepalives_interval": "2",  # ...then every 2 s...
    "keepalives_count": "3",  # ...and is dead after 3 probes unanswered (about 11 s)
    "tcp_user_timeout": "10000",  # ms: data the peer has not acknowledged for 10 s: dead
}
"""libpq options every connection gets unless the URL sets them (``?keepalives_idle=30``...)."""

_FROM_ENVIRONMENT = {"connect_timeout": "PGCONNECT_TIMEOUT"}  # libpq reads these when not given

RECONNECT = 2.0
"""Seconds a pool's chain of reconnection attempts lasts (attempts about a second apart)."""

SLICE = 1.0
"""Seconds ``take`` waits for the pool at a time."""

# libpq's words for failures no retry mends (the server's are in English unless lc_messages says
# otherwise; then they are retried for the connect wait, and reported as they are)
_PERMANENT = re.compile(r"authentication failed|pg_hba\.conf|does not exist|permission denied|SSL was required"
                        r"|invalid [\w ]*(value|option|parameter|number)")


def libpq_options(url: str) -> dict[str, str]:
    """The ``LIBPQ_DEFAULTS`` that ``url`` (and the environment) leave unset."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = conninfo_to_dict(url)
    except Exception:  # a malformed URL: connecting says what is wrong with it
        return {}
    return {name: value for name, value in LIBPQ_DEFAULTS.items()
            if name not in given and _FROM_ENVIRONMENT.get(name, "") not in os.environ}


def cause(exc: BaseException) -> str:
    """``exc`` as libpq or psycopg put it, on one line."""
    text = str(exc) or type(exc).__name__
    return " ".join(text.removeprefix("connection failed: ").split())


def permanent(exc: BaseException) -> bool:
    """True for a failure to connect that trying again cannot mend."""
    import psycopg

    if isinstance(exc, psycopg.ProgrammingError):  # a malformed URL or option
        return True
    return _PERMANENT.search(str(exc)) is not None


class Reach:
    """What the latest attempt to connect to the database said (any pool of the store, or its
    first connection)."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def failed(self, exc: BaseException) -> None:
        self.error = exc

    def connected(self) -> None:
        self.error = None

    @property
    def failing(self) -> bool:
        """True when the latest attempt failed."""
        return self.error is not None

    def unreachable(self, operation: str, session_id: str | None, waited: float) -> StoreError:
        """The error of a request that waited ``waited`` seconds for a connection and got none."""
        why = cause(self.error) if self.error is not None else "no connection"
        return StoreError(f"store {operation} failed: cannot reach the database (no connection for "
                          f"{waited:.0f}s): {why}", operation=operation, session_id=session_id)


def _recording(reach: Reach) -> type[Conn]:
    """A connection class that tells ``reach`` how each attempt to connect went."""
    import psycopg

    class RecordedConnection(psycopg.AsyncConnection[tuple[Any, ...]]):
        @classmethod
        async def connect(cls, *args: Any, **kwargs: Any) -> Self:
            try:
                conn = await super().connect(*args, **kwargs)
            except Exception as exc:
                reach.failed(exc)
                raise
            reach.connected()
            return conn

    RecordedConnection.__module__, RecordedConnection.__qualname__ = "tether.stores.postgres", "Connection"  # in logs
    return RecordedConnection


def new_pool(url: str, options: dict[str, str], reach: Reach, *, min_size: int, max_size: int, name: str,
             timeout: float) -> AsyncConnectionPool[Conn]:
    """A pool of autocommit connections to ``url`` with ``options`` (not opened yet)."""
    from psycopg_pool import AsyncConnectionPool

    pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
        url,
        connection_class=_recording(reach),
        min_size=min_size,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True, **options},
        timeout=timeout,
        reconnect_timeout=RECONNECT,
        name=name,
    )
    return pool


async def take(pool: AsyncConnectionPool[Conn], reach: Reach, *, wait: float, reach_wait: float,
               operation: str, session_id: str | None = None) -> Conn:
    """A live connection of ``pool`` (give it back with ``pool.putconn``).

    Waits up to ``wait`` seconds for one. Raises ``StoreError`` (the database cannot be reached)
    when the latest attempt to connect failed and ``reach_wait`` seconds (or ``wait``) have
    passed; ``psycopg_pool.PoolTimeout`` when the pool's connections stayed in use for ``wait``.
    """
    from psycopg_pool import PoolTimeout

    start = time.monotonic()
    deadline = start + wait
    while True:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise PoolTimeout(f"couldn't get a connection after {wait:.2f} sec")
            conn = await pool.getconn(timeout=min(SLICE, left))
        except PoolTimeout:
            now = time.monotonic()
            if reach.failing and (now >= deadline or now - start >= reach_wait):
                raise reach.unreachable(operation, session_id, now - start) from None
            if now >= deadline:
                raise PoolTimeout(f"couldn't get a connection after {wait:.2f} sec") from None
            continue
        try:
            alive = await _alive(conn)
        except BaseException:
            await discard(pool, conn)
            raise
        if alive:
            return conn
        await discard(pool, conn)


async def _alive(conn: Conn) -> bool:
    """False when the server dropped ``conn``, without a round trip when it can tell.

    An idle connection has nothing to read. A server that drops it (a restart, a failover,
    ``pg_terminate_backend``) sends its error and closes the socket, which makes it readable: only
    then is the full check (an empty query) run. A peer that vanishes without a word is found by
    the first query (within ``tcp_user_timeout``), as the full check would find it.
    """
    from psycopg_pool import AsyncConnectionPool

    if conn.closed or conn.broken:
        return False
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if not readable:
        return True
    try:
        await AsyncConnectionPool.check_connection(conn)
    except Exception:
        return False
    return True


async def discard(pool: AsyncConnectionPool[Conn], conn: Conn) -> None:
    """Close ``conn`` (the server drops its locks) and hand it back so the pool replaces it."""
    with contextlib.suppress(Exception):
        await conn.close()
    with contextlib.suppress(Exception):
        await pool.putconn(conn)


async def first_connection(url: str, options: dict[str, str], reach: Reach, *, wait: float) -> Conn:
    """An autocommit connection to ``url``, made now.

    Raises ``StoreError`` naming libpq's reason: at once for a failure no retry mends, after
    ``wait`` seconds of retries (0.25 s apart, doubling up to 2 s) for any other.
    """
    import psycopg
    from psycopg.conninfo import make_conninfo

    deadline = time.monotonic() + wait
    pause = 0.25
    while True:
        left = deadline - time.monotonic()
        try:
            conninfo = make_conninfo(url, **options)
            conn = await asyncio.wait_for(psycopg.AsyncConnection.connect(conninfo, autocommit=True), max(left, 0.1))
        except (psycopg.Error, OSError, TimeoutError) as exc:
            reach.failed(exc)
            why = "the server did not answer" if isinstance(exc, TimeoutError) else cause(exc)
            if permanent(exc):
                raise StoreError(f"store open failed: cannot connect to the database: {why}", operation="open") from exc
            left = deadline - time.monotonic()
            if left <= 0.05:
                raise StoreError(f"store open failed: cannot connect to the database (tried for {wait:g}s): {why}",
                                 operation="open") from exc
            await asyncio.sleep(min(pause, left))  # the last attempt is made at the deadline
            pause = min(pause * 2, 2.0)
            continue
        reach.connected()
        return conn
