"""``PostgresStore``: sessions in PostgreSQL, safe across any number of processes and hosts.

Uses psycopg 3 (async) with a ``psycopg_pool.AsyncConnectionPool``. The compare-and-swap is
``UPDATE ... WHERE id = %s AND revision = %s`` (the row lock serializes racing writers, the loser
matches no row); wakes are claimed with ``SELECT ... FOR UPDATE SKIP LOCKED``; the session lease
is an advisory lock held on a connection of a second, lease-only pool (see ``_postgres_lease``).
Connections get TCP keepalives and ``tcp_user_timeout`` unless the URL sets its own, are checked
before they are handed out, and the pools reconnect about a second after the database answers
again (see ``_postgres_pool``). psycopg is imported lazily: install it with
``pip install 'tether[postgres]'``.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, SessionFlowMismatch, StoreError
from tether.stores._postgres_io import (
    create_in_one_round_trip,
    one_statement_save,
    save_in_one_round_trip,
    save_in_one_statement,
    wake_from_row,
)
from tether.stores._postgres_lease import PostgresLease, hold_postgres_lease
from tether.stores._postgres_pool import Reach, first_connection, libpq_options, new_pool, take
from tether.stores._postgres_schema import TENANT, migrate, quote_schema
from tether.stores.base import ClockLike, Store, backend_errors, flushes, messages_from_rows, utc
from tether.stores.conversation_keys import postgres_find_key, postgres_put_key
from tether.stores.flow_versions import FlowVersion, Status, StoredFlow, postgres_flows, postgres_put
from tether.stores.leases import DEFAULT_LEASE_TIMEOUT, Leased
from tether.stores.record_forms import events_from_row, journal_from_row, page_of_rows
from tether.stores.records import (
    JournalEntry,
    QueuedRun,
    SessionSummary,
    StoredEvent,
    TurnRecords,
    Wake,
)
from tether.stores.run_queue import postgres_queued, postgres_release, postgres_renew, postgres_take

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

    from tether.stores._postgres_io import Conn

__all__ = ["PostgresStore"]

_INSTALL_HINT = "PostgresStore needs psycopg 3 and psycopg-pool: pip install 'tether[postgres]'"
# one statement, so the document and its parts are read from one snapshot (``{s}``: the schema)
_READ_DOC = (
    "SELECT doc::text, revision, (SELECT json_agg(json_build_array(path, name, body))::text "
    "FROM {s}.tether_parts WHERE session_id = d.id) FROM {s}.tether_sessions AS d WHERE id = %s"
)
_RECORD_TABLES = ("tether_messages", "tether_events", "tether_journal", "tether_wakes", "tether_parts",
                  "tether_conversations", "tether_run_queue")


def _backend_errors() -> tuple[type[BaseException], ...]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(_INSTALL_HINT, operation="open") from exc
    return (psycopg.Error, psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed, OSError)


class PostgresStore(Store):
    """A store in a PostgreSQL database (tables created or migrated on first use).

    Args:
        url: a libpq connection string or URL, ``postgresql://user@host:5432/db``.
        pool_size: the most connections this store holds open for reads and writes; held
            session leases use a second pool of up to ``pool_size`` connections.
        schema: the PostgreSQL schema holding the tables (created if missing).
        clock: stamps ``saved_at`` (default: the system clock, UTC).
        connect_timeout: seconds to wait for the first connection, and for a connection while
            the database cannot be reached (then the call fails with ``StoreError``). A failure
            to connect that no retry mends (authentication, a missing database) fails at once.
    """

    document_parts = True

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        schema: str = "public",
        clock: ClockLike | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(clock=clock)
        self._errors = _backend_errors()
        self.url = url
        self.schema = schema
        self._s = quote_schema(schema)
        self._pool_size = pool_size
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._lease_pool: AsyncConnectionPool[Conn] | None = None
        self._reach = Reach()  # what the latest attempt to connect said
        self._options: dict[str, str] = {}
        self._open_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        pool_size: int = 10,
        schema: str = "public",
        clock: ClockLike | None = None,
        connect_timeout: float = 10.0,
    ) -> PostgresStore:
        """Construct a store, connect and create or migrate its tables now."""
        store = cls(url, pool_size=pool_size, schema=schema, clock=clock, connect_timeout=connect_timeout)
        await store._ensure_pool()
        return store

    # ------------------------------------------------------------------ plumbing

    async def _ensure_pool(self) -> AsyncConnectionPool[Conn]:
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._closed:
                raise StoreError("store is closed", operation="open")
            if self._pool is None:
                self._options = libpq_options(self.url)
                # connected directly: a URL no retry mends fails now, with libpq's reason
                conn = await first_connection(self.url, self._options, self._reach, wait=self._connect_timeout)
                with backend_errors(self._errors, "open"):
                    try:
                        await migrate(conn, self.schema)
                    finally:
                        await conn.close()
                    pool = self._new_pool(min_size=1, name=f"tether-{self.schema}")
                    try:
                        await pool.open(wait=False)
                    except BaseException:
                        await pool.close()
                        raise
                self._pool = pool
        return self._pool

    def _new_pool(self, *, min_size: int, name: str) -> AsyncConnectionPool[Conn]:
        return new_pool(self.url, self._options, self._reach, min_size=min_size, max_size=self._pool_size,
                        name=name, timeout=self._connect_timeout)

    async def _ensure_lease_pool(self) -> AsyncConnectionPool[Conn]:
        await self._ensure_pool()  # the tables exist and the server answers
        async with self._open_lock:
            if self._closed:
                raise StoreError("store is closed", operation="lease")
            if self._lease_pool is None:
                # one connection kept open, as the main pool does: the first lease after an
                # outage finds the pool reconnecting already
                pool = self._new_pool(min_size=1, name=f"tether-{self.schema}-leases")
                with backend_errors(self._errors, "lease"):
                    await pool.open(wait=False)
                self._lease_pool = pool
            return self._lease_pool

    @asynccontextmanager
    async def _connection(self, operation: str, session_id: str | None = None) -> AsyncIterator[Conn]:
        if self._closed:
            raise StoreError("store is closed", operation=operation)
        pool = await self._ensure_pool()
        with backend_errors(self._errors, operation, session_id):
            conn = await take(pool, self._reach, wait=self._connect_timeout, reach_wait=self._connect_timeout,
                              operation=operation, session_id=session_id)
            try:
                async with conn:  # as the pool's own connection(): roll back a failed transaction
                    yield conn
            finally:
                await pool.putconn(conn)

    @asynccontextmanager
    async def _transaction(self, operation: str, session_id: str | None = None) -> AsyncIterator[Conn]:
        async with self._connection(operation, session_id) as conn, conn.transaction():
            yield conn

    async def _fetchall(self, operation: str, session_id: str | None, sql: str, params: Any) -> list[Any]:
        async with self._connection(operation, session_id) as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    # ------------------------------------------------------------------ the lease

    def lease(
        self, session_id: str, *, timeout: float = DEFAULT_LEASE_TIMEOUT
    ) -> AbstractAsyncContextManager[None]:
        """Hold the session's advisory lock (see ``Store.lease`` and ``_postgres_lease``)."""
        return self._lease(session_id, timeout)

    @asynccontextmanager
    async def _lease(self, session_id: str, timeout: float) -> AsyncIterator[None]:
        if self._closed:
            raise StoreError("store is closed", operation="lease")
        pool = await self._ensure_lease_pool()
        async with hold_postgres_lease(pool, self.schema, session_id, timeout=timeout, errors=self._errors,
                                       reach=self._reach, reach_wait=self._connect_timeout):
            yield

    @asynccontextmanager
    async def lease_and_load(
        self, session_id: str, *, timeout: float = DEFAULT_LEASE_TIMEOUT
    ) -> AsyncIterator[Leased]:
        """The advisory lock taken and the document read in one round trip (see ``Store.lease_and_load``)."""
        from psycopg import sql

        if self._closed:
            raise StoreError("store is closed", operation="lease")
        pool = await self._ensure_lease_pool()
        read = sql.SQL(_READ_DOC.replace("{s}", self._s).replace("%s", "{}")).format(sql.Literal(session_id))
        async with hold_postgres_lease(pool, self.schema, session_id, timeout=timeout, errors=self._errors,
                                       reach=self._reach, reach_wait=self._connect_timeout, read=read) as lease:
            rows = lease.found or []
            yield self._leased(session_id, (rows[0][0], rows[0][1], rows[0][2]) if rows else None, lease.release,
                               lease)

    async def save_and_release(
        self, session: Session, expected_revision: int, records: TurnRecords | None, held: Leased
    ) -> Session:
        """The save on the lease's connection, committed and then unlocked in the same round trip
        (a save that schedules or cancels wakes saves, then releases)."""
        lease = held.backend
        if (held.released or not isinstance(lease, PostgresLease) or lease.pool is not self._lease_pool
                or not one_statement_save(records)):
            return await super().save_and_release(session, expected_revision, records, held)
        stored, text = self._prepare(session, revision=expected_revision + 1, operation="save")
        row = (stored.id, stored.agent, stored.status, stored.revision, stored.saved_at, text)
        with backend_errors(self._errors, "save", stored.id):
            if not await save_in_one_statement(lease.conn, self._s, row, expected_revision, records, lease.key):
                await self._explain_failed_save(lease.conn, stored, expected_revision)
        held.mark_released()
        await lease.released_by_save()
        return stored

    # ------------------------------------------------------------------ the document

    async def load(self, session_id: str) -> Session | None:
        rows = await self._fetchall("load", session_id, _READ_DOC.replace("{s}", self._s), (session_id,))
        return self._decode(session_id, rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        stored, text = self._prepare(session, revision=0, operation="create")
        row = (stored.id, stored.agent, stored.status, utc(stored.created_at), stored.saved_at, text)
        async with self._connection("create", stored.id) as conn:  # one round trip (a pipeline)
            if not await create_in_one_round_trip(conn, self._s, row, records):
                raise SessionConflict(stored.id, expected=None, operation="create")
        return stored

    async def save(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        return await self._save(session, expected_revision, records)

    async def save_checkpoint(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        """The save checked without a parse and, unless it carries journal entries, committed with
        ``synchronous_commit = off`` for its transaction (no wait for the WAL flush: see
        ``Store.save_checkpoint``)."""
        return await self._save(session, expected_revision, records, flush=flushes(records), checked=False)

    async def _save(
        self, session: Session, expected_revision: int, records: TurnRecords | None, *, flush: bool = True,
        checked: bool = True,
    ) -> Session:
        # a checkpoint is checked without a parse: its turn's final save parses
        stored, text = self._prepare(session, revision=expected_revision + 1, operation="save", checked=checked)
        row = (stored.id, stored.agent, stored.status, stored.revision, stored.saved_at, text)
        async with self._connection("save", stored.id) as conn:
            if one_statement_save(records):
                swapped = await save_in_one_statement(conn, self._s, row, expected_revision, records, flush=flush)
            else:  # wakes, parts or the run queue: a transaction, sent as one pipeline
                swapped = await save_in_one_round_trip(conn, self._s, row, expected_revision, records, flush=flush)
            if not swapped:
                await self._explain_failed_save(conn, stored, expected_revision)
        return stored

    async def _explain_failed_save(self, conn: Conn, stored: Session, expected: int) -> None:
        cur = await conn.execute(f"SELECT revision, agent FROM {self._s}.tether_sessions WHERE id = %s", (stored.id,))
        row = await cur.fetchone()
        if row is not None and row[0] == expected and row[1] != stored.agent:
            raise SessionFlowMismatch(stored.id, bound=row[1], requested=stored.agent)
        raise SessionConflict(stored.id, expected=expected, actual=row[0] if row else None, operation="save")

    async def delete(self, session_id: str, expected_revision: int | None = None) -> None:
        async with self._transaction("delete", session_id) as conn:
            if expected_revision is None:
                await conn.execute(f"DELETE FROM {self._s}.tether_sessions WHERE id = %s", (session_id,))
            else:
                cur = await conn.execute(
                    f"DELETE FROM {self._s}.tether_sessions WHERE id = %s AND revision = %s",
                    (session_id, expected_revision),
                )
                if cur.rowcount != 1:
                    cur = await conn.execute(
                        f"SELECT revision FROM {self._s}.tether_sessions WHERE id = %s", (session_id,)
                    )
                    row = await cur.fetchone()
                    raise SessionConflict(
                        session_id,
                        expected=expected_revision,
                        actual=row[0] if row else None,
                        operation="delete",
                    )
            for table in _RECORD_TABLES:
                await conn.execute(f"DELETE FROM {self._s}.{table} WHERE session_id = %s", (session_id,))

    async def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 100,
        agent_prefix: str | None = None, tenant: str | None = None, after: tuple[datetime, str] | None = None,
    ) -> builtins.list[SessionSummary]:
        where = ["(%(agent)s::text IS NULL OR agent = %(agent)s)", "(%(status)s::text IS NULL OR status = %(status)s)"]
        pattern = None
        if agent_prefix:  # LIKE 'prefix%' takes the text_pattern_ops index whatever the collation
            pattern = agent_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("agent LIKE %(pattern)s ESCAPE '\\'")
        if tenant is not None:
            where.append(f"{TENANT} = %(tenant)s")
        if after is not None:
            where.append("(saved_at < %(at)s OR (saved_at = %(at)s AND id > %(id)s))")
        rows = await self._fetchall(
            "list",
            None,
            f"SELECT id, agent, status, revision, created_at, saved_at FROM {self._s}.tether_sessions "
            f"WHERE {' AND '.join(where)} ORDER BY saved_at DESC, id LIMIT %(limit)s",
            {"agent": agent, "status": status, "limit": limit, "pattern": pattern, "tenant": tenant,
             "at": after[0] if after else None, "id": after[1] if after else None},
        )
        return [
            SessionSummary(
                id=r[0], agent=r[1], status=r[2], revision=r[3], created_at=utc(r[4]), saved_at=utc(r[5])
            )
            for r in rows
        ]

    async def prune(self, *, older_than: datetime) -> int:
        async with self._transaction("prune") as conn:
            cur = await conn.execute(
                f"DELETE FROM {self._s}.tether_sessions "
                "WHERE status IN ('completed', 'aborted') AND saved_at < %s "
                "RETURNING id",
                (utc(older_than),),
            )
            ids = [r[0] for r in await cur.fetchall()]
            if ids:
                for table in _RECORD_TABLES:
                    await conn.execute(f"DELETE FROM {self._s}.{table} WHERE session_id = ANY(%s)", (ids,))
        return len(ids)

    # ------------------------------------------------------------------ records

    async def transcript(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[TranscriptMessage]:
        rows = await self._fetchall(
            "transcript",
            session_id,
            f"SELECT body::text FROM {self._s}.tether_messages WHERE session_id = %s AND seq > %s "
            "ORDER BY seq LIMIT %s",
            (session_id, after_seq, limit),
        )
        return messages_from_rows(r[0] for r in rows)

    async def events(self, session_id: str, *, after: int = 0, limit: int | None = None,
                     newest: int | None = None) -> builtins.list[StoredEvent]:
        rows = await self._fetchall(
            "events",
            session_id,
            # a row holds one or more events past ``after``: N rows hold N events
            f"SELECT seq, at, body::text FROM {self._s}.tether_events "
            f"WHERE session_id = %s AND seq > %s ORDER BY seq {'DESC' if newest is not None else ''} LIMIT %s",
            (session_id, after, newest if newest is not None else limit),
        )
        return page_of_rows(rows[::-1] if newest is not None else rows,
                            lambda r: events_from_row(r[0], utc(r[1]), r[2], after=after), limit, newest)

    async def journal(self, session_id: str, *, run_id: str | None = None) -> builtins.list[JournalEntry]:
        rows = await self._fetchall(
            "journal",
            session_id,
            f"SELECT key, run_id, body::text FROM {self._s}.tether_journal WHERE session_id = %(sid)s "
            "AND (%(run)s::text IS NULL OR run_id = %(run)s) ORDER BY id",
            {"sid": session_id, "run": run_id},
        )
        return [journal_from_row(session_id, r[0], r[1], r[2]) for r in rows]

    # ------------------------------------------------------------------ wakes

    async def due_wakes(
        self, now: datetime, *, limit: int = 100, lease: float = 30.0, worker: str = ""
    ) -> builtins.list[Wake]:
        now = utc(now)
        s = self._s
        async with self._transaction("due_wakes") as conn:
            cur = await conn.execute(
                f"WITH due AS (SELECT session_id, key FROM {s}.tether_wakes "
                "WHERE at <= %(now)s AND (leased_until IS NULL OR leased_until <= %(now)s) "
                "ORDER BY at LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
                f"UPDATE {s}.tether_wakes w SET leased_until = %(until)s, worker = %(worker)s FROM due "
                "WHERE w.session_id = due.session_id AND w.key = due.key "
                "RETURNING w.session_id, w.key, w.at, w.leased_until, w.worker",
                {"now": now, "limit": limit, "until": now + timedelta(seconds=lease), "worker": worker},
            )
            rows = await cur.fetchall()
        wakes = [wake_from_row(r) for r in rows]
        wakes.sort(key=lambda w: (w.at, w.session_id, w.key))
        return wakes

    async def complete_wake(self, wake: Wake) -> None:
        async with self._connection("complete_wake", wake.session_id) as conn:
            await conn.execute(
                f"DELETE FROM {self._s}.tether_wakes "
                "WHERE session_id = %s AND key = %s AND at = %s AND worker = %s",
                (wake.session_id, wake.key, utc(wake.at), wake.worker),
            )

    async def pending_wakes(self, session_id: str | None = None) -> builtins.list[Wake]:
        rows = await self._fetchall(
            "pending_wakes",
            session_id,
            f"SELECT session_id, key, at, leased_until, worker FROM {self._s}.tether_wakes "
            "WHERE %(sid)s::text IS NULL OR session_id = %(sid)s ORDER BY at, session_id, key",
            {"sid": session_id},
        )
        return [wake_from_row(r) for r in rows]

    # ------------------------------------------------------------------ the run queue

    async def take_runs(
        self, now: datetime, *, limit: int = 1, lease: float = 30.0, worker: str = "", agent: bool = True
    ) -> builtins.list[QueuedRun]:
        now = utc(now)
        async with self._transaction("take_runs") as conn:
            return await postgres_take(conn, self._s, now, now + timedelta(seconds=lease), worker, limit, agent, utc)

    async def renew_run(self, run: QueuedRun, now: datetime, *, lease: float = 30.0) -> bool:
        async with self._connection("renew_run", run.session_id) as conn:
            return await postgres_renew(conn, self._s, run, utc(now) + timedelta(seconds=lease))

    async def release_run(self, run: QueuedRun, work: str | None = None) -> None:
        async with self._connection("release_run", run.session_id) as conn:
            await postgres_release(conn, self._s, run, work)

    async def queued_runs(self, session_id: str | None = None) -> builtins.list[QueuedRun]:
        async with self._connection("queued_runs", session_id) as conn:
            return await postgres_queued(conn, self._s, session_id, utc)

    async def put_flows(self, agent: str, bundle: Iterable[FlowVersion]) -> None:
        rows = builtins.list(bundle)
        async with self._transaction("put_flows") as conn:
            await postgres_put(conn, self._s, agent, rows, self.now())

    async def active_flows(self, agent: str) -> builtins.list[StoredFlow]:
        return await self._flows("active_flows", agent, "active")

    async def superseded_flows(self, agent: str) -> builtins.list[StoredFlow]:
        return await self._flows("superseded_flows", agent, "superseded")

    async def _flows(self, operation: str, agent: str, wanted: Status) -> builtins.list[StoredFlow]:
        async with self._connection(operation) as conn:
            rows = await postgres_flows(conn, self._s, agent, wanted)
        return [StoredFlow(seq, agent_id, flow, version, digest, document, status, utc(at))
                for seq, agent_id, flow, version, digest, document, status, at in rows]

    async def put_conversation(self, key: str, session_id: str) -> None:
        async with self._transaction("put_conversation", session_id) as conn:
            await postgres_put_key(conn, self._s, key, session_id, self.now())

    async def find_conversation(self, key: str) -> str | None:
        async with self._connection("find_conversation") as conn:
            return await postgres_find_key(conn, self._s, key)

    async def close(self) -> None:
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
            lease_pool, self._lease_pool = self._lease_pool, None
        for open_pool in (lease_pool, pool):
            if open_pool is not None:
                await open_pool.close()
