"""Storage backends for the store tests: memory, sqlite (tmp_path) and postgres.

PostgreSQL tests read ``TETHER_TEST_POSTGRES_URL`` and skip, saying why, when it is unset or the
server is unreachable. Each PostgreSQL backend gets its own schema: a new one (dropped afterwards)
as soon as the test reads ``backend.schema`` (to create it by hand, or to hand it to another process),
else, when a store is opened, an emptied one a finished test of this process left (see
``SchemaPool``: creating and dropping a schema costs ~0.15 s, emptying one ~0.02 s).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from tether.stores import MemoryStore, PostgresStore, SQLiteStore, Store
from tether.testing import FakeClock

PG_ENV = "TETHER_TEST_POSTGRES_URL"


@functools.cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL tests cannot run, or None when they can."""
    url = os.environ.get(PG_ENV)
    if not url:
        return f"{PG_ENV} is not set; PostgreSQL store tests need a server"
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"PostgreSQL at {PG_ENV} is unreachable: {type(exc).__name__}: {exc}"
    return None


def require_postgres() -> str:
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    return os.environ[PG_ENV]


class Backend:
    """One storage location; ``make`` opens another store instance on it."""

    name: str
    target: str = ""
    schema: str = ""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.stores: list[Store] = []

    async def make(self, clock: FakeClock | None = None) -> Store:
        store = self._new(clock or self.clock)
        self.stores.append(store)
        return store

    def _new(self, clock: FakeClock) -> Store:
        raise NotImplementedError

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        """Overwrite the stored document of ``session_id`` behind the store's back."""
        raise NotImplementedError

    async def aclose(self) -> None:
        for store in self.stores:
            await store.close()


