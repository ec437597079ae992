"""Stored flow versions: the database keeps one active version per agent and flow, whoever writes.

Concurrent bundles of one agent (two store instances, as two workers would hold) take turns and
the later one wins; a writer that skips its turn is refused with a ``StoreError``; a database from
before the rule, holding several active rows of a flow, keeps the newest when it is opened.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter

import pytest
from store_backends import Backend, PostgresBackend, SQLiteBackend, postgres_before, sqlite_before

from tether.errors import StoreError
from tether.stores import Store
from tether.stores.flow_versions import POSTGRES_ONE_ACTIVE, SQLITE_ONE_ACTIVE, FlowVersion

ROUNDS = 30
FLOWS = ("greet", "book", "cancel")


def _bundle(label: str) -> list[FlowVersion]:
    return [FlowVersion(flow, label, f"{label}-{flow}", f'{{"flow": {{"id": "{flow}"}}}}') for flow in FLOWS]


async def test_concurrent_publishes_leave_one_active_version_per_flow(durable: Backend) -> None:
    first, second = await durable.make(), await durable.make()
    for round_ in range(ROUNDS):
        labels = (f"a{round_}", f"b{round_}")
        await asyncio.gather(first.put_flows("pia", _bundle(labels[0])), second.put_flows("pia", _bundle(labels[1])))
        active = await first.active_flows("pia")
        assert Counter(row.flow for row in active) == Counter(FLOWS), f"round {round_}: {active}"
        # the bundles took turns: every active row is the later bundle's, none a mix of the two
        winners = {row.version for row in active}
        assert len(winners) == 1 and winners <= set(labels), f"round {round_}: {active}"
        assert all(row.digest == f"{row.version}-{row.flow}" for row in active)
        superseded = await second.superseded_flows("pia")
        assert max(row.seq for row in superseded) < min(row.seq for row in active)
    assert len(superseded) == (2 * ROUNDS - 1) * len(FLOWS)


async def test_publishes_of_two_agents_at_once_keep_their_own_active_versions(durable: Backend) -> None:
    first, second = await durable.make(), await durable.make()
    await asyncio.gather(first.put_flows("pia", _bundle("p1")), second.put_flows("max", _bundle("m1")))
    assert {row.version for row in await first.active_flows("pia")} == {"p1"}
    assert {row.version for row in await first.active_flows("max")} == {"m1"}


@pytest.mark.parametrize("durable", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_postgres_refuses_a_second_active_row_from_a_writer_that_skips_the_lock(durable: Backend) -> None:
    assert isinstance(durable, PostgresBackend)
    import psycopg

    store = await durable.make()
    await store.put_flows("pia", _bundle("v1"))
    table = f'"{durable.schema}".tether_flows'
    async with await psycopg.AsyncConnection.connect(durable.target) as stale:
        # a writer from before the lock: supersedes what it sees and inserts, in an open transaction
        await stale.execute(f"UPDATE {table} SET status = 'superseded' WHERE agent = 'pia' AND flow = 'greet'")
        await stale.execute(f"INSERT INTO {table} (agent, flow, version, digest, document, status, created_at) "
                            "VALUES ('pia', 'greet', 'old', 'old-greet', '{}', 'active', now())")
        publish = asyncio.create_task(store.put_flows("pia", _bundle("v2")))
        await _until_waiting_on_a_lock(durable, publish)
        await stale.commit()
        with pytest.raises(StoreError, match="agent 'pia' already has an active stored version of flow 'greet'"):
            await publish
    active = await store.active_flows("pia")
    assert sorted((row.flow, row.version) for row in active) == [("book", "v1"), ("cancel", "v1"), ("greet", "old")]


async def _until_waiting_on_a_lock(backend: PostgresBackend, task: asyncio.Task[None]) -> None:
    """Return once the store's publish waits on a row the open transaction wrote."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(backend.target, autocommit=True) as watcher:
        for _ in range(2000):
            assert not task.done(), "the publish finished without waiting for the open transaction"
            cur = await watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                        "AND query LIKE %s", (f'%"{backend.schema}".tether_flows%',))
            row = await cur.fetchone()
            if row and row[0]:
                return
            await asyncio.sleep(0.01)
    pytest.fail("the publish never waited on the open transaction's row")


