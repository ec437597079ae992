"""The run queue: which stored workflow runs a worker should drive, and which worker holds each.

A row is ``(session_id, at, agent, leased_until, worker, takes)``: the run ``session_id`` has work
a worker can do from ``at`` (``agent``: only agent work, for a worker with a model). A row is
written by the save that makes the run runnable (``TurnRecords.queue``, in the same transaction as
the document: a run is never saved runnable without being queued), and taken out by the save that
leaves it waiting on a person, or ended. ``Store.take_runs`` leases rows to one worker (on
PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED``, as the wakes are claimed; on SQLite and in
memory the one writer serializes the takes), for ``lease`` seconds, renewed while the worker
drives (``Store.renew_run``); a worker that dies stops renewing, and after ``leased_until`` any
worker takes the row again. ``Store.release_run`` ends a take: the row goes (the run waits or
ended) or stays queued, unleased. A save that queues a run already queued keeps its ``at`` and its
lease (the worker holding it is driving it), and updates ``agent``.

The rows of a session go when it is deleted or pruned (the table has ``session_id``).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.stores.records import QueuedRun, QueueRequest

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "POSTGRES_TABLE",
    "SQLITE_TABLE",
    "memory_queue",
    "postgres_queue",
    "postgres_release",
    "postgres_renew",
    "postgres_take",
    "sqlite_queue",
    "sqlite_release",
    "sqlite_renew",
    "sqlite_take",
]

_COLUMNS = "session_id, at, agent, leased_until, worker, takes"

SQLITE_TABLE = [
    """CREATE TABLE IF NOT EXISTS tether_run_queue (
        session_id TEXT PRIMARY KEY,
        at INTEGER NOT NULL,
        agent INTEGER NOT NULL DEFAULT 0,
        leased_until INTEGER,
        worker TEXT NOT NULL DEFAULT '',
        takes INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tether_run_queue_at ON tether_run_queue (at)",
    # the open workflow runs of a database written before the queue: queued once, so a worker
    # looks at each (it takes out those that wait on a person)
    "INSERT INTO tether_run_queue (session_id, at) SELECT id, saved_at FROM tether_sessions "
    "WHERE agent >= 'workflow:' AND agent < 'workflow;' AND status = 'running' ON CONFLICT DO NOTHING",
]

