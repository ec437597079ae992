"""Several OS processes: no wake fired twice on PostgreSQL; a SIGKILLed worker loses nothing committed
(its committed checkpoints included)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from runtime_helpers import counter_agent, msg, relay_agent, waiting_agent
from store_backends import PostgresBackend, require_postgres, run_in_lockstep

from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock

WORKER = Path(__file__).with_name("runtime_worker.py")
SESSIONS = 24


async def spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


@pytest.mark.postgres
async def test_two_worker_processes_fire_every_wake_exactly_once(clock: FakeClock) -> None:
    backend = PostgresBackend(clock, require_postgres())
    try:
        store = await backend.make()
        runtime = Runtime(waiting_agent(), store=store, clock=clock)
        sessions = [(await runtime.run("Waiter", msg())).session for _ in range(SESSIONS)]
        due = {(w.session_id, w.key) for w in await store.pending_wakes()}
        assert len(due) == SESSIONS
        now = (clock.now() + timedelta(hours=2)).isoformat()
        procs = [await spawn("wakes", backend.target, backend.schema, now) for _ in range(2)]
        results = await run_in_lockstep(procs)
        fired = [(s, k) for result in results for s, k in result["fired"]]
        print("wakes fired per worker:", [len(result["fired"]) for result in results])
        assert sorted(fired) == sorted(due)  # every wake once, none twice
        for session_id in sessions:
            doc = await store.load(session_id)
            assert doc is not None and doc.revision == 3  # exactly one wake turn (checkpoint + final save)
            assert doc.data == {"fired": True} and doc.runs == []
        assert await store.pending_wakes() == []
    finally:
        await backend.aclose()


async def test_a_worker_killed_mid_turn_loses_nothing_committed(tmp_path: Path) -> None:
    db = tmp_path / "tether.db"
    marker = tmp_path / "in-flight"
    runtime = Runtime(counter_agent(), store=SQLiteStore(db), clock=FakeClock())
    try:
        first = await runtime.run("Counter", msg())
        assert first.message == "n=1"
        proc = await spawn("blocker", str(db), first.session, str(marker))
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line.strip() != b"committed":
            _, err = await proc.communicate()
            pytest.fail(f"worker failed: {line!r} {err.decode()[-2000:]}")
        await kill_when_marked(proc, marker)
        stored = await runtime.store.load(first.session)
        assert stored is not None and stored.status == "running"
        # the child's committed turn is there (checkpoint 2, final save 3, n=2); the killed turn blocked in
        # its first node, before any move: nothing of it was written (no restore save either)
        assert stored.revision == 3 and stored.data == {"n": 2}
        texts = [m.text for m in await runtime.store.transcript(first.session)]
        assert texts == ["hello", "n=1", "child", "n=2"]
        following = await runtime.run("Counter", msg(), session_id=first.session)
        assert following.success and following.session == first.session and following.message == "n=3"
        after = await runtime.store.load(first.session)
        assert after is not None and after.revision == 5
    finally:
        await runtime.close()
    assert_integrity(db)


async def kill_when_marked(proc: asyncio.subprocess.Process, marker: Path) -> None:
    try:
        for _ in range(3000):
            if marker.exists():
                break
            if proc.returncode is not None:
                _, err = await proc.communicate()
                pytest.fail(f"worker exited: {err.decode()[-2000:]}")
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the blocking turn never started")
        os.kill(proc.pid, signal.SIGKILL)
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def assert_integrity(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


async def test_a_worker_killed_after_a_checkpoint_leaves_the_checkpoint_committed(tmp_path: Path) -> None:
    db = tmp_path / "tether.db"
    marker = tmp_path / "in-flight"
    runtime = Runtime(relay_agent(), store=SQLiteStore(db), clock=FakeClock())
    try:
        first = await runtime.run("Relay", msg())
        assert first.message == "prepped=1 held=1"
        before = await runtime.store.load(first.session)
        assert before is not None and before.revision == 2
        events_before = len(await runtime.store.events(first.session))
        # the child's turn: prep runs, the move prep -> hold is checkpointed, hold blocks; SIGKILL
        await kill_when_marked(await spawn("relay", str(db), first.session, str(marker)), marker)
        stored = await runtime.store.load(first.session)
        assert stored is not None and stored.status == "running"
        assert stored.revision == 3  # the checkpoint, and nothing after it
        assert stored.data == {"prepped": 2, "held": 1} and [(r.node, r.status) for r in stored.runs] == [
            ("hold", "running")]
        assert [m.text for m in await runtime.store.transcript(first.session)] == [
            "hello", "prepped=1 held=1", "blocked"]  # the checkpoint's records were committed with it
        assert len(await runtime.store.events(first.session)) > events_before
        assert stored.turn is not None and stored.turn.input["id"] == "child-1"  # the unfinished turn's mark
        # a new message does not inherit the unfinished turn: that turn is completed first, resuming at the
        # node its checkpoint recorded (prep does not run again) and its reply is recorded as its own; then
        # the new message gets a turn (and a reply) of its own
        following = await runtime.run("Relay", msg("next"), session_id=first.session)
        assert following.success and following.session == first.session and following.message == "prepped=3 held=3"
        assert [m.text for m in await runtime.store.transcript(first.session)] == [
            "hello", "prepped=1 held=1", "blocked", "prepped=2 held=2", "next", "prepped=3 held=3"]
        after = await runtime.store.load(first.session)
        # the continuation: checkpoint 4 (hold -> done), final 5; the new turn: checkpoints 6, 7, final 8
        assert after is not None and after.revision == 8 and after.runs == [] and after.turn is None
    finally:
        await runtime.close()
    assert_integrity(db)
