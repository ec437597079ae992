"""Stored flow versions: what hot registration persists, so a restart (or another worker on the
same store) serves the flows registered at run time.

A row is one version of one flow of one agent: the flow-file document (JSON text, kept as
written so a corrupt row can be reported and skipped, never crash a boot), its digest, and a
status. Storing a bundle supersedes the previous active version of each of its flows and inserts
the new ones as active, in one transaction: either the whole bundle is stored or none of it. A
superseded row is kept: a run parked on that version after a restart is served it.

The database itself holds at most one active row per agent and flow (a partial unique index).
Concurrent bundles of one agent take turns, so the later one supersedes the earlier and wins: on
SQLite every write transaction is ``BEGIN IMMEDIATE``; on PostgreSQL a bundle first takes a
transaction-scoped advisory lock keyed on its agent. A writer that skips the turn (a tether from
before the lock, still running during an upgrade) is refused by the index with a ``StoreError``
naming the agent and the flow, never a driver error.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import StoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["FlowVersion", "StoredFlow", "memory_put", "postgres_flows", "postgres_put", "sqlite_flows", "sqlite_put"]

Status = Literal["active", "superseded"]


@dataclass(frozen=True)
class FlowVersion:
    """One flow of a bundle to store: its id, version label, digest and document (JSON text)."""

    flow: str
    version: str | None
    digest: str
    document: str


@dataclass(frozen=True)
class StoredFlow:
    """A stored flow version (``seq`` orders them, across flows)."""

    seq: int
    agent: str
    flow: str
    version: str | None
    digest: str
    document: str
    status: Status
    created_at: datetime


def _second_active(agent: str, flow: str) -> StoreError:
    return StoreError(f"agent {agent!r} already has an active stored version of flow {flow!r} (another publish "
                      "stored one at the same moment); nothing of this bundle was stored: publish it again",
                      operation="put_flows")


def memory_put(rows: list[StoredFlow], agent: str, bundle: list[FlowVersion], now: datetime) -> list[StoredFlow]:
    """The rows after storing ``bundle`` (a new list: the caller swaps it in whole)."""
    ids = {f.flow for f in bundle}
    out = [replace(r, status="superseded") if r.agent == agent and r.flow in ids and r.status == "active" else r
           for r in rows]
    seq = max((r.seq for r in rows), default=0)
    for offset, f in enumerate(bundle, start=1):
        out.append(StoredFlow(seq + offset, agent, f.flow, f.version, f.digest, f.document, "active", now))
    return out


# --------------------------------------------------------------------------- SQLite

SQLITE_TABLE = [
    """CREATE TABLE IF NOT EXISTS tether_flows (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        agent TEXT NOT NULL,
        flow TEXT NOT NULL,
        version TEXT,
        digest TEXT NOT NULL,
        document TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS tether_flows_active ON tether_flows (agent, status, flow)",
]

SQLITE_ONE_ACTIVE = [
    # a database from before the index may hold several active rows of a flow: the newest stays
    """UPDATE tether_flows AS f SET status = 'superseded' WHERE f.status = 'active' AND f.seq < (
        SELECT max(n.seq) FROM tether_flows AS n WHERE n.agent = f.agent AND n.flow = f.flow
        AND n.status = 'active')""",
    "CREATE UNIQUE INDEX IF NOT EXISTS tether_flows_one_active ON tether_flows (agent, flow) WHERE status = 'active'",
]


def sqlite_put(conn: sqlite3.Connection, agent: str, bundle: list[FlowVersion], now_us: int) -> None:
    """Store ``bundle`` (call inside one write transaction)."""
    for f in bundle:
        conn.execute("UPDATE tether_flows SET status = 'superseded' WHERE agent = ? AND flow = ? AND status = 'active'",
                     (agent, f.flow))
        try:
            conn.execute("INSERT INTO tether_flows (agent, flow, version, digest, document, status, created_at) "
                         "VALUES (?, ?, ?, ?, ?, 'active', ?)",
                         (agent, f.flow, f.version, f.digest, f.document, now_us))
        except sqlite3.IntegrityError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_CONSTRAINT_UNIQUE:
                raise
            raise _second_active(agent, f.flow) from exc


def sqlite_flows(conn: sqlite3.Connection, agent: str, status: Status) -> list[tuple[Any, ...]]:
    """The rows of ``agent`` with ``status``, oldest first (``created_at`` in microseconds)."""
    return conn.execute("SELECT seq, agent, flow, version, digest, document, status, created_at FROM tether_flows "
                        "WHERE agent = ? AND status = ? ORDER BY seq", (agent, status)).fetchall()


# --------------------------------------------------------------------------- PostgreSQL

POSTGRES_TABLE = [
    """CREATE TABLE IF NOT EXISTS {s}.tether_flows (
        seq bigserial PRIMARY KEY,
        agent text NOT NULL,
        flow text NOT NULL,
        version text,
        digest text NOT NULL,
        document text NOT NULL,
        status text NOT NULL,
        created_at timestamptz NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS tether_flows_active ON {s}.tether_flows (agent, status, flow)",
]

POSTGRES_ONE_ACTIVE = [
    # a database from before the index may hold several active rows of a flow (two workers that
    # published at once): the newest stays
    """UPDATE {s}.tether_flows AS f SET status = 'superseded' WHERE f.status = 'active' AND f.seq < (
        SELECT max(n.seq) FROM {s}.tether_flows AS n WHERE n.agent = f.agent AND n.flow = f.flow
        AND n.status = 'active')""",
    "CREATE UNIQUE INDEX IF NOT EXISTS tether_flows_one_active ON {s}.tether_flows (agent, flow) "
    "WHERE status = 'active'",
]


async def postgres_put(conn: AsyncConnection[Any], schema: str, agent: str, bundle: list[FlowVersion],
                       now: datetime) -> None:
    """Store ``bundle`` (call inside one transaction; ``schema`` is the quoted schema name).

    The transaction first takes the advisory lock of ``agent``'s flows, held until it ends: a
    concurrent bundle of the agent waits, then sees this one's rows and supersedes them.
    """
    from psycopg.errors import UniqueViolation

    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"tether-flows:{schema}:{agent}",))
    for f in bundle:
        await conn.execute(f"UPDATE {schema}.tether_flows SET status = 'superseded' "
                           "WHERE agent = %s AND flow = %s AND status = 'active'", (agent, f.flow))
        try:
            await conn.execute(f"INSERT INTO {schema}.tether_flows (agent, flow, version, digest, document, status, "
                               "created_at) VALUES (%s, %s, %s, %s, %s, 'active', %s)",
                               (agent, f.flow, f.version, f.digest, f.document, now))
        except UniqueViolation as exc:
            raise _second_active(agent, f.flow) from exc


async def postgres_flows(conn: AsyncConnection[Any], schema: str, agent: str,
                         status: Status) -> list[tuple[Any, ...]]:
    """The rows of ``agent`` with ``status``, oldest first."""
    cur = await conn.execute(f"SELECT seq, agent, flow, version, digest, document, status, created_at "
                             f"FROM {schema}.tether_flows WHERE agent = %s AND status = %s ORDER BY seq",
                             (agent, status))
    return list(await cur.fetchall())