POSTGRES_TABLE = [
    """CREATE TABLE IF NOT EXISTS {s}.tether_run_queue (
        session_id text PRIMARY KEY,
        at timestamptz NOT NULL,
        agent boolean NOT NULL DEFAULT false,
        leased_until timestamptz,
        worker text NOT NULL DEFAULT '',
        takes integer NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS tether_run_queue_at ON {s}.tether_run_queue (at)",
    "INSERT INTO {s}.tether_run_queue (session_id, at) SELECT id, saved_at FROM {s}.tether_sessions "
    "WHERE agent LIKE 'workflow:%%' AND status = 'running' ON CONFLICT DO NOTHING",
]

_UPSERT = ("INSERT INTO {t} (session_id, at, agent) VALUES ({p}, {p}, {p}) "
           "ON CONFLICT (session_id) DO UPDATE SET agent = excluded.agent")


# ---------------------------------------------------------------------- memory


def memory_queue(rows: dict[str, QueuedRun], session_id: str, request: QueueRequest) -> None:
    """Apply ``request`` to the in-memory queue ``rows``."""
    if request.work is None:
        rows.pop(session_id, None)
        return
    held = rows.get(session_id)
    agent = request.work == "agent"
    rows[session_id] = (held.model_copy(update={"agent": agent}) if held is not None
                        else QueuedRun(session_id=session_id, at=request.at, agent=agent))


# ---------------------------------------------------------------------- SQLite


def _sqlite_row(row: Any, from_us: Any) -> QueuedRun:
    return QueuedRun(session_id=row[0], at=from_us(row[1]), agent=bool(row[2]),
                     leased_until=None if row[3] is None else from_us(row[3]), worker=row[4], takes=row[5])


def sqlite_queue(conn: sqlite3.Connection, session_id: str, request: QueueRequest, at_us: int) -> None:
    """Apply ``request`` inside the caller's write transaction."""
    if request.work is None:
        conn.execute("DELETE FROM tether_run_queue WHERE session_id = ?", (session_id,))
    else:
        conn.execute(_UPSERT.format(t="tether_run_queue", p="?"), (session_id, at_us, int(request.work == "agent")))


def sqlite_take(conn: sqlite3.Connection, now_us: int, until_us: int, worker: str, limit: int, agent: bool,
                from_us: Any) -> list[QueuedRun]:
    """Lease up to ``limit`` runnable rows to ``worker`` (the store's one writer: no two takes interleave)."""
    rows = conn.execute(
        "UPDATE tether_run_queue SET leased_until = ?, worker = ?, takes = takes + 1 WHERE session_id IN ("
        " SELECT session_id FROM tether_run_queue WHERE at <= ? AND (leased_until IS NULL OR leased_until <= ?)"
        " AND (? OR agent = 0) ORDER BY at LIMIT ?) RETURNING " + _COLUMNS,
        (until_us, worker, now_us, now_us, int(agent), limit),
    ).fetchall()
    return sorted((_sqlite_row(r, from_us) for r in rows), key=lambda q: (q.at, q.session_id))


def sqlite_renew(conn: sqlite3.Connection, run: QueuedRun, until_us: int) -> bool:
    """Extend ``run``'s lease; False when its worker no longer holds it."""
    return conn.execute("UPDATE tether_run_queue SET leased_until = ? WHERE session_id = ? AND worker = ?",
                        (until_us, run.session_id, run.worker)).rowcount == 1


def sqlite_release(conn: sqlite3.Connection, run: QueuedRun, work: str | None) -> None:
    """End ``run``'s take: the row goes (``work`` None), or stays queued for ``work``, unleased."""
    if work is None:
        conn.execute("DELETE FROM tether_run_queue WHERE session_id = ? AND worker = ?", (run.session_id, run.worker))
    else:
        conn.execute("UPDATE tether_run_queue SET leased_until = NULL, worker = '', agent = ? "
                     "WHERE session_id = ? AND worker = ?", (int(work == "agent"), run.session_id, run.worker))


def sqlite_queued(conn: sqlite3.Connection, session_id: str | None, from_us: Any) -> list[QueuedRun]:
    """Every row (optionally one session's), oldest first."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM tether_run_queue WHERE ? IS NULL OR session_id = ? "
                        "ORDER BY at, session_id", (session_id, session_id)).fetchall()
    return [_sqlite_row(r, from_us) for r in rows]


# ---------------------------------------------------------------------- PostgreSQL


def _postgres_row(row: Any, utc: Any) -> QueuedRun:
    return QueuedRun(session_id=row[0], at=utc(row[1]), agent=row[2],
                     leased_until=None if row[3] is None else utc(row[3]), worker=row[4], takes=row[5])


async def postgres_queue(conn: AsyncConnection[Any], s: str, session_id: str, request: QueueRequest) -> None:
    """Apply ``request`` inside the caller's transaction (``s``: the quoted schema name)."""
    if request.work is None:
        await conn.execute(f"DELETE FROM {s}.tether_run_queue WHERE session_id = %s", (session_id,))
    else:
        await conn.execute(_UPSERT.format(t=f"{s}.tether_run_queue", p="%s"),
                           (session_id, request.at, request.work == "agent"))


async def postgres_take(conn: AsyncConnection[Any], s: str, now: datetime, until: datetime, worker: str, limit: int,
                        agent: bool, utc: Any) -> list[QueuedRun]:
    """Lease up to ``limit`` runnable rows to ``worker``; rows another worker is taking are skipped."""
    cur = await conn.execute(
        f"WITH due AS (SELECT session_id FROM {s}.tether_run_queue "
        "WHERE at <= %(now)s AND (leased_until IS NULL OR leased_until <= %(now)s) AND (%(agent)s OR NOT agent) "
        "ORDER BY at LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
        f"UPDATE {s}.tether_run_queue q SET leased_until = %(until)s, worker = %(worker)s, takes = q.takes + 1 "
        "FROM due WHERE q.session_id = due.session_id RETURNING q.session_id, q.at, q.agent, q.leased_until, "
        "q.worker, q.takes",
        {"now": now, "until": until, "worker": worker, "limit": limit, "agent": agent},
    )
    rows = await cur.fetchall()
    return sorted((_postgres_row(r, utc) for r in rows), key=lambda q: (q.at, q.session_id))


async def postgres_renew(conn: AsyncConnection[Any], s: str, run: QueuedRun, until: datetime) -> bool:
    """Extend ``run``'s lease; False when its worker no longer holds it."""
    cur = await conn.execute(f"UPDATE {s}.tether_run_queue SET leased_until = %s WHERE session_id = %s AND worker = %s",
                             (until, run.session_id, run.worker))
    return cur.rowcount == 1


async def postgres_release(conn: AsyncConnection[Any], s: str, run: QueuedRun, work: str | None) -> None:
    """End ``run``'s take (see :func:`sqlite_release`)."""
    if work is None:
        await conn.execute(f"DELETE FROM {s}.tether_run_queue WHERE session_id = %s AND worker = %s",
                           (run.session_id, run.worker))
    else:
        await conn.execute(f"UPDATE {s}.tether_run_queue SET leased_until = NULL, worker = '', agent = %s "
                           "WHERE session_id = %s AND worker = %s", (work == "agent", run.session_id, run.worker))


async def postgres_queued(conn: AsyncConnection[Any], s: str, session_id: str | None, utc: Any) -> list[QueuedRun]:
    """Every row (optionally one session's), oldest first."""
    cur = await conn.execute(f"SELECT {_COLUMNS} FROM {s}.tether_run_queue "
                             "WHERE %(sid)s::text IS NULL OR session_id = %(sid)s ORDER BY at, session_id",
                             {"sid": session_id})
    return [_postgres_row(r, utc) for r in await cur.fetchall()]
