"""``SQLiteStore``: the embedded default, one database file in WAL mode.

Durable: the connection runs ``synchronous = FULL`` (every commit of a document or its records is
flushed to disk before it returns; the checkpoints skip the flush, see ``Store.save_checkpoint``).

Grouped commits: every write is a job for the store's thread, and the jobs waiting there together
(writes of different sessions, made by concurrent requests) run in one transaction, each inside a
``SAVEPOINT`` of its own, with one ``COMMIT``: one fsync for the group (none when no job of it needs
a flush: checkpoints only). A job that fails (a stale revision, a duplicate record)
is rolled back to its savepoint alone and its caller gets its error; the others commit. No caller
is answered before the commit that carries its write has returned, so an acknowledged save is on
disk as before; a commit that fails fails every job of its group, with nothing of them written.
Groups form from writes that queued while the previous commit was on its way to the disk, and, for
a commit that must be flushed while other sessions of this process are mid-turn, from their writes
arriving within ``commit_delay`` (1 ms by default: see ``_sqlite_jobs``); a lone session's write
commits at once.
Safe across processes on one host: every write runs inside ``BEGIN IMMEDIATE`` (one writer at a
time, others wait up to ``busy_timeout``) and the compare-and-swap is
``UPDATE ... WHERE id = ? AND revision = ?`` with a rowcount check. The session lease is an
operating-system lock on a byte of a file beside the database, no write at all (see
``_sqlite_lease``). sqlite3 calls run one at a time on
the store's own thread (``_sqlite_thread``), on one connection, so any number of concurrent
asyncio tasks may share a store.
"""

from __future__ import annotations

import builtins
import functools
import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, SessionFlowMismatch, StoreError
from tether.stores._sqlite_io import from_us, insert_records, to_us, wake_from_row
from tether.stores._sqlite_jobs import DEFAULT_COMMIT_DELAY, Job, group_error, siblings
from tether.stores._sqlite_lease import LockFile, SQLiteLease, lock_file
from tether.stores._sqlite_reader import ELSEWHERE, PointReader
from tether.stores._sqlite_schema import TENANT, migrate
from tether.stores._sqlite_thread import ConnectionThread, Linger, Outcome
from tether.stores.base import ClockLike, Store, backend_errors, flushes, messages_from_rows, prefix_bounds, utc
from tether.stores.conversation_keys import sqlite_find_key, sqlite_put_key
from tether.stores.flow_versions import FlowVersion, Status, StoredFlow, sqlite_flows, sqlite_put
from tether.stores.leases import DEFAULT_LEASE_TIMEOUT
from tether.stores.record_forms import events_from_row, journal_from_row, page_of_rows
from tether.stores.records import (
    JournalEntry,
    QueuedRun,
    SessionSummary,
    StoredEvent,
    TurnRecords,
    Wake,
)
from tether.stores.run_queue import sqlite_queued, sqlite_release, sqlite_renew, sqlite_take

__all__ = ["SQLiteStore"]

T = TypeVar("T")
_ERRORS = (sqlite3.Error, OSError)
_RECORD_TABLES = ("tether_messages", "tether_events", "tether_journal", "tether_wakes", "tether_parts",
                  "tether_conversations", "tether_run_queue")
_ENDED = "status IN ('completed', 'aborted') AND saved_at < ?"


# one statement, so the document and its parts are read from one snapshot of the database
_READ_DOC = (
    "SELECT doc, revision, (SELECT json_group_array(json_array(path, name, json(body))) FROM tether_parts "
    "WHERE session_id = s.id) FROM tether_sessions AS s WHERE id = ?"
)


def _read_doc(session_id: str, conn: sqlite3.Connection) -> tuple[str, int, str | None] | None:
    row = conn.execute(_READ_DOC, (session_id,)).fetchone()
    return None if row is None else (row[0], row[1], None if row[2] == "[]" else row[2])


