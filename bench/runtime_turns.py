"""Time per booking turn: pure engine, hosted in memory, on SQLite, on PostgreSQL (1 vs 4 workers).

Every figure comes with its floor, measured in the same run:

* ``Agent.turn`` alone (no store: the document is passed from turn to turn) is the pure turn;
  ``Runtime`` + ``MemoryStore`` is the hosted in-memory turn (goal: <= 2x the pure turn);
* ``Runtime`` + ``SQLiteStore`` against one fsync commit (``BEGIN IMMEDIATE``, one small insert,
  ``COMMIT`` in a WAL database on the same disk; goal: <= 3x that commit);
* the same kinds of turn at turns 197-200 vs turns 1-4: the summed per-turn minimums of each
  window of four (goal: <= 1.1x);
* PostgreSQL (``TETHER_TEST_POSTGRES_URL``): booking turns per second with 4 worker processes
  vs 1, each worker its own conversations on one shared schema (goal: >= 1.8x).

The conversation is the four-message booking cycle of ``bench/booking.py`` (no model).

    python bench/runtime_turns.py [--conversations 10] [--turns 200]
    TETHER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/runtime_turns.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from booking import booking_agent, booking_message

from tether.runtime import Runtime
from tether.stores import MemoryStore, PostgresStore, SQLiteStore, Store
from tether.testing import FakeClock

Timings = list[list[float]]  # per conversation, per turn (ms)


async def pure(conversations: int, turns: int) -> Timings:
    out: Timings = []
    for c in range(conversations):
        clock = FakeClock()
        agent = booking_agent().with_clock(clock)
        session = None
        row = []
        for turn in range(1, turns + 1):
            clock.advance("5s")
            started = time.perf_counter()
            result = await agent.turn(session, booking_message(turn, c))
            row.append((time.perf_counter() - started) * 1000)
            session = result.session
        out.append(row)
    return out


async def hosted(make_store: object, conversations: int, turns: int) -> Timings:
    out: Timings = []
    for c in range(conversations):
        clock = FakeClock()
        store: Store = make_store(c)  # type: ignore[operator]
        await store.list()  # the database is opened (and its tables made) before the clock starts
        runtime = Runtime(booking_agent(), store=store, clock=clock)
        session_id = None
        row = []
        try:
            for turn in range(1, turns + 1):
                clock.advance("5s")
                started = time.perf_counter()
                response = await runtime.run("Booker", booking_message(turn, c), session_id=session_id)
                row.append((time.perf_counter() - started) * 1000)
                assert response.success, response.message
                session_id = response.session
        finally:
            await runtime.close()
        out.append(row)
    return out


def fsync_commit_ms(directory: Path, commits: int = 300) -> float:
    """The median time of one small committed write in a WAL database (the SQLite floor)."""
    conn = sqlite3.connect(str(directory / "floor.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    timings = []
    for _ in range(commits):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (body) VALUES (?)", ("x" * 200,))
        conn.execute("COMMIT")
        timings.append((time.perf_counter() - started) * 1000)
    conn.close()
    return statistics.median(timings)


def per_turn(timings: Timings) -> float:
    return statistics.median(t for row in timings for t in row)


def window(timings: Timings, first: int, last: int) -> float:
    """Turns ``first..last`` (from 1): the sum over those turns of each turn's fastest time over
    the conversations (turn ``first + i`` is the same kind of turn in every window of four; the
    minimum, because on a shared machine noise only ever adds time)."""
    return sum(min(row[turn - 1] for row in timings) for turn in range(first, last + 1))


# ---------------------------------------------------------------------- PostgreSQL workers

async def _pg_worker(url: str, schema: str, worker: int, conversations: int, turns: int, go_at: float) -> None:
    store = await PostgresStore.open(url, schema=schema)
    runtime = Runtime(booking_agent(), store=store, clock=FakeClock())
    await runtime.run("Booker", booking_message(1, 10_000 + worker))  # warm up (connection, caches)
    await asyncio.sleep(max(0.0, go_at - time.time()))
    started, cpu = time.time(), time.process_time()
    done = 0
    for c in range(conversations):
        session_id = None
        for turn in range(1, turns + 1):
            response = await runtime.run("Booker", booking_message(turn, worker * 1000 + c), session_id=session_id)
            assert response.success, response.message
            session_id = response.session
            done += 1
    ended, cpu = time.time(), time.process_time() - cpu
    await runtime.close()
    print(json.dumps({"started": started, "ended": ended, "turns": done, "cpu": cpu}))


def pg_throughput(url: str, schema: str, workers: int, conversations: int, turns: int) -> tuple[float, float]:
    """Booking turns per second over ``workers`` processes started together, and the workers'
    own CPU time per turn (ms): the rest of a turn's time is the server's work and waiting."""
    go_at = time.time() + 3.0 + 0.5 * workers
    procs = [subprocess.Popen([sys.executable, __file__, "--pg-worker", url, schema, str(w), str(conversations),
                               str(turns), str(go_at)], stdout=subprocess.PIPE, text=True)
             for w in range(workers)]
    reports = []
    for proc in procs:
        out, _ = proc.communicate()
        assert proc.returncode == 0, f"worker failed: {out}"
        reports.append(json.loads(out.strip().splitlines()[-1]))
    span = max(r["ended"] for r in reports) - min(r["started"] for r in reports)
    done = sum(r["turns"] for r in reports)
    return done / span, sum(r["cpu"] for r in reports) / done * 1000


async def prepare_schema(url: str, schema: str) -> None:
    store = await PostgresStore.open(url, schema=schema)
    await store.close()


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def main(conversations: int, turns: int) -> None:
    rows: list[tuple[str, str, str]] = []
    await pure(1, 8)  # warm up (imports, compiled patterns, schema caches)
    await hosted(lambda c: MemoryStore(), 1, 8)
    floor = await pure(conversations, turns)
    memory = await hosted(lambda c: MemoryStore(), conversations, turns)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        commit = fsync_commit_ms(directory)
        sqlite = await hosted(lambda c: SQLiteStore(directory / f"bench{c}.db"), conversations, turns)
    pure_ms, memory_ms, sqlite_ms = per_turn(floor), per_turn(memory), per_turn(sqlite)
    rows.append(("Agent.turn, pure (floor)", f"{pure_ms:.3f} ms", ""))
    rows.append(("Runtime + MemoryStore", f"{memory_ms:.3f} ms", f"{memory_ms / pure_ms:.2f}x pure (goal <= 2)"))
    rows.append(("one fsync commit (floor)", f"{commit:.3f} ms", ""))
    rows.append(("Runtime + SQLiteStore", f"{sqlite_ms:.3f} ms", f"{sqlite_ms / commit:.2f}x commit (goal <= 3)"))
    last = turns - 3
    for name, timings in (("pure", floor), ("memory", memory), ("sqlite", sqlite)):
        a, b = window(timings, 1, 4), window(timings, last, turns)
        rows.append((f"{name}: turns {last}-{turns} / 1-4", f"{b:.2f} / {a:.2f} ms", f"{b / a:.2f}x (goal <= 1.1)"))
    url = os.environ.get("TETHER_TEST_POSTGRES_URL")
    if url:
        schema = f"tether_bench_{uuid.uuid4().hex[:8]}"
        try:
            await prepare_schema(url, schema)
            pg = await hosted(lambda c: PostgresStore(url, schema=schema), 2, min(turns, 100))
            rows.append(("Runtime + PostgresStore", f"{per_turn(pg):.3f} ms", ""))
            one, one_cpu = pg_throughput(url, schema, 1, 4, 40)
            four, four_cpu = pg_throughput(url, schema, 4, 4, 40)
            rows.append(("PostgreSQL, 1 worker process", f"{one:.0f} turns/s",
                         f"worker CPU {one_cpu:.2f} ms/turn = {one_cpu * one / 10:.0f}% of one core"))
            rows.append(("PostgreSQL, 4 worker processes", f"{four:.0f} turns/s",
                         f"{four / one:.2f}x one (goal >= 1.8); worker CPU {four_cpu:.2f} ms/turn = "
                         f"{four_cpu * four / 10:.0f}% of one core, of {os.cpu_count()} cores; "
                         f"load {os.getloadavg()[0]:.1f}"))
        finally:
            drop_schema(url, schema)
    else:
        rows.append(("PostgreSQL", "skipped", "TETHER_TEST_POSTGRES_URL is not set"))
    print(f"booking conversation: {conversations} conversations x {turns} turns; medians per turn")
    for name, value, ratio in rows:
        print(f"{name:<36} {value:>22}  {ratio}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--pg-worker":
        url, schema, worker, conversations, turns, go_at = sys.argv[2:8]
        asyncio.run(_pg_worker(url, schema, int(worker), int(conversations), int(turns), float(go_at)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.conversations, args.turns))
