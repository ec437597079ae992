"""Conversation keys: which session a conversation that a client replays in full belongs to.

An OpenAI-style client sends the whole history with every request and no session id. The server
keeps, for each exchange it answered, a key (a digest of the tenant, the agent and the history up
to and including the reply) naming the session; the client's next request carries that history
and finds its session by it. A row is ``key -> session_id``. When a second session writes a key
another session already holds (two conversations whose histories are identical so far), the row
becomes ambiguous (``session_id`` empty) for good: the history can no longer tell them apart.
The rows of a session go when the session is deleted or pruned (the table has ``session_id``).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["AMBIGUOUS", "POSTGRES_TABLE", "SQLITE_TABLE", "memory_put_key", "postgres_find_key", "postgres_put_key",
           "sqlite_find_key", "sqlite_put_key"]

AMBIGUOUS = ""
"""The ``session_id`` of a key that two sessions wrote."""

SQLITE_TABLE = [
    """CREATE TABLE IF NOT EXISTS tether_conversations (
        key TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        at INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tether_conversations_session ON tether_conversations (session_id)",
]

POSTGRES_TABLE = [
    """CREATE TABLE IF NOT EXISTS {s}.tether_conversations (
        key text PRIMARY KEY,
        session_id text NOT NULL,
        at timestamptz NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS tether_conversations_session ON {s}.tether_conversations (session_id)",
]

# the same session again keeps the row; another session makes it ambiguous
_UPSERT = ("INSERT INTO {t} AS c (key, session_id, at) VALUES ({p}, {p}, {p}) ON CONFLICT (key) DO UPDATE SET "
           "session_id = CASE WHEN c.session_id = excluded.session_id THEN c.session_id ELSE '' END, "
           "at = excluded.at")


def memory_put_key(rows: dict[str, str], key: str, session_id: str) -> None:
    """Record ``key -> session_id`` in ``rows`` (ambiguous when another session holds the key)."""
    held = rows.get(key)
    rows[key] = session_id if held is None or held == session_id else AMBIGUOUS


def sqlite_put_key(conn: sqlite3.Connection, key: str, session_id: str, now_us: int) -> None:
    """Record ``key -> session_id`` (one statement: atomic on its own)."""
    conn.execute(_UPSERT.format(t="tether_conversations", p="?"), (key, session_id, now_us))


def sqlite_find_key(conn: sqlite3.Connection, key: str) -> str | None:
    """The session of ``key`` (``AMBIGUOUS`` when two wrote it), or None."""
    row = conn.execute("SELECT session_id FROM tether_conversations WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


async def postgres_put_key(conn: AsyncConnection[Any], schema: str, key: str, session_id: str, now: Any) -> None:
    """Record ``key -> session_id`` (``schema`` is the quoted schema name)."""
    await conn.execute(_UPSERT.format(t=f"{schema}.tether_conversations", p="%s"), (key, session_id, now))


async def postgres_find_key(conn: AsyncConnection[Any], schema: str, key: str) -> str | None:
    """The session of ``key`` (``AMBIGUOUS`` when two wrote it), or None."""
    cur = await conn.execute(f"SELECT session_id FROM {schema}.tether_conversations WHERE key = %s", (key,))
    row = await cur.fetchone()
    return None if row is None else str(row[0])