def _enter_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """``PRAGMA journal_mode = WAL``, waiting up to ``timeout`` for other connections opening the
    same new file: the switch needs the file to itself, and SQLite answers "database is locked"
    at once instead of calling the busy handler."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


class SQLiteStore(Store):
    """A store in one SQLite file (created with its parent directory on first use).

    Document parts (``TurnRecords.parts``) are rows of ``tether_parts``, read with the document
    in one statement.

    Args:
        path: the database file.
        clock: stamps ``saved_at`` (default: the system clock, UTC).
        busy_timeout: seconds a write waits for another process's write lock.
        lease_ttl: no longer used (a session lease is an operating-system lock, which ends with
            its process and needs no renewal); giving it warns.
        commit_delay: the longest time, in seconds, a flushed commit waits for the writes of the
            other sessions this process has mid-turn, so that one fsync carries them too (see the
            module notes; 0: never wait).
    """

    document_parts = True

    def __init__(
        self,
        path: str | os.PathLike[str] = ".tether/tether.db",
        *,
        clock: ClockLike | None = None,
        busy_timeout: float = 30.0,
        lease_ttl: float | None = None,
        commit_delay: float = DEFAULT_COMMIT_DELAY,
    ) -> None:
        super().__init__(clock=clock)
        if not commit_delay >= 0:
            raise ValueError(f"commit_delay must be 0 or more seconds, not {commit_delay!r}")
        if lease_ttl is not None:
            warnings.warn("SQLiteStore(lease_ttl=...) is no longer used: a session lease is an operating-system "
                          "lock, released when its process ends", DeprecationWarning, stacklevel=2)
        self.path = Path(path)
        self._busy_ms = int(busy_timeout * 1000)
        self._lease_file: LockFile | None = None  # opened with the first lease
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # the connection's user (the thread; a caller on another thread waits)
        self._reader = PointReader()  # point reads on the caller's thread (``_point_read``)
        self._thread = ConnectionThread(f"tether-sqlite {self.path.name}",
                                        Linger(commit_delay, functools.partial(siblings, weakref.ref(self))))
        self._closed = False

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str] = ".tether/tether.db",
        *,
        clock: ClockLike | None = None,
        busy_timeout: float = 30.0,
        lease_ttl: float | None = None,
        commit_delay: float = DEFAULT_COMMIT_DELAY,
    ) -> SQLiteStore:
        """Construct a store and open the database now (creating or migrating its schema)."""
        store = cls(path, clock=clock, busy_timeout=busy_timeout, lease_ttl=lease_ttl, commit_delay=commit_delay)
        await store._call("open", None, lambda conn: None)
        return store

    # ------------------------------------------------------------------ plumbing

    async def _point_read(self, operation: str, session_id: str | None,
                          fn: Callable[[sqlite3.Connection], T]) -> T:
        """A read of a few rows by key (a document, a session's journal): on the caller's thread
        when the store's thread is idle and the read can be made there without waiting (see
        ``_sqlite_reader``), else on the store's. Under concurrent writes the store's thread
        reads for less: each commit of the store's connection leaves the caller's connection a
        cold page cache (every page read again from the WAL, 30-40 µs of the event loop per read
        here), while the store's connection reads from a warm one (``docs/cost.md``)."""
        if not self._closed and not self._thread.in_flight:
            with backend_errors(_ERRORS, operation, session_id):
                found = self._reader.read(fn)
            if found is not ELSEWHERE:
                return found  # type: ignore[no-any-return]
        return await self._call(operation, session_id, fn)

    async def _call(self, operation: str, session_id: str | None, fn: Callable[[sqlite3.Connection], T]) -> T:
        """A read on the store's thread (it may overtake grouped writes queued before it: see
        ``_sqlite_thread``)."""
        if self._closed:  # refused here: a closed store starts no thread again
            raise StoreError("store is closed", operation=operation)
        return await self._thread.run(functools.partial(self._run, operation, session_id, fn), read=True)

    def _run(self, operation: str, session_id: str | None, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock, backend_errors(_ERRORS, operation, session_id):
            return fn(self._connection(operation))

    def _connection(self, operation: str) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("store is closed", operation=operation)
        if self._conn is None:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
                _enter_wal(conn, self._busy_ms / 1000)
                conn.execute("PRAGMA synchronous = FULL")  # SQLite's default, said: every commit is flushed
                migrate(conn, str(self.path))
                if str(self.path) != ":memory:":  # the reader opens this file, by its absolute name, even
                    # if the process changed its working directory since
                    self._reader.file = str(conn.execute("PRAGMA database_list").fetchone()[2])
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    async def _write(self, operation: str, session_id: str | None, fn: Callable[[sqlite3.Connection], T],
                     *, flush: bool = True) -> T:
        """``fn`` run inside a write transaction, grouped with the other writes waiting on the
        store's thread (see the module notes); ``flush``: its commit waits for the disk."""
        if self._closed:
            raise StoreError("store is closed", operation=operation)
        result: T = await self._thread.run_grouped(Job(operation, session_id, fn, flush), self._commit_group)
        return result

    def _commit_group(self, jobs: builtins.list[Job]) -> builtins.list[Outcome]:
        """Run ``jobs`` in one transaction (one savepoint each when there are several) and commit
        once; on the store's thread."""
        flush = any(job.flush for job in jobs)
        with self._lock:
            try:
                conn = self._connection(jobs[0].operation)
                if not flush:
                    conn.execute("PRAGMA synchronous = NORMAL")  # outside the transaction: SQLite refuses it inside
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    outcomes = [self._run_job(conn, job, alone=len(jobs) == 1) for job in jobs]
                    if conn.in_transaction:  # a lone job that failed rolled it back
                        conn.execute("COMMIT")
                finally:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if not flush:
                        conn.execute("PRAGMA synchronous = FULL")
            except (*_ERRORS, StoreError) as exc:  # the transaction itself failed: nothing of the group is written
                return [(False, group_error(exc, job)) for job in jobs]
        return outcomes

    @staticmethod
    def _run_job(conn: sqlite3.Connection, job: Job, *, alone: bool) -> Outcome:
        if not alone:
            conn.execute("SAVEPOINT job")
        try:
            with backend_errors(_ERRORS, job.operation, job.session_id):
                outcome = job.fn(conn)
        except Exception as exc:
            if alone:
                conn.execute("ROLLBACK")
            else:
                conn.execute("ROLLBACK TO job")
                conn.execute("RELEASE job")
            return False, exc
        if not alone:
            conn.execute("RELEASE job")
        return True, outcome

    # ------------------------------------------------------------------ the lease

    def lease(
        self, session_id: str, *, timeout: float = DEFAULT_LEASE_TIMEOUT
    ) -> AbstractAsyncContextManager[None]:
        """Hold the session's lease: a lock on its byte of the lease file (see ``Store.lease`` and
        ``_sqlite_lease``). ``lease_and_load`` and ``save_and_release`` are ``Store``'s: the take
        and the release write nothing, so there is no transaction to fold them into."""
        return SQLiteLease(self._opened_lease_file, session_id, timeout)

    def _opened_lease_file(self) -> LockFile:
        if self._closed:
            raise StoreError("store is closed", operation="lease")
        if self._lease_file is None:
            self._lease_file = lock_file(self.path)
        return self._lease_file

    # ------------------------------------------------------------------ the document

    async def load(self, session_id: str) -> Session | None:
        found = await self._point_read("load", session_id, functools.partial(_read_doc, session_id))
        return None if found is None else self._decode(session_id, *found)

    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        stored, text = self._prepare(session, revision=0, operation="create")
        assert stored.saved_at is not None
        row = (
            stored.id,
            stored.agent,
            stored.status,
            0,
            to_us(stored.created_at),
            to_us(stored.saved_at),
            text,
        )

        def op(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "INSERT INTO tether_sessions (id, agent, status, revision, created_at, saved_at, doc) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                row,
            )
            if cur.rowcount != 1:
                raise SessionConflict(stored.id, expected=None, operation="create")
            insert_records(conn, stored.id, records)

        await self._write("create", stored.id, op)
        return stored

    async def save(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        return await self._save(session, expected_revision, records)

    async def save_checkpoint(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        """The save checked without a parse and, unless it carries journal entries, committed at
        ``synchronous = NORMAL`` (no fsync: see ``Store.save_checkpoint``)."""
        return await self._save(session, expected_revision, records, flush=flushes(records), checked=False)

    async def _save(
        self, session: Session, expected_revision: int, records: TurnRecords | None, *, flush: bool = True,
        checked: bool = True,
    ) -> Session:
        # a checkpoint is checked without a parse: its turn's final save parses
        stored, text = self._prepare(session, revision=expected_revision + 1, operation="save", checked=checked)
        assert stored.saved_at is not None
        params = (
            stored.status,
            stored.revision,
            to_us(stored.saved_at),
            text,
            stored.id,
            expected_revision,
            stored.agent,
        )

        def op(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "UPDATE tether_sessions SET status = ?, revision = ?, saved_at = ?, doc = ? "
                "WHERE id = ? AND revision = ? AND agent = ?",
                params,
            )
            if cur.rowcount != 1:
                self._explain_failed_save(conn, stored, expected_revision)
            insert_records(conn, stored.id, records)

        await self._write("save", stored.id, op, flush=flush)
        return stored

    @staticmethod
    def _explain_failed_save(conn: sqlite3.Connection, stored: Session, expected: int) -> None:
        row = conn.execute(
            "SELECT revision, agent FROM tether_sessions WHERE id = ?", (stored.id,)
        ).fetchone()
        if row is not None and row[0] == expected and row[1] != stored.agent:
            raise SessionFlowMismatch(stored.id, bound=row[1], requested=stored.agent)
        raise SessionConflict(stored.id, expected=expected, actual=row[0] if row else None, operation="save")

    async def delete(self, session_id: str, expected_revision: int | None = None) -> None:
        def op(conn: sqlite3.Connection) -> None:
            if expected_revision is None:
                conn.execute("DELETE FROM tether_sessions WHERE id = ?", (session_id,))
            else:
                cur = conn.execute(
                    "DELETE FROM tether_sessions WHERE id = ? AND revision = ?",
                    (session_id, expected_revision),
                )
                if cur.rowcount != 1:
                    row = conn.execute(
                        "SELECT revision FROM tether_sessions WHERE id = ?", (session_id,)
                    ).fetchone()
                    raise SessionConflict(
                        session_id,
                        expected=expected_revision,
                        actual=row[0] if row else None,
                        operation="delete",
                    )
            for table in _RECORD_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

        await self._write("delete", session_id, op)

    async def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 100,
        agent_prefix: str | None = None, tenant: str | None = None, after: tuple[datetime, str] | None = None,
    ) -> builtins.list[SessionSummary]:
        where: builtins.list[str] = []
        params: builtins.list[str | int] = []
        if tenant is not None:
            where.append(f"{TENANT} = ?")
            params.append(tenant)
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        if agent_prefix:  # a range on the agent index (text compares by code point)
            low, high = prefix_bounds(agent_prefix)
            where.append("agent >= ? AND agent < ?" if high is not None else "substr(agent, 1, ?) = ?")
            params += [low, high] if high is not None else [len(agent_prefix), agent_prefix]
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if after is not None:
            where.append("(saved_at < ? OR (saved_at = ? AND id > ?))")
            params += [to_us(after[0]), to_us(after[0]), after[1]]
        sql = "SELECT id, agent, status, revision, created_at, saved_at FROM tether_sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY saved_at DESC, id LIMIT ?"

        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            return conn.execute(sql, (*params, limit)).fetchall()

        rows = await self._call("list", None, op)
        return [
            SessionSummary(
                id=r[0],
                agent=r[1],
                status=r[2],
                revision=r[3],
                created_at=from_us(r[4]),
                saved_at=from_us(r[5]),
            )
            for r in rows
        ]

    async def prune(self, *, older_than: datetime) -> int:
        cutoff = to_us(older_than)

        def op(conn: sqlite3.Connection) -> int:
            for table in _RECORD_TABLES:
                conn.execute(
                    f"DELETE FROM {table} WHERE session_id IN "
                    f"(SELECT id FROM tether_sessions WHERE {_ENDED})",
                    (cutoff,),
                )
            return conn.execute(f"DELETE FROM tether_sessions WHERE {_ENDED}", (cutoff,)).rowcount

        return await self._write("prune", None, op)

    # ------------------------------------------------------------------ records

    async def transcript(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[TranscriptMessage]:
        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            return conn.execute(
                "SELECT body FROM tether_messages WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after_seq, -1 if limit is None else limit),
            ).fetchall()

        rows = await self._call("transcript", session_id, op)
        return messages_from_rows(r[0] for r in rows)

    async def events(self, session_id: str, *, after: int = 0, limit: int | None = None,
                     newest: int | None = None) -> builtins.list[StoredEvent]:
        count = newest if newest is not None else limit

        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            # a row holds one or more events past ``after``: ``count`` rows hold ``count`` events
            return conn.execute(
                "SELECT seq, at, body FROM tether_events WHERE session_id = ? AND seq > ? "
                f"ORDER BY seq {'DESC' if newest is not None else ''} LIMIT ?",
                (session_id, after, -1 if count is None else count),
            ).fetchall()

        rows = await self._call("events", session_id, op)
        return page_of_rows(rows[::-1] if newest is not None else rows,
                            lambda r: events_from_row(r[0], from_us(r[1]), r[2], after=after), limit, newest)

    async def journal(self, session_id: str, *, run_id: str | None = None) -> builtins.list[JournalEntry]:
        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            return conn.execute(
                "SELECT key, run_id, body FROM tether_journal "
                "WHERE session_id = ? AND (? IS NULL OR run_id = ?) ORDER BY id",
                (session_id, run_id, run_id),
            ).fetchall()

        rows = await self._point_read("journal", session_id, op)
        return [journal_from_row(session_id, r[0], r[1], r[2]) for r in rows]

    # ------------------------------------------------------------------ wakes

    async def due_wakes(
        self, now: datetime, *, limit: int = 100, lease: float = 30.0, worker: str = ""
    ) -> builtins.list[Wake]:
        at = to_us(now)
        until = to_us(utc(now) + timedelta(seconds=lease))

        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            return conn.execute(
                "UPDATE tether_wakes SET leased_until = ?, worker = ? WHERE rowid IN ("
                " SELECT rowid FROM tether_wakes"
                " WHERE at <= ? AND (leased_until IS NULL OR leased_until <= ?)"
                " ORDER BY at LIMIT ?) RETURNING session_id, key, at, leased_until, worker",
                (until, worker, at, at, limit),
            ).fetchall()

        rows = await self._write("due_wakes", None, op)
        wakes = [wake_from_row(r) for r in rows]
        wakes.sort(key=lambda w: (w.at, w.session_id, w.key))
        return wakes

    async def complete_wake(self, wake: Wake) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM tether_wakes WHERE session_id = ? AND key = ? AND at = ? AND worker = ?",
                (wake.session_id, wake.key, to_us(wake.at), wake.worker),
            )

        await self._write("complete_wake", wake.session_id, op)

    async def pending_wakes(self, session_id: str | None = None) -> builtins.list[Wake]:
        def op(conn: sqlite3.Connection) -> builtins.list[Any]:
            return conn.execute(
                "SELECT session_id, key, at, leased_until, worker FROM tether_wakes "
                "WHERE ? IS NULL OR session_id = ? ORDER BY at, session_id, key",
                (session_id, session_id),
            ).fetchall()

        return [wake_from_row(r) for r in await self._call("pending_wakes", session_id, op)]

    # ------------------------------------------------------------------ the run queue

    async def take_runs(
        self, now: datetime, *, limit: int = 1, lease: float = 30.0, worker: str = "", agent: bool = True
    ) -> builtins.list[QueuedRun]:
        at, until = to_us(now), to_us(utc(now) + timedelta(seconds=lease))
        return await self._write("take_runs", None,
                                 lambda conn: sqlite_take(conn, at, until, worker, limit, agent, from_us))

    async def renew_run(self, run: QueuedRun, now: datetime, *, lease: float = 30.0) -> bool:
        until = to_us(utc(now) + timedelta(seconds=lease))
        return await self._write("renew_run", run.session_id, lambda conn: sqlite_renew(conn, run, until),
                                 flush=False)

    async def release_run(self, run: QueuedRun, work: str | None = None) -> None:
        await self._write("release_run", run.session_id, lambda conn: sqlite_release(conn, run, work))

    async def queued_runs(self, session_id: str | None = None) -> builtins.list[QueuedRun]:
        return await self._call("queued_runs", session_id, lambda conn: sqlite_queued(conn, session_id, from_us))

    async def put_flows(self, agent: str, bundle: Iterable[FlowVersion]) -> None:
        rows, now = builtins.list(bundle), to_us(self.now())

        def op(conn: sqlite3.Connection) -> None:
            sqlite_put(conn, agent, rows, now)

        await self._write("put_flows", None, op)

    async def active_flows(self, agent: str) -> builtins.list[StoredFlow]:
        return await self._flows("active_flows", agent, "active")

    async def superseded_flows(self, agent: str) -> builtins.list[StoredFlow]:
        return await self._flows("superseded_flows", agent, "superseded")

    async def _flows(self, operation: str, agent: str, wanted: Status) -> builtins.list[StoredFlow]:
        rows = await self._call(operation, None, lambda conn: sqlite_flows(conn, agent, wanted))
        return [StoredFlow(seq, agent_id, flow, version, digest, document, status, from_us(at))
                for seq, agent_id, flow, version, digest, document, status, at in rows]

    async def put_conversation(self, key: str, session_id: str) -> None:
        now = to_us(self.now())

        def op(conn: sqlite3.Connection) -> None:
            sqlite_put_key(conn, key, session_id, now)

        await self._write("put_conversation", session_id, op)

    async def find_conversation(self, key: str) -> str | None:
        return await self._call("find_conversation", None, lambda conn: sqlite_find_key(conn, key))

    async def close(self) -> None:
        def op() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        try:
            await self._thread.run(op)
        finally:
            self._thread.stop()
            self._reader.close()
