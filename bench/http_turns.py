"""Turns per second over HTTP (``tether serve``) against the same turns in process, at 16 and 64 users.

Each user is one booking conversation (``bench/booking.py``, no model) on a keep-alive connection
of its own: its first message creates the session (``POST /v1/agents/{agent}/messages``; a server
without that route gets ``POST .../sessions`` first, as before), then ``--turns`` messages in all.
The server is ``tether serve bench/booking_app.py`` on a SQLite file, one worker. Printed per
number of users:

* HTTP turns per second, and the server's CPU ms per turn (its process's user + system time from
  ``/proc``, the store's thread included);
* in process: the same conversations through one ``Runtime`` (``bench/throughput.py``'s
  measurement, in a fresh interpreter, which like ``tether serve`` freezes what start-up made
  out of the garbage collector's view), turns per second and CPU ms per turn;
* the ratios: HTTP / in process turns per second (goal >= 0.8), and the server's CPU per HTTP turn
  / the in-process CPU per turn (goal <= 1.25), per round and their medians over ``--rounds``
  paired rounds (default 3; the order of the two alternates), so a change of machine load hits
  both alike.

The load generator (a raw HTTP/1.1 client on asyncio streams, the cheapest there is in Python)
runs on the same machine and takes CPU from the server; on 2 cores that weighs on the HTTP figure.
Whether uvloop and httptools are installed (the ``fast`` extra) is printed.

    python bench/http_turns.py [--users 16 64] [--turns 40] [--rounds 3] [--against DIR]
    TETHER_TEST_POSTGRES_URL=postgresql://... python bench/http_turns.py --workers 2 --users 16 64

``--against DIR`` also serves from another checkout's ``src`` (``git worktree add DIR <commit>``)
and prints this / that for the HTTP turns per second, in the same run.

``--workers N`` instead compares ``tether serve --workers N`` with one worker on PostgreSQL (a
fresh database on the server of ``TETHER_TEST_POSTGRES_URL`` per run, dropped afterwards), in
paired rounds at each number of users: turns per second of each and their ratio (goal: >= 0.95
on a 2-core machine, >= 1.7 where the cores allow); a failed request (a conflict included; goal
0) stops the bench.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from booking import CYCLE  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Connection:
    """One keep-alive HTTP/1.1 connection sending JSON requests."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        data = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length)
        return status, json.loads(payload) if payload else None

    def close(self) -> None:
        self.writer.close()


