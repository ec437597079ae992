"""The tenant filter of ``Store.list`` reads the tenant index (no scan of every document), on a
new database and on one made before the index, which the migration gives it."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest
from store_backends import Backend, PostgresBackend, SQLiteBackend

from tether.engine.core.session import Session
from tether.stores import SQLiteStore
from tether.stores import _postgres_schema as pg_schema
from tether.stores import _sqlite_schema as sqlite_schema
from tether.testing import FakeClock


def _sqlite_plan(path: str, where: str) -> str:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(f"EXPLAIN QUERY PLAN SELECT id FROM tether_sessions WHERE {where} "
                            "ORDER BY saved_at DESC, id LIMIT 10", ("acme",)).fetchall()
    finally:
        conn.close()
    return " ".join(str(row[-1]) for row in rows)


async def test_an_older_sqlite_database_gets_the_tenant_index_and_the_filter_reads_it(
        tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    before = sqlite_schema.SCHEMA_VERSION - 1
    for version, statements in sqlite_schema.MIGRATIONS:
        for statement in statements if version <= before else []:
            conn.execute(statement)
    conn.execute("CREATE TABLE tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO tether_meta VALUES ('schema_version', ?)", (str(before),))
    for name, doc in (("garbage", "not json"), ("deep", "[" * 5000 + "]" * 5000)):  # rows no index may refuse
        conn.execute("INSERT INTO tether_sessions (id, agent, status, revision, created_at, saved_at, doc) "
                     "VALUES (?, 'a', 'running', 0, 0, 0, ?)", (name, doc))
    conn.close()
    assert "tether_sessions_tenant" not in _sqlite_plan(str(path), f"{sqlite_schema.TENANT} = ?")
    store = SQLiteStore(path, clock=clock)
    try:
        for tenant in ("acme", None, "globex"):
            metadata = {"config": {"tenant": tenant}} if tenant else {}
            await store.create(Session(id=str(uuid.uuid4()), agent="a", created_at=clock.now(), metadata=metadata))
        assert [len(await store.list(tenant=t)) for t in ("acme", "public", "globex", "x")] == [1, 3, 1, 0]
    finally:
        await store.close()
    assert "USING INDEX tether_sessions_tenant" in _sqlite_plan(str(path), f"{sqlite_schema.TENANT} = ?")
    handed = _sqlite_plan(str(path), f"status = 'handed_off' AND {sqlite_schema.TENANT} = ?")
    assert "tether_sessions_tenant" in handed or "tether_sessions_handed_off" in handed


async def test_postgres_has_the_tenant_index_and_the_filter_can_read_it(durable: Backend) -> None:
    if not isinstance(durable, PostgresBackend):
        assert isinstance(durable, SQLiteBackend)
        pytest.skip("the SQLite case is the test above")
    import psycopg

    store = await durable.make()
    await store.list(tenant="acme")
    s = f'"{durable.schema}"'
    async with await psycopg.AsyncConnection.connect(durable.target, autocommit=True) as conn:
        found = await (await conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s",
                                          (durable.schema,))).fetchall()
        assert {"tether_sessions_tenant", "tether_sessions_handed_off"} <= {row[0] for row in found}
        await conn.execute("SET enable_seqscan = off")  # an empty table: say whether the index can serve it
        await conn.execute("SET enable_sort = off")
        plan = await (await conn.execute(
            f"EXPLAIN SELECT id FROM {s}.tether_sessions WHERE {pg_schema.TENANT} = 'acme' "
            "ORDER BY saved_at DESC, id LIMIT 10")).fetchall()
    assert "tether_sessions_tenant" in " ".join(row[0] for row in plan)
