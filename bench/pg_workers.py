"""PostgreSQL booking throughput, 1 worker process vs 4, with the evidence of what limits it.

Each worker process runs its own booking conversations (``bench/booking.py``) on one shared
schema. 1-worker and 4-worker runs alternate for ``rounds`` rounds (the machine is shared: a
change of load then hits both), and the ratio is the median of each round's 4-worker rate over
its 1-worker rate. Every run also records, over its own span:

* the CPU time of the workers and of the PostgreSQL backends serving them (``/proc``), so the
  cores the bench itself kept busy;
* the machine's CPU from ``/proc/stat``: busy and idle cores, and the busy cores that were not
  the bench's (other tenants of the machine);
* commits (``pg_stat_database.xact_commit``) and WAL flushes (``pg_stat_wal.wal_sync``): commits
  per flush > 1 means group commit is sharing flushes;
* what the bench's backends were doing, sampled from ``pg_stat_activity`` every 10 ms: waiting for
  the client (``ClientRead``: the worker is the slow side), flushing WAL (``WALSync``), waiting for
  a lock, or running.

    TETHER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/pg_workers.py
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from booking import booking_agent, booking_message

from tether.runtime import Runtime
from tether.stores import PostgresStore
from tether.testing import FakeClock

APP = "tether-bench"


def _named(url: str, name: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def _backend_cpu(url: str, name: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving connections named ``name`` (read from
    ``/proc``: the server runs on this machine)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        pids = [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                                               (name,)).fetchall()]
    ticks = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return seconds


async def _worker(url: str, schema: str, worker: int, conversations: int, turns: int) -> None:
    name = f"{APP}-{os.getpid()}"
    store = await PostgresStore.open(_named(url, name), schema=schema)
    runtime = Runtime(booking_agent(), store=store, clock=FakeClock())
    warm: str | None = None
    for turn in range(1, 5):  # warm up: connections, prepared statements, caches
        warm = (await runtime.run("Booker", booking_message(turn, 100_000 + worker), session_id=warm)).session
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # every worker starts at once, after all are warm
    server = _backend_cpu(url, name)
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
    server_cpu = sum(total - server.get(pid, 0.0) for pid, total in _backend_cpu(url, name).items())
    await runtime.close()
    print(json.dumps({"started": started, "ended": ended, "turns": done, "cpu": cpu, "server_cpu": server_cpu}))


def _machine_cpu() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine so far (``/proc/stat``; iowait counts as idle)."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:9]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = values[3] + values[4]
    return (sum(values) - idle) / ticks, idle / ticks


def _server_counters(url: str) -> tuple[int, int]:
    """(commits of this database, WAL flushes of the server) so far."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()), "
                           "(SELECT wal_sync FROM pg_stat_wal)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _sample_waits(url: str, stop: threading.Event, seen: collections.Counter[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.is_set():
            for state, kind, event in conn.execute(
                    "SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
                    "WHERE application_name LIKE %s", (f"{APP}-%",)).fetchall():
                if state == "active":
                    seen[f"{kind}:{event}" if kind else "running"] += 1
                else:
                    seen["waiting for the client" if event == "ClientRead" else f"{state}"] += 1
            stop.wait(0.01)


@dataclass
class Run:
    """One run of ``workers`` processes and what the machine and the server did meanwhile."""

    workers: int
    rate: float  # turns per second over the run's span
    worker_ms: float  # the workers' CPU per turn
    server_ms: float  # the serving backends' CPU per turn
    span: float
    machine_busy: float  # busy cores of the whole machine, averaged over the span
    machine_idle: float
    commits: int
    flushes: int
    waits: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def bench_cores(self) -> float:
        return (self.worker_ms + self.server_ms) * self.rate / 1000

    @property
    def other_cores(self) -> float:
        return max(0.0, self.machine_busy - self.bench_cores)

    def wait_share(self, *names: str) -> float:
        total = sum(self.waits.values()) or 1
        return sum(self.waits[n] for n in names) / total


def run(url: str, schema: str, workers: int, conversations: int, turns: int) -> Run:
    """``workers`` processes started together, each ``conversations`` x ``turns`` booking turns."""
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", url, schema, str(w), str(conversations),
                               str(turns)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for w in range(workers)]
    for proc in procs:  # imported, connected and warmed up
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", "a worker failed to start"
    go_at = time.time()
    busy0, idle0 = _machine_cpu()
    commits0, flushes0 = _server_counters(url)
    stop, waits = threading.Event(), collections.Counter[str]()
    sampler = threading.Thread(target=_sample_waits, args=(url, stop, waits))
    sampler.start()
    reports = []
    try:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, _ = proc.communicate()
            assert proc.returncode == 0, f"worker failed: {out}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        stop.set()
        sampler.join()
    busy1, idle1 = _machine_cpu()
    commits1, flushes1 = _server_counters(url)
    span = max(r["ended"] for r in reports) - min(r["started"] for r in reports)
    elapsed = max(r["ended"] for r in reports) - go_at
    done = sum(r["turns"] for r in reports)
    return Run(workers=workers, rate=done / span, worker_ms=sum(r["cpu"] for r in reports) / done * 1000,
               server_ms=sum(r["server_cpu"] for r in reports) / done * 1000, span=span,
               machine_busy=(busy1 - busy0) / elapsed, machine_idle=(idle1 - idle0) / elapsed,
               commits=commits1 - commits0, flushes=flushes1 - flushes0, waits=waits)


