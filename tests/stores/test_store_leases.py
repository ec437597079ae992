"""The session lease (``Store.lease``): one holder at a time per session, across store instances
and processes; a timeout; released when its holder is SIGKILLed; kept alive while held."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from store_backends import Backend, PostgresBackend, require_postgres, run_in_lockstep

from tether.engine.core.session import Session
from tether.errors import SessionLeaseTimeout, StoreError
from tether.stores import PostgresStore, SQLiteStore, Store
from tether.stores._sqlite_schema import MIGRATIONS
from tether.testing import FakeClock

WORKER = Path(__file__).with_name("lease_worker.py")


async def spawn(backend: Backend, mode: str, session_id: str, loops: int = 0) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), mode, backend.name, backend.target, backend.schema or "-", session_id,
        str(loops), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_a_second_holder_waits_for_the_first_across_store_instances(backend: Backend) -> None:
    first, second = await backend.make(), await backend.make()
    order: list[str] = []
    async with first.lease("s1"):
        waiter = asyncio.create_task(_enter(second, "s1", order))
        for _ in range(20):  # give the waiter every chance to overtake
            await asyncio.sleep(0.005)
        order.append("first leaves")
    await asyncio.wait_for(waiter, 30)
    assert order == ["first leaves", "second enters"]


async def _enter(store: Store, session_id: str, order: list[str]) -> None:
    async with store.lease(session_id, timeout=30):
        order.append("second enters")


async def test_a_held_lease_times_out_naming_the_session(backend: Backend) -> None:
    first, second = await backend.make(), await backend.make()
    async with first.lease("busy"):
        with pytest.raises(SessionLeaseTimeout) as caught:
            async with second.lease("busy", timeout=0.2):
                pytest.fail("entered a lease another holder has")
    error = caught.value
    assert error.code == "SESSION_LEASE_TIMEOUT" and error.session_id == "busy"
    assert "'busy'" in error.message and "0.2s" in error.message
    async with second.lease("busy", timeout=5):  # released: free again
        pass


async def test_leases_of_different_sessions_do_not_wait_for_each_other(backend: Backend) -> None:
    first, second = await backend.make(), await backend.make()
    async with first.lease("a"), second.lease("b", timeout=5), first.lease("c", timeout=5):
        pass


async def test_a_lease_is_released_when_its_body_raises(backend: Backend) -> None:
    store = await backend.make()
    with pytest.raises(ZeroDivisionError):
        async with store.lease("s"):
            raise ZeroDivisionError
    async with (await backend.make()).lease("s", timeout=5):
        pass


async def test_a_sigkilled_holder_does_not_block_the_session(durable: Backend) -> None:
    proc = await spawn(durable, "hold", "victim")
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line.strip() != b"held":
            _, err = await proc.communicate()
            pytest.fail(f"worker did not take the lease: {line!r} {err.decode()[-2000:]}")
        store = await durable.make()
        with pytest.raises(SessionLeaseTimeout):  # the live holder has it
            async with store.lease("victim", timeout=0.2):
                pass
        os.kill(proc.pid, signal.SIGKILL)
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL
        async with store.lease("victim", timeout=20):  # freed at once, not after the 30 s expiry
            pass
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("mode", ["count", "count-held"])
async def test_processes_under_the_lease_never_conflict(durable: Backend, new_session: Callable[..., Session],
                                                        mode: str) -> None:
    """Also through ``lease_and_load`` / ``save_and_release``: the next holder never reads a
    document older than the save that released the lease to it."""
    store = await durable.make()
    doc = await store.create(new_session(data={"counter": 0}))
    procs = [await spawn(durable, mode, doc.id, 15) for _ in range(3)]
    results = await run_in_lockstep(procs)
    assert [r["conflicts"] for r in results] == [0, 0, 0]  # they waited their turn instead of racing
    final = await store.load(doc.id)
    assert final is not None and final.revision == 45 and final.data["counter"] == 45


# ---------------------------------------------------------------------- SQLite: a lock on a byte of the lease file


def _commits(store: SQLiteStore) -> list[str]:
    """The writes the store's connection makes from now on (its trace of every statement)."""
    seen: list[str] = []
    assert store._conn is not None
    store._conn.set_trace_callback(lambda statement: seen.append(statement)
                                   if statement.split(None, 1)[0].upper() in ("BEGIN", "COMMIT", "INSERT",
                                                                              "UPDATE", "DELETE") else None)
    return seen


async def test_sqlite_takes_and_releases_a_lease_without_a_write(tmp_path: Path,
                                                                 new_session: Callable[..., Session]) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    try:
        doc = await store.create(new_session())
        writes = _commits(store)
        async with store.lease_and_load(doc.id, timeout=5) as held:
            assert await held.load() == doc
            assert writes == []  # the take and the read wrote nothing
            await store.save_and_release(doc, doc.revision, None, held)
        assert [w.split(None, 1)[0].upper() for w in writes].count("COMMIT") == 1  # the save, nothing else
        assert (tmp_path / "t.db-lease").exists()
    finally:
        await store.close()


