"""The SQLite schema, as an ordered list of idempotent migration steps.

``tether_meta`` records the ``schema_version``; opening a database whose version is newer than
``SCHEMA_VERSION`` fails with ``StoreError`` rather than guessing. Times are stored as integer
microseconds since the Unix epoch (UTC), so they sort and compare exactly.
"""

from __future__ import annotations

import sqlite3

from tether.errors import StoreError
from tether.stores.conversation_keys import SQLITE_TABLE as SQLITE_CONVERSATIONS
from tether.stores.flow_versions import SQLITE_ONE_ACTIVE, SQLITE_TABLE
from tether.stores.records import DEFAULT_TENANT
from tether.stores.run_queue import SQLITE_TABLE as SQLITE_RUN_QUEUE

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TENANT", "migrate"]

TENANT = (f"CASE WHEN json_valid(doc) THEN COALESCE(NULLIF(json_extract(doc, '$.metadata.config.tenant'), ''), "
          f"'{DEFAULT_TENANT}') ELSE '{DEFAULT_TENANT}' END")
"""A session's tenant (``session_tenant``), as the SQL of the tenant index: a query that filters
by tenant says exactly this, so SQLite takes the index instead of parsing every document. A row
that is not JSON SQLite can read (a corrupt row, a document nested past its depth limit) indexes as
the default tenant's instead of failing the write, or the migration that builds the index; loading
it still fails as before, with the session's id."""

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE IF NOT EXISTS tether_sessions (
                id TEXT PRIMARY KEY,
                agent TEXT NOT NULL,
                status TEXT NOT NULL,
                revision INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                saved_at INTEGER NOT NULL,
                doc TEXT NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS tether_sessions_saved_at ON tether_sessions (saved_at)",
            "CREATE INDEX IF NOT EXISTS tether_sessions_agent ON tether_sessions (agent, saved_at)",
            """CREATE TABLE IF NOT EXISTS tether_messages (
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            ) WITHOUT ROWID""",
            """CREATE TABLE IF NOT EXISTS tether_events (
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                type TEXT NOT NULL,
                at INTEGER NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            ) WITHOUT ROWID""",
            """CREATE TABLE IF NOT EXISTS tether_journal (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL,
                key TEXT NOT NULL,
                run_id TEXT NOT NULL,
                body TEXT NOT NULL,
                UNIQUE (session_id, key)
            )""",
            """CREATE TABLE IF NOT EXISTS tether_wakes (
                session_id TEXT NOT NULL,
                key TEXT NOT NULL,
                at INTEGER NOT NULL,
                leased_until INTEGER,
                worker TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (session_id, key)
            )""",
            "CREATE INDEX IF NOT EXISTS tether_wakes_at ON tether_wakes (at)",
        ],
    ),
    (
        2,
        [
            """CREATE TABLE IF NOT EXISTS tether_leases (
                session_id TEXT PRIMARY KEY,
                holder TEXT NOT NULL,
                expires_at INTEGER NOT NULL
            ) WITHOUT ROWID""",
        ],
    ),
    (3, SQLITE_TABLE),  # stored flow versions (hot registration)
    (4, SQLITE_ONE_ACTIVE),  # one active stored version per agent and flow
    (
        5,
        [  # document parts (TurnRecords.parts): a workflow run's node states
            """CREATE TABLE IF NOT EXISTS tether_parts (
                session_id TEXT NOT NULL,
                path TEXT NOT NULL,
                name TEXT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (session_id, path, name)
            ) WITHOUT ROWID""",
        ],
    ),
    (6, SQLITE_CONVERSATIONS),  # the session of a conversation a client replays in full
    (7, SQLITE_RUN_QUEUE),  # the workflow runs a worker should drive (open runs stored before are queued)
    (
        8,
        [  # Store.list(tenant=...), and its handed-off sessions (GET /v1/handoffs): no scan of every document
            f"CREATE INDEX IF NOT EXISTS tether_sessions_tenant ON tether_sessions ({TENANT}, saved_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS tether_sessions_handed_off ON tether_sessions (saved_at) "
            "WHERE status = 'handed_off'",
        ],
    ),
]
"""``(version, statements)`` in ascending order; every statement is safe to run twice."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The schema version this code writes."""


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Create or upgrade the schema in one ``BEGIN IMMEDIATE`` transaction; returns the version.

    Raises ``StoreError`` when the database was written by a newer tether.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = conn.execute("SELECT value FROM tether_meta WHERE key = 'schema_version'").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"SQLite database {path!r} has schema version {current}, newer than this tether "
                f"understands ({SCHEMA_VERSION}); upgrade tether",
                operation="open",
            )
        for version, statements in MIGRATIONS:
            if version > current:
                for statement in statements:
                    conn.execute(statement)
                current = version
        conn.execute(
            "INSERT INTO tether_meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(current),),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return current