async def user(port: int, c: int, turns: int, old_way: list[bool]) -> None:
    conn = await Connection.open(port)
    base = "/v1/agents/Booker"
    try:
        session = None
        for turn in range(1, turns + 1):
            body = {"text": CYCLE[(turn - 1) % len(CYCLE)], "id": f"u{c}m{turn}"}
            if session is None and not old_way[0]:
                status, answer = await conn.post(f"{base}/messages", body)
                if status in (404, 405):  # a server before the first-message route
                    old_way[0] = True
            if session is None and old_way[0]:
                status, created = await conn.post(f"{base}/sessions", {})
                session = created["session"]
            if session is not None:
                status, answer = await conn.post(f"{base}/sessions/{session}/messages", body)
            if status != 200 or not answer["success"]:
                raise SystemExit(f"turn failed: {status} {answer}")
            session = answer["session"]
    finally:
        conn.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def http_run(src: Path, users: int, turns: int, store: str | None = None,
                   workers: int = 1) -> dict[str, float]:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(src)}
        env.pop("TETHER_API_KEYS", None)
        server = subprocess.Popen(
            [sys.executable, "-c", "from tether.cli import main; main()", "serve", str(HERE / "booking_app.py"),
             "--db", store or str(Path(tmp) / "http.db"), "--port", str(port), "--workers", str(workers)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                try:
                    conn = await Connection.open(port)
                    conn.close()
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(2 if workers > 1 else 0)  # every worker up (the first one answers first)
            old_way = [False]
            # warm up every worker (8 connections per worker: each worker takes its share)
            await asyncio.gather(*(user(port, users + w, 8, old_way) for w in range(8 * workers)))
            pids = [server.pid, *children(server.pid)]
            cpu, wall = sum(map(cpu_seconds, pids)), time.perf_counter()
            await asyncio.gather(*(user(port, c, turns, old_way) for c in range(users)))
            wall, cpu = time.perf_counter() - wall, sum(map(cpu_seconds, pids)) - cpu
        finally:
            server.terminate()
            server.wait(30)
    done = users * turns
    return {"turns_per_s": done / wall, "cpu_ms": cpu * 1000 / done}


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (the workers of ``tether serve --workers``)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def compare_workers(users_counts: list[int], turns: int, workers: int, rounds: int) -> None:
    """``--workers N`` against one worker on a fresh PostgreSQL schema, in paired rounds."""
    import statistics
    import uuid

    import psycopg

    url = os.environ.get("TETHER_TEST_POSTGRES_URL")
    if not url:
        raise SystemExit("--workers needs TETHER_TEST_POSTGRES_URL")
    here = HERE.parent / "src"
    print(f"booking conversations over HTTP on PostgreSQL: {workers} workers vs 1; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for users in users_counts:
        ratios = []
        for r in range(rounds):
            figures = {}
            for count in (1, workers) if r % 2 == 0 else (workers, 1):
                database = f"tether_bench_{uuid.uuid4().hex[:8]}"
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute(f'CREATE DATABASE "{database}"')
                try:
                    store = url.rsplit("/", 1)[0] + "/" + database
                    figures[count] = asyncio.run(http_run(here, users, turns, store=store, workers=count))
                finally:
                    with psycopg.connect(url, autocommit=True) as admin:
                        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            ratios.append(figures[workers]["turns_per_s"] / figures[1]["turns_per_s"])
            print(f"{users:3} users, round {r + 1}: 1 worker {figures[1]['turns_per_s']:6.0f} turns/s, {workers} "
                  f"workers {figures[workers]['turns_per_s']:6.0f} turns/s: {ratios[-1]:.2f}x")
        print(f"{users:3} users: median {workers} workers / 1: {statistics.median(ratios):.2f}x "
              f"(goal >= 0.95 on 2 cores); every request answered with success")


def in_process(src: Path, users: int, turns: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    # like the server, it freezes what start-up made (tether serve does: see docs/server.md), and
    # counts nothing: the comparison is of what serving over HTTP adds, not of a setting
    out = subprocess.run([sys.executable, str(HERE / "throughput.py"), "--child", "--sessions", str(users),
                          "--turns", str(turns), "--freeze", "--uncounted"],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--against", type=Path, help="another checkout: also serve from its src")
    parser.add_argument("--workers", type=int, default=1, help="compare N workers with 1 on PostgreSQL")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per number of users (--workers: 2)")
    args = parser.parse_args()
    if args.workers > 1:
        compare_workers(args.users, args.turns, args.workers, args.rounds if "--rounds" in sys.argv else 2)
        return
    here = HERE.parent / "src"
    fast = all(importlib.util.find_spec(name) is not None for name in ("uvloop", "httptools"))
    print(f"booking conversations over HTTP (tether serve, SQLite, 1 worker) vs in process; uvloop+httptools: "
          f"{'yes' if fast else 'no'}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    import statistics

    for users in args.users:
        speed, cpu = [], []
        for r in range(args.rounds):  # paired: in process and HTTP one after the other, the order alternating
            if r % 2 == 0:
                local = in_process(here, users, args.turns)
                http = asyncio.run(http_run(here, users, args.turns))
            else:
                http = asyncio.run(http_run(here, users, args.turns))
                local = in_process(here, users, args.turns)
            speed.append(http["turns_per_s"] / local["turns_per_s"])
            cpu.append(http["cpu_ms"] / local["cpu_ms"])
            print(f"{users:3} users, round {r + 1}: HTTP {http['turns_per_s']:6.0f} turns/s ({http['cpu_ms']:.2f} ms "
                  f"server CPU/turn); in process {local['turns_per_s']:6.0f} turns/s ({local['cpu_ms']:.2f} ms "
                  f"CPU/turn); {speed[-1]:.2f}x turns/s, {cpu[-1]:.2f}x CPU/turn")
            if args.against is not None:
                before = asyncio.run(http_run(args.against / "src", users, args.turns))
                print(f"          before: HTTP {before['turns_per_s']:6.0f} turns/s ({before['cpu_ms']:.2f} ms server "
                      f"CPU/turn); this / before {http['turns_per_s'] / before['turns_per_s']:.2f}x turns/s")
        print(f"{users:3} users: median HTTP / in process {statistics.median(speed):.2f}x turns/s (goal >= 0.8), "
              f"{statistics.median(cpu):.2f}x CPU/turn (goal <= 1.25); load average {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