async def test_sqlite_leases_exclude_each_other_across_threads_of_one_process(tmp_path: Path) -> None:
    """Two stores of one database on two event loops (two threads): the process's own set of held
    sessions decides, since the kernel would grant a second lock to the same process."""
    path = tmp_path / "t.db"
    mine, other = SQLiteStore(path), SQLiteStore(path)
    entered = threading.Event()

    def elsewhere() -> str:
        async def attempt() -> str:
            try:
                async with other.lease("s", timeout=0.2):
                    return "entered"
            except SessionLeaseTimeout as exc:
                return exc.holder or ""
        entered.wait(10)
        return asyncio.run(attempt())

    async with mine.lease("s", timeout=5):
        entered.set()
        holder = await asyncio.to_thread(elsewhere)
    assert holder == "another task of this process"
    async with other.lease("s", timeout=5):  # released: free again
        pass


async def test_sqlite_lease_of_another_process_names_it(durable: Backend) -> None:
    if durable.name != "sqlite":
        pytest.skip("the holder named in the error is SQLite's")
    proc = await spawn(durable, "hold", "held-elsewhere")
    try:
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"held"
        store = await durable.make()
        with pytest.raises(SessionLeaseTimeout) as caught:
            async with store.lease("held-elsewhere", timeout=0.2):
                pass
        assert caught.value.holder == "another process"
    finally:
        proc.kill()
        await proc.wait()


def test_sqlite_lease_ttl_is_no_longer_used(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="lease_ttl"):
        SQLiteStore(tmp_path / "t.db", lease_ttl=30)


async def test_a_memory_database_has_process_local_leases() -> None:
    first, second = SQLiteStore(":memory:"), SQLiteStore(":memory:")
    try:
        async with first.lease("s", timeout=5), second.lease("s", timeout=5):  # two databases: no contention
            with pytest.raises(SessionLeaseTimeout):
                async with first.lease("s", timeout=0.05):
                    pass
    finally:
        await first.close()
        await second.close()


async def test_a_closed_store_refuses_a_lease(durable: Backend) -> None:
    store = await durable.make()
    await store.list()
    await store.close()
    with pytest.raises(StoreError):
        async with store.lease("s", timeout=1):
            pass


async def test_sqlite_upgrades_a_version_1_database_with_the_lease_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in MIGRATIONS[0][1]:  # what a tether of schema version 1 created
        conn.execute(statement)
    conn.execute("CREATE TABLE tether_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO tether_meta VALUES ('schema_version', '1')")
    conn.close()
    store = SQLiteStore(path)
    try:
        async with store.lease("s", timeout=5):
            await store.list()  # opened: the schema migrated
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM tether_meta").fetchone() == (str(MIGRATIONS[-1][0]),)
    finally:
        conn.close()


@pytest.mark.postgres
async def test_postgres_replaces_a_pooled_connection_the_server_dropped(clock: FakeClock) -> None:
    backend = PostgresBackend(clock, require_postgres())
    store = PostgresStore(backend.target, schema=backend.schema, pool_size=1, clock=clock)
    backend.stores.append(store)
    try:
        doc = await store.create(Session(id="s", agent="a", created_at=clock.now()))
        async with store._connection("test") as conn:  # the pool's only connection
            pid = (await (await conn.execute("SELECT pg_backend_pid()")).fetchall())[0][0]
        await backend.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))  # a restart, a failover
        assert await store.load("s") == doc  # checked before use, replaced: no error reaches the caller
    finally:
        await backend.aclose()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_forked_child_holds_none_of_its_parents_sqlite_leases(tmp_path: Path) -> None:
    """The kernel does not copy record locks to a child: the child's own set starts empty, so it
    waits for the parent's session like any other process, and takes another one."""
    store = SQLiteStore(tmp_path / "t.db")
    async with store.lease("parents", timeout=5):
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status, never return into pytest
            code = 1
            try:
                async def child() -> int:
                    try:
                        async with store.lease("parents", timeout=0.2):
                            return 2  # entered a lease the parent holds
                    except SessionLeaseTimeout as exc:
                        if exc.holder != "another process":
                            return 3
                    async with store.lease("childs", timeout=5):
                        return 0
                code = asyncio.run(child())
            finally:
                os._exit(code)
        _, status = await asyncio.to_thread(os.waitpid, pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    await store.close()


async def test_sqlite_leases_of_one_database_reached_by_a_symlink_and_another_folder_exclude_each_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deploys name one database differently (a relative path from another folder, a symlink): the
    lease file is found from the database's real path, so they all wait for each other."""
    (tmp_path / "data").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "link.db").symlink_to(tmp_path / "data" / "t.db")
    monkeypatch.chdir(tmp_path / "app")
    real, relative, linked = SQLiteStore(tmp_path / "data" / "t.db"), SQLiteStore("../data/t.db"), \
        SQLiteStore(tmp_path / "link.db")
    try:
        async with real.lease("s", timeout=5):
            for other in (relative, linked):
                with pytest.raises(SessionLeaseTimeout):
                    async with other.lease("s", timeout=0.05):
                        pass
        assert (tmp_path / "data" / "t.db-lease").exists() and not (tmp_path / "link.db-lease").exists()
    finally:
        for store in (real, relative, linked):
            await store.close()
