"""The session lease (``Store.lease``): one holder at a time per session, across store instances
and processes; a timeout; released when its holder is SIGKILLed; kept alive while held."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from store_backends import Backend, PostgresBackend, SQLiteBackend, require_postgres, run_in_lockstep

from tether.engine.core.session import Session
from tether.errors import SessionLeaseTimeout, StoreError
from tether.stores import PostgresStore, SQLiteStore, Store
from tether.stores._sqlite_schema import MIGRATIONS
from tether.stores.leases import holder_is_dead, new_holder
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


# ---------------------------------------------------------------------- SQLite: the lease row


def _lease_row(path: str, session_id: str) -> tuple[str, int] | None:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT holder, expires_at FROM tether_leases WHERE session_id = ?",
                           (session_id,)).fetchone()
    finally:
        conn.close()
    return None if row is None else (row[0], row[1])


def _now_us() -> int:
    return int(time.time() * 1_000_000)


@pytest.mark.parametrize("durable", ["sqlite"], indirect=True)
async def test_sqlite_takes_over_an_expired_lease_of_another_host(durable: Backend) -> None:
    assert isinstance(durable, SQLiteBackend)
    store = await durable.make()
    await store.list()  # creates the tables
    durable.execute("INSERT INTO tether_leases VALUES ('s', 'elsewhere|1|x', ?)", (_now_us() + 60_000_000,))
    with pytest.raises(SessionLeaseTimeout) as caught:  # another host's live lease: we cannot judge it
        async with store.lease("s", timeout=0.1):
            pass
    assert caught.value.holder == "elsewhere|1|x"
    durable.execute("UPDATE tether_leases SET expires_at = ? WHERE session_id = 's'", (_now_us() - 1,))
    async with store.lease("s", timeout=5):
        row = _lease_row(durable.target, "s")
        assert row is not None and row[0] != "elsewhere|1|x"
    assert _lease_row(durable.target, "s") is None  # released: the row is gone


async def test_sqlite_renews_a_lease_while_it_is_held(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    store = SQLiteStore(path, lease_ttl=0.3)
    try:
        async with store.lease("long"):
            first = _lease_row(path, "long")
            assert first is not None
            for _ in range(100):  # a long turn: wait for a renewal (every ttl / 3)
                await asyncio.sleep(0.05)
                renewed = _lease_row(path, "long")
                if renewed is not None and renewed[1] > first[1]:
                    break
            else:
                pytest.fail("the lease was never renewed")
            assert renewed[0] == first[0]
    finally:
        await store.close()


def test_sqlite_lease_ttl_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease_ttl"):
        SQLiteStore(tmp_path / "t.db", lease_ttl=0)


def test_holder_is_dead_only_for_a_vanished_process_of_this_host() -> None:
    me = new_holder()
    assert not holder_is_dead(me)
    host = me.split("|")[0]
    assert not holder_is_dead(f"{host}|{os.getppid()}|x")  # alive
    assert not holder_is_dead(f"another-{host}|999999999|x")  # another host: not ours to judge
    assert not holder_is_dead("garbage")
    assert holder_is_dead(f"{host}|{_dead_pid()}|x")


def test_an_exited_holder_its_parent_has_not_reaped_yet_is_dead() -> None:
    import subprocess

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs Linux /proc")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for _ in range(500):  # until it has exited (a zombie: still in the process table)
            with open(f"/proc/{proc.pid}/stat") as stat:
                if stat.read().rpartition(")")[2].split()[0] == "Z":
                    break
            time.sleep(0.01)
        else:
            pytest.fail("the child never exited")
        assert holder_is_dead(f"{new_holder().split('|')[0]}|{proc.pid}|x")
    finally:
        proc.wait()


def _dead_pid() -> int:
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


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
            assert _lease_row(str(path), "s") is not None
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