@pytest.mark.parametrize("durable", ["sqlite"], indirect=True)
async def test_sqlite_refuses_a_second_active_row_with_a_store_error(durable: Backend) -> None:
    assert isinstance(durable, SQLiteBackend)
    store = await durable.make()
    await store.put_flows("pia", _bundle("v1"))
    # stands in for a writer that leaves the active row in place: the supersede does nothing
    durable.execute("CREATE TRIGGER keep_active BEFORE UPDATE ON tether_flows BEGIN SELECT RAISE(IGNORE); END")
    with pytest.raises(StoreError, match="agent 'pia' already has an active stored version of flow 'greet'") as caught:
        await store.put_flows("pia", _bundle("v2"))
    assert caught.value.operation == "put_flows" and isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    assert {row.version for row in await store.active_flows("pia")} == {"v1"}


# --------------------------------------------------------------------------- the migration

# (agent, flow, version, status) in insertion order: pia/greet published three times at once,
# max/greet twice, pia/book once and then superseded properly
OLD_ROWS = [
    ("pia", "greet", "1", "active"), ("max", "greet", "1", "active"), ("pia", "greet", "2", "active"),
    ("pia", "book", "1", "superseded"), ("pia", "book", "2", "active"), ("max", "greet", "2", "active"),
    ("pia", "greet", "3", "active"),
]


def _sqlite_before_the_rule(backend: SQLiteBackend) -> None:
    sqlite_before(backend, SQLITE_ONE_ACTIVE,
                  "INSERT INTO tether_flows (agent, flow, version, digest, document, status, created_at)"
                  " VALUES (?, ?, ?, 'd', '{}', ?, 0)", OLD_ROWS)


async def _postgres_before_the_rule(backend: PostgresBackend) -> None:
    await postgres_before(backend, POSTGRES_ONE_ACTIVE,
                          "INSERT INTO {s}.tether_flows (agent, flow, version, digest, document, status, created_at)"
                          " VALUES (%s, %s, %s, 'd', '{{}}', %s, now())", OLD_ROWS)


async def _a_second_active_row_is_refused(backend: Backend) -> None:
    sql = ("INSERT INTO {t} (agent, flow, version, digest, document, status, created_at) "
           "VALUES ('pia', 'greet', 'x', 'd', '{{}}', 'active', {now})")
    if isinstance(backend, SQLiteBackend):
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
            backend.execute(sql.format(t="tether_flows", now="0"))
    else:
        import psycopg

        assert isinstance(backend, PostgresBackend)
        with pytest.raises(psycopg.errors.UniqueViolation, match="tether_flows_one_active"):
            await backend.execute(sql.format(t=f'"{backend.schema}".tether_flows', now="now()"))


async def test_opening_a_database_with_several_active_rows_keeps_the_newest(durable: Backend) -> None:
    if isinstance(durable, SQLiteBackend):
        _sqlite_before_the_rule(durable)
    else:
        assert isinstance(durable, PostgresBackend)
        await _postgres_before_the_rule(durable)
    store: Store = await durable.make()
    pia, max_ = await store.active_flows("pia"), await store.active_flows("max")
    assert [(r.flow, r.version) for r in pia] == [("book", "2"), ("greet", "3")]
    assert [(r.flow, r.version) for r in max_] == [("greet", "2")]
    kept = [(r.agent, r.flow, r.version) for agent in ("pia", "max") for r in await store.superseded_flows(agent)]
    assert kept == [("pia", "greet", "1"), ("pia", "greet", "2"), ("pia", "book", "1"), ("max", "greet", "1")]
    await _a_second_active_row_is_refused(durable)
    await store.put_flows("pia", _bundle("new"))
    assert {(r.flow, r.version) for r in await store.active_flows("pia")} == {
        ("book", "new"), ("greet", "new"), ("cancel", "new")}
