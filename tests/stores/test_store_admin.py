"""Listing, pruning, schema versions and ``open_store``."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from store_backends import Backend, PostgresBackend, SQLiteBackend

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import StoreError
from tether.stores import (
    JournalEntry,
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    Store,
    TurnRecords,
    WakeRequest,
    open_store,
)
from tether.stores._sqlite_schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from tether.stores.records import DEFAULT_TENANT
from tether.testing import FakeClock

NewSession = Callable[..., Session]


async def test_list_filters_and_orders_newest_saved_first(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    a = await store.create(new_session(agent="support"))
    clock.advance("1m")
    b = await store.create(new_session(agent="sales"))
    clock.advance("1m")
    c = await store.create(new_session(agent="support", status="completed"))
    clock.advance("1m")
    a = await store.save(a, 0)
    rows = await store.list()
    assert [r.id for r in rows] == [a.id, c.id, b.id]
    assert (rows[0].agent, rows[0].status, rows[0].revision) == ("support", "running", 1)
    assert rows[0].saved_at == clock.now() and rows[0].created_at == a.created_at
    assert [r.id for r in await store.list(agent="support")] == [a.id, c.id]
    assert [r.id for r in await store.list(status="completed")] == [c.id]
    assert [r.id for r in await store.list(agent="sales", status="running")] == [b.id]
    assert [r.id for r in await store.list(limit=2)] == [a.id, c.id]


async def test_list_filters_by_tenant_before_the_limit(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    mine = await store.create(new_session(metadata={"config": {"tenant": "acme"}}))
    untagged = await store.create(new_session())  # no tenant: the default tenant's
    for _ in range(5):  # newer sessions of another tenant must not hide acme's
        clock.advance("1s")
        await store.create(new_session(metadata={"config": {"tenant": "globex"}}))
    assert [r.id for r in await store.list(tenant="acme", limit=1)] == [mine.id]
    assert [r.id for r in await store.list(tenant=DEFAULT_TENANT, limit=1)] == [untagged.id]
    assert len(await store.list(tenant="globex", limit=3)) == 3
    assert await store.list(tenant="nobody") == []


async def test_list_pages_on_from_the_last_summary_of_the_page_before(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    for n in range(7):  # saved at four times, some at the same one: the id orders those
        await store.create(new_session(agent="support" if n != 3 else "sales"))
        if n % 2:
            clock.advance("1s")
    everything = await store.list()
    pages: list[list[str]] = []
    after = None
    while True:
        page = await store.list(limit=3, after=after)
        if not page:
            break
        pages.append([r.id for r in page])
        after = (page[-1].saved_at, page[-1].id)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in p] == [r.id for r in everything]
    support = [r.id for r in everything if r.agent == "support"]
    first = await store.list(agent="support", limit=4)
    rest = await store.list(agent="support", after=(first[-1].saved_at, first[-1].id))
    assert [r.id for r in first + rest] == support and len(rest) == 2


async def test_prune_deletes_only_ended_sessions_older_than_the_cutoff(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    t0 = clock.now()

    def records() -> TurnRecords:
        return TurnRecords(
            messages=[TranscriptMessage(seq=1, role="user", text="hi", at=t0)],
            events=[{"type": "e", "at": t0}],
            journal=[JournalEntry(run_id="r", key="k", kind="tool", at=t0)],
            wakes=[WakeRequest(key="w", at=t0)],
        )

    old_done = await store.create(new_session(status="completed"), records())
    old_aborted = await store.create(new_session(status="aborted"), records())
    old_running = await store.create(new_session(), records())
    clock.advance("2d")
    new_done = await store.create(new_session(status="completed"), records())

    assert await store.prune(older_than=t0) == 0  # strictly older
    assert await store.prune(older_than=t0 + timedelta(days=1)) == 2
    for gone in (old_done, old_aborted):
        assert await store.load(gone.id) is None
        assert await store.transcript(gone.id) == [] and await store.events(gone.id) == []
        assert await store.journal(gone.id) == [] and await store.pending_wakes(gone.id) == []
    for kept in (old_running, new_done):
        assert await store.load(kept.id) is not None
        assert len(await store.transcript(kept.id)) == 1 and len(await store.pending_wakes(kept.id)) == 1
    assert sorted(r.id for r in await store.list()) == sorted([old_running.id, new_done.id])


@pytest.mark.parametrize(
    "durable", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
async def test_schema_version_is_recorded_and_a_newer_one_refused(durable: Backend) -> None:
    store = await durable.make()
    await store.list()  # opens and migrates
    await store.close()
    if isinstance(durable, SQLiteBackend):
        conn = sqlite3.connect(durable.target)
        recorded = conn.execute("SELECT value FROM tether_meta WHERE key = 'schema_version'").fetchone()
        assert recorded == (str(SQLITE_SCHEMA_VERSION),)
        conn.close()
        durable.execute("UPDATE tether_meta SET value = '99' WHERE key = 'schema_version'")
    else:
        assert isinstance(durable, PostgresBackend)
        await durable.execute(f'UPDATE "{durable.schema}".tether_meta SET value = %s', ("99",))
    again = await durable.make()
    with pytest.raises(StoreError, match="newer") as caught:
        await again.list()
    assert caught.value.operation == "open"


async def test_sqlite_reopens_an_existing_database(tmp_path: Path, new_session: NewSession) -> None:
    path = tmp_path / "a" / "b" / "t.db"
    store = await SQLiteStore.open(path)
    doc = await store.create(new_session())
    await store.close()
    reopened = await SQLiteStore.open(path)
    try:
        assert (await reopened.load(doc.id)) == doc
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()
    finally:
        await reopened.close()


async def test_postgres_store_reports_an_unreachable_server() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none", connect_timeout=0.5)
    with pytest.raises(StoreError) as caught:
        await store.load("x")
    assert caught.value.code == "SESSION_STORE_ERROR" and caught.value.operation == "open"
    await store.close()


def test_open_store_maps_urls_and_paths(tmp_path: Path) -> None:
    assert isinstance(open_store("memory:"), MemoryStore)
    bare = open_store(tmp_path / "x.db")
    assert isinstance(bare, SQLiteStore) and bare.path == tmp_path / "x.db"
    absolute = open_store(f"sqlite:///{tmp_path}/y.db")
    assert isinstance(absolute, SQLiteStore) and absolute.path == tmp_path / "y.db"
    relative = open_store("sqlite:///data/z.db")
    assert isinstance(relative, SQLiteStore) and relative.path == Path("data/z.db")
    pg = open_store("postgresql://u@h/db", schema="s1", pool_size=3)
    assert isinstance(pg, PostgresStore) and pg.schema == "s1"
    assert isinstance(open_store("postgres://u@h/db"), PostgresStore)
    with pytest.raises(StoreError):
        open_store("redis://localhost")
    with pytest.raises(StoreError):
        PostgresStore("postgresql://u@h/db", schema='bad"name')


def test_stores_exports_a_sorted_importable_all() -> None:
    import tether.stores as stores

    assert stores.__all__ == sorted(stores.__all__)
    assert all(hasattr(stores, name) for name in stores.__all__)
    assert {"Store", "MemoryStore", "SQLiteStore", "PostgresStore", "open_store"} <= set(stores.__all__)


def test_postgres_store_without_psycopg_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"pip install 'tether\[postgres\]'"):
        PostgresStore("postgresql://u@h/db")