def compare(url: str, schema: str, rounds: int, conversations: int, turns: int) -> list[tuple[str, str, str]]:
    """Alternate 1-worker and 4-worker runs; rows of (measure, value, note) with the evidence."""
    ones, fours = [], []
    for _ in range(rounds):
        ones.append(run(url, schema, 1, conversations, turns))
        fours.append(run(url, schema, 4, conversations, turns))
    ratios = [f.rate / o.rate for o, f in zip(ones, fours, strict=True)]
    cores = os.cpu_count() or 1
    rows = []
    for label, runs in (("1 worker process", ones), ("4 worker processes", fours)):
        mid = sorted(runs, key=lambda r: r.rate)[len(runs) // 2]
        rows.append((f"PostgreSQL, {label}", f"{statistics.median(r.rate for r in runs):.0f} turns/s",
                     f"runs {', '.join(f'{r.rate:.0f}' for r in runs)}; CPU per turn worker {mid.worker_ms:.2f} + "
                     f"server {mid.server_ms:.2f} ms"))
        rows.append((f"  cores (of {cores}): bench / others / idle",
                     f"{mid.bench_cores:.2f} / {mid.other_cores:.2f} / {mid.machine_idle:.2f}",
                     f"median run; commits {mid.commits / mid.span:.0f}/s, {mid.commits / max(1, mid.flushes):.1f} "
                     f"per WAL flush"))
        rows.append(("  backends: client / WAL flush / lock / run",
                     " / ".join(f"{100 * mid.wait_share(*names):.0f}%" for names in (
                         ("waiting for the client",), ("IO:WALSync", "IO:WALWrite", "LWLock:WALWrite"),
                         tuple(k for k in mid.waits if k.startswith("Lock:")), ("running",))),
                     "share of the samples of the bench's backends"))
    ratio = statistics.median(ratios)
    rows.append(("PostgreSQL 4 workers / 1", f"{ratio:.2f}x",
                 f"median of {rounds} paired rounds ({', '.join(f'{r:.2f}' for r in ratios)}); goal >= 1.8"))
    rows.append(("  where the limit is", "", verdict(ones, fours, ratio, cores)))
    return rows


def verdict(ones: list[Run], fours: list[Run], ratio: float, cores: int) -> str:
    """What the runs show about the 4-worker limit, in one sentence with its numbers."""
    one = sorted(ones, key=lambda r: r.rate)[len(ones) // 2]
    four = sorted(fours, key=lambda r: r.rate)[len(fours) // 2]
    cpu_per_turn = (four.worker_ms + four.server_ms) / 1000
    need = 1.8 * one.rate * cpu_per_turn  # cores 4 workers need for 1.8x one worker
    free = cores - four.other_cores  # what the other tenants left the bench
    client = four.wait_share("waiting for the client")
    flush = four.wait_share("IO:WALSync", "IO:WALWrite", "LWLock:WALWrite")
    if need > free:
        return (f"CPU: one worker alone kept {one.bench_cores:.2f} cores busy; "
                f"1.8x one worker needs {need:.2f} cores ({1.8 * one.rate:.0f} turns/s x "
                f"{cpu_per_turn * 1000:.2f} ms), others left {free:.2f} of {cores} "
                f"(idle {four.machine_idle:.2f}); backends waited on the client {100 * client:.0f}% of the time, "
                f"on WAL flushes {100 * flush:.0f}%")
    if flush > client:
        return f"WAL flushes: backends spent {100 * flush:.0f}% flushing, {four.commits / max(1, four.flushes):.1f} " \
               f"commits per flush"
    return (f"not CPU ({need:.2f} cores needed, {free:.2f} left) nor WAL ({100 * flush:.0f}% flushing): "
            f"backends waited on the client {100 * client:.0f}%; ratio {ratio:.2f}x")


async def prepare_schema(url: str, schema: str) -> None:
    store = await PostgresStore.open(url, schema=schema)
    await store.close()


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def measure(url: str, rounds: int = 3, conversations: int = 4, turns: int = 40) -> list[tuple[str, str, str]]:
    """The comparison on a fresh schema (dropped afterwards)."""
    schema = f"tether_bench_{uuid.uuid4().hex[:8]}"
    try:
        asyncio.run(prepare_schema(url, schema))
        return compare(url, schema, rounds, conversations, turns)
    finally:
        drop_schema(url, schema)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, schema, worker, conversations, turns = sys.argv[2:7]
        asyncio.run(_worker(url, schema, int(worker), int(conversations), int(turns)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    postgres = os.environ.get("TETHER_TEST_POSTGRES_URL")
    if not postgres:
        sys.exit("set TETHER_TEST_POSTGRES_URL")
    print(f"load (1 min) before: {os.getloadavg()[0]:.1f}")
    for name, value, note in measure(postgres, args.rounds, args.conversations, args.turns):
        print(f"{name:<44} {value:>20}  {note}")
    print(f"load (1 min) after: {os.getloadavg()[0]:.1f}")