class MemoryBackend(Backend):
    name = "memory"
    shared: MemoryStore | None = None

    def _new(self, clock: FakeClock) -> Store:
        if self.shared is None:
            self.shared = MemoryStore(clock=clock)
        return self.shared

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        assert self.shared is not None
        self.shared._docs[session_id] = doc_json

    async def aclose(self) -> None:
        if self.shared is not None:
            await self.shared.close()


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, clock: FakeClock, tmp_path: Path) -> None:
        super().__init__(clock)
        self.target = str(tmp_path / "nested" / "tether.db")

    def _new(self, clock: FakeClock) -> Store:
        return SQLiteStore(self.target, clock=clock)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        conn = sqlite3.connect(self.target, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        self.execute("UPDATE tether_sessions SET doc = ? WHERE id = ?", (doc_json, session_id))


def _new_schema_name() -> str:
    return f"tether_test_{uuid.uuid4().hex[:12]}"


class SchemaPool:
    """Migrated, emptied PostgreSQL schemas that finished tests of this process gave back.

    A schema goes back only when it is as a fresh migration left it but for rows: the catalog
    (tables, columns, indexes, constraints, triggers) and ``tether_meta`` match a schema just
    migrated for the purpose. Rows are deleted and sequences restarted; anything else (a schema a
    test altered, a cleanup that waits on a lock) drops it instead. ``drop_all`` runs at the end of
    the session (``pytest_sessionfinish`` in ``tests/conftest.py``).
    """

    _FINGERPRINT = """
        SELECT md5(coalesce(string_agg(replace(item, %(s)s::text, '<schema>'), ';' ORDER BY item), '')) FROM (
            SELECT c.relname::text || ':' || c.relkind::text || ':' || coalesce(a.attname::text, '') || ':'
                   || coalesce(format_type(a.atttypid, a.atttypmod), '') || ':' || coalesce(a.attnotnull::text, '')
                   || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS item
              FROM pg_class c
              LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
              LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
             WHERE c.relnamespace = %(s)s::text::regnamespace
            UNION ALL
            SELECT 'constraint:' || conname::text || ':' || pg_get_constraintdef(oid)
              FROM pg_constraint WHERE connamespace = %(s)s::text::regnamespace
            UNION ALL
            SELECT 'trigger:' || t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
             WHERE c.relnamespace = %(s)s::text::regnamespace
            UNION ALL
            SELECT 'function:' || p.proname::text FROM pg_proc p WHERE p.pronamespace = %(s)s::text::regnamespace
        ) AS items"""

    def __init__(self) -> None:
        self.url = ""
        self.free: list[str] = []
        self.made: set[str] = set()
        self.reference: tuple[str, list[tuple[Any, ...]]] | None = None

    async def _state(self, conn: Any, schema: str) -> tuple[str, list[tuple[Any, ...]]]:
        fingerprint = (await (await conn.execute(self._FINGERPRINT, {"s": schema})).fetchone())[0]
        meta = await (await conn.execute(f'SELECT key, value FROM "{schema}".tether_meta ORDER BY key')).fetchall()
        return fingerprint, meta

    async def take(self, url: str, clock: FakeClock) -> str:
        """An empty migrated schema: one given back, else a new one."""
        if self.url and url != self.url:
            return _new_schema_name()
        self.url = url
        if self.free:
            return self.free.pop()
        schema = _new_schema_name()
        self.made.add(schema)
        if self.reference is None:  # what a fresh migration looks like, taken once
            import psycopg

            store = PostgresStore(url, schema=schema, clock=clock, pool_size=1)
            try:
                await store.list(limit=1)
            finally:
                await store.close()
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                self.reference = await self._state(conn, schema)
        return schema

    async def give_back(self, url: str, schema: str) -> None:
        """Empty ``schema`` and keep it, if it is still as migrated; else drop it."""
        import psycopg

        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            try:
                # The stores are closed, but a server process may not have ended yet (and let go of
                # an advisory lock, a lease): the next test must not find one.
                for _ in range(500):
                    live = await (await conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (schema,))).fetchone()
                    if live[0] == 0:
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise _Altered
                async with conn.transaction():
                    await conn.execute("SET LOCAL lock_timeout = '2s'")
                    exists = await (await conn.execute(
                        "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))).fetchone()
                    if exists is None:  # never migrated (no store used it): nothing to keep
                        self.made.discard(schema)
                        return
                    if await self._state(conn, schema) != self.reference:
                        raise _Altered
                    tables = await (await conn.execute(
                        "SELECT relname FROM pg_class WHERE relnamespace = %s::text::regnamespace AND relkind = 'r' "
                        "AND relname <> 'tether_meta'", (schema,))).fetchall()
                    for (table,) in tables:
                        await conn.execute(f'DELETE FROM "{schema}"."{table}"')
                    sequences = await (await conn.execute(
                        "SELECT relname FROM pg_class WHERE relnamespace = %s::text::regnamespace AND relkind = 'S'",
                        (schema,))).fetchall()
                    for (sequence,) in sequences:
                        await conn.execute("SELECT setval(%s::regclass, 1, false)", (f'"{schema}"."{sequence}"',))
            except (_Altered, psycopg.Error):
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                self.made.discard(schema)
                return
        self.free.append(schema)

    def drop_all(self) -> None:
        """Drop every schema this pool made (at the end of the session)."""
        if not self.made:
            return
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS " + ", ".join(f'"{s}"' for s in sorted(self.made)) + " CASCADE")
        self.made.clear()
        self.free.clear()


class _Altered(Exception):
    """A schema a test changed beyond its rows."""


SCHEMAS = SchemaPool()


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, clock: FakeClock, url: str) -> None:
        super().__init__(clock)
        self.target = url
        self._schema: str | None = None
        self._pooled = False  # taken from SCHEMAS, and no one outside was told its name

    @property
    def schema(self) -> str:  # type: ignore[override]
        """The schema's name; a test that reads it gets a new schema of its own (never a pooled one)."""
        if self._schema is None:
            self._schema = _new_schema_name()
        self._pooled = False
        return self._schema

    async def make(self, clock: FakeClock | None = None) -> Store:
        if self._schema is None:
            self._schema = await SCHEMAS.take(self.target, self.clock)
            self._pooled = self._schema in SCHEMAS.made
        return await super().make(clock)

    def _new(self, clock: FakeClock) -> Store:
        assert self._schema is not None
        target = self.target
        if self._pooled:  # its connections are named after it: see SchemaPool.give_back
            target += ("&" if "?" in target else "?") + f"application_name={self._schema}"
        return PostgresStore(target, schema=self._schema, clock=clock, pool_size=4)

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.target, autocommit=True) as conn:
            await conn.execute(sql, params)

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        await self.execute(
            f'UPDATE "{self._schema}".tether_sessions SET doc = %s::json WHERE id = %s', (doc_json, session_id)
        )

    async def aclose(self) -> None:
        await super().aclose()
        if self._schema is None:
            return
        if self._pooled:
            await SCHEMAS.give_back(self.target, self._schema)
        else:
            SCHEMAS.made.discard(self._schema)
            await self.execute(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')


BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]
DURABLE = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def sqlite_before(backend: SQLiteBackend, migration: tuple[str, ...], insert: str, rows: list[tuple[Any, ...]]) -> None:
    """Make ``backend``'s database as it was before ``migration`` (one of the SQLite schema's
    migrations, by identity) was added, holding ``rows`` (``insert``: its statement, ``?`` params)."""
    from tether.stores import _sqlite_schema as schema

    before = next(v for v, statements in schema.MIGRATIONS if statements is migration) - 1
    Path(backend.target).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(backend.target, isolation_level=None)
    try:
        for version, statements in schema.MIGRATIONS:
            for statement in statements if version <= before else []:
                conn.execute(statement)
        conn.execute("CREATE TABLE tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO tether_meta VALUES ('schema_version', ?)", (str(before),))
        conn.executemany(insert, rows)
    finally:
        conn.close()


