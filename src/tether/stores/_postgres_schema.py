"""The PostgreSQL schema, as an ordered list of idempotent migration steps.

Statements are templates: ``{s}`` is replaced by the quoted PostgreSQL schema name. Migrations
run under a transaction-scoped advisory lock, so any number of processes may open the same
database at once. ``tether_meta`` records the ``schema_version``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tether.errors import StoreError
from tether.stores.conversation_keys import POSTGRES_TABLE as POSTGRES_CONVERSATIONS
from tether.stores.flow_versions import POSTGRES_ONE_ACTIVE, POSTGRES_TABLE
from tether.stores.records import DEFAULT_TENANT
from tether.stores.run_queue import POSTGRES_TABLE as POSTGRES_RUN_QUEUE

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TENANT", "migrate", "quote_schema"]

TENANT = f"COALESCE(NULLIF(doc->'metadata'->'config'->>'tenant', ''), '{DEFAULT_TENANT}')"
"""A session's tenant (``session_tenant``), as the SQL of the tenant index: a query that filters
by tenant says exactly this (the default a literal, not a parameter), so the planner takes the index."""

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE IF NOT EXISTS {s}.tether_sessions (
                id text PRIMARY KEY,
                agent text NOT NULL,
                status text NOT NULL,
                revision bigint NOT NULL,
                created_at timestamptz NOT NULL,
                saved_at timestamptz NOT NULL,
                doc json NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS tether_sessions_saved_at ON {s}.tether_sessions (saved_at)",
            "CREATE INDEX IF NOT EXISTS tether_sessions_agent ON {s}.tether_sessions (agent, saved_at)",
            """CREATE TABLE IF NOT EXISTS {s}.tether_messages (
                session_id text NOT NULL,
                seq bigint NOT NULL,
                body json NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE TABLE IF NOT EXISTS {s}.tether_events (
                session_id text NOT NULL,
                seq bigint NOT NULL,
                type text NOT NULL,
                at timestamptz NOT NULL,
                body json NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE TABLE IF NOT EXISTS {s}.tether_journal (
                id bigserial PRIMARY KEY,
                session_id text NOT NULL,
                key text NOT NULL,
                run_id text NOT NULL,
                body json NOT NULL,
                UNIQUE (session_id, key)
            )""",
            """CREATE TABLE IF NOT EXISTS {s}.tether_wakes (
                session_id text NOT NULL,
                key text NOT NULL,
                at timestamptz NOT NULL,
                leased_until timestamptz,
                worker text NOT NULL DEFAULT '',
                PRIMARY KEY (session_id, key)
            )""",
            "CREATE INDEX IF NOT EXISTS tether_wakes_at ON {s}.tether_wakes (at)",
        ],
    ),
    (2, POSTGRES_TABLE),  # stored flow versions (hot registration)
    (3, POSTGRES_ONE_ACTIVE),  # one active stored version per agent and flow
    (
        4,
        [  # document parts (TurnRecords.parts): a workflow run's node states
            """CREATE TABLE IF NOT EXISTS {s}.tether_parts (
                session_id text NOT NULL,
                path text NOT NULL,
                name text NOT NULL,
                body json NOT NULL,
                PRIMARY KEY (session_id, path, name)
            )""",
            # Store.list(agent_prefix=...): LIKE 'prefix%' on this index under any collation
            "CREATE INDEX IF NOT EXISTS tether_sessions_agent_pattern ON {s}.tether_sessions "
            "(agent text_pattern_ops)",
        ],
    ),
    (5, POSTGRES_CONVERSATIONS),  # the session of a conversation a client replays in full
    (6, POSTGRES_RUN_QUEUE),  # the workflow runs a worker should drive (open runs stored before are queued)
    (
        7,
        [  # Store.list(tenant=...), and its handed-off sessions (GET /v1/handoffs): no scan of every document
            f"CREATE INDEX IF NOT EXISTS tether_sessions_tenant ON {{s}}.tether_sessions "
            f"(({TENANT}), saved_at DESC, id)",
            "CREATE INDEX IF NOT EXISTS tether_sessions_handed_off ON {s}.tether_sessions (saved_at) "
            "WHERE status = 'handed_off'",
        ],
    ),
]
"""``(version, statements)`` in ascending order; every statement is safe to run twice."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The schema version this code writes."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def quote_schema(schema: str) -> str:
    """The schema name, double-quoted; only plain identifiers are accepted."""
    if not _NAME.match(schema):
        raise StoreError(f"invalid PostgreSQL schema name {schema!r}", operation="open")
    return f'"{schema}"'


async def migrate(conn: AsyncConnection[tuple[object, ...]], schema: str) -> int:
    """Create or upgrade the schema in one transaction; returns the version.

    Raises ``StoreError`` when the database was written by a newer tether.
    """
    s = quote_schema(schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"tether-migrate:{schema}",))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.tether_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        cur = await conn.execute(f"SELECT value FROM {s}.tether_meta WHERE key = 'schema_version'")
        row = await cur.fetchone()
        current = int(str(row[0])) if row else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"PostgreSQL schema {schema!r} has tether schema version {current}, newer than this tether "
                f"understands ({SCHEMA_VERSION}); upgrade tether",
                operation="open",
            )
        for version, statements in MIGRATIONS:
            if version > current:
                for statement in statements:
                    await conn.execute(statement.format(s=s))
                current = version
        await conn.execute(
            f"INSERT INTO {s}.tether_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(current),),
        )
    return current