async def postgres_before(backend: PostgresBackend, migration: tuple[str, ...], insert: str,
                          rows: list[tuple[Any, ...]]) -> None:
    """:func:`sqlite_before` for PostgreSQL: ``insert`` names the schema as ``{s}``, params ``%s``."""
    import psycopg

    from tether.stores import _postgres_schema as schema

    before = next(v for v, statements in schema.MIGRATIONS if statements is migration) - 1
    s = f'"{backend.schema}"'
    async with await psycopg.AsyncConnection.connect(backend.target, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {s}")
        for version, statements in schema.MIGRATIONS:
            for statement in statements if version <= before else []:
                await conn.execute(statement.format(s=s))
        await conn.execute(f"CREATE TABLE {s}.tether_meta (key text PRIMARY KEY, value text NOT NULL)")
        await conn.execute(f"INSERT INTO {s}.tether_meta VALUES ('schema_version', %s)", (str(before),))
        async with conn.cursor() as cur:
            await cur.executemany(insert.format(s=s), rows)


async def open_backend(name: str, clock: FakeClock, tmp_path: Path) -> Backend:
    if name == "memory":
        return MemoryBackend(clock)
    if name == "sqlite":
        return SQLiteBackend(clock, tmp_path)
    return PostgresBackend(clock, require_postgres())


async def run_in_lockstep(procs: list[asyncio.subprocess.Process], timeout: float = 120) -> list[dict[str, Any]]:
    """Wait until every worker printed ``ready``, release them together (a line on stdin), and
    return the JSON object each printed last. Kills what is still running on the way out."""
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            if line.strip() != b"ready":
                _, err = await proc.communicate()
                pytest.fail(f"worker did not start: {line!r} {err.decode()[-2000:]}")
        outputs = await asyncio.wait_for(asyncio.gather(*(p.communicate(b"go\n") for p in procs)), timeout)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results
