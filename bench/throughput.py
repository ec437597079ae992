"""Turns per second of one process with many concurrent sessions on SQLite, and what each turn writes.

``--sessions`` conversations (default 16) run at once through one ``Runtime`` on one
``SQLiteStore``, each the four-message booking cycle of ``bench/booking.py`` (no model) for
``--turns`` messages. Printed per run:

* turns per second (wall) and CPU ms per turn (the process, the store's thread included);
* transactions per turn (every transaction the store committed, counted where the store commits
  its groups; see ``Commits``) and, of those, flushed commits per turn (a commit at
  ``synchronous = FULL``: one fsync of the WAL each; a commit at ``NORMAL`` does not wait for the
  disk);
* with ``--commit-delay MS``, every flushed commit is made ``MS`` slower (a sleep on the store's
  thread right before it: a slow disk), which is where committing concurrent turns together
  shows.

``--ungrouped`` also runs every round with the commits of this tree not grouped (each write its
own transaction and commit, as before grouped commits: the store's thread takes one call at a
time) and prints grouped / ungrouped turns per second: with ``--sessions 64 --commit-delay 2``,
the grouped-commit goal (>= 4x).

``--against DIR`` runs the same measurement on another checkout's ``src`` (for example the commit
before a change, in a temporary worktree: ``git worktree add /tmp/before HEAD~1``) in paired
rounds, alternating the two, and prints the ratio of turns per second (this tree / that one) per
round and their median, so a change of machine load hits both alike. Against ``7797a50`` (main
when issue 30 measured its 380 turns/s at 16 sessions) it is that issue's throughput goal (>= 1.5x).

Last, the goals that apply to the run (issue 30) and the machine's floors: one small flushed
commit on this disk (made as the store commits), the most turns per second one commit per write
would allow at the flushed commits per turn measured ungrouped, and the most turns per second the
measured CPU per turn allows (the process never idle).

    python bench/throughput.py [--sessions 16] [--turns 40] [--commit-delay 0] [--rounds 3]
    python bench/throughput.py --sessions 64 --turns 20 --commit-delay 2 --ungrouped
    git worktree add /tmp/before <commit> && python bench/throughput.py --against /tmp/before
    git worktree add /tmp/issue30 7797a50 && python bench/throughput.py --against /tmp/issue30
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class Commits:
    """Counts the store's transactions and flushed commits, and with a ``delay`` makes every
    flushed commit that much slower (a sleep on the store's thread before the transaction: a slow
    disk).

    On a tree with grouped commits it wraps ``SQLiteStore._commit_group`` (one call per
    transaction; cheap). On an older tree it falls back to the connection's trace callback, which
    costs that tree CPU (sqlite3 expands every statement with its parameters, the document
    included), so ``--against`` compares turns per second from runs without it."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.transactions = 0
        self.flushed = 0
        self._full = True

    def attach(self, store: Any) -> None:
        group = getattr(store, "_commit_group", None)
        if group is None:
            conn = store._conn
            assert conn is not None
            conn.set_trace_callback(self.trace)
            return

        def counted(jobs: list[Any]) -> Any:
            self.transactions += 1
            if any(job.flush for job in jobs):
                self.flushed += 1
                if self.delay:
                    time.sleep(self.delay)
            return group(jobs)

        store._commit_group = counted

    def trace(self, statement: str) -> None:
        text = statement[:24].strip().upper()
        if text.startswith("PRAGMA SYNCHRONOUS"):
            self._full = text.endswith("FULL")
        elif text.startswith("COMMIT"):
            self.transactions += 1
            if self._full:
                self.flushed += 1
                if self.delay:
                    time.sleep(self.delay)


async def measure(sessions: int, turns: int, delay_ms: float, ungrouped: bool = False,
                  counted: bool = True, freeze: bool = False) -> dict[str, Any]:
    """One run: ``sessions`` booking conversations of ``turns`` messages at once (``ungrouped``:
    each write commits alone; ``counted``: transactions counted, see ``Commits``)."""
    from booking import booking_agent, booking_message

    if ungrouped:
        from tether.stores import _sqlite_thread

        _sqlite_thread.MAX_GROUP = 1  # type: ignore[misc]

    from tether.runtime import Runtime
    from tether.stores import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "bench.db")
        await store.list()  # opened (tables made) before the clock starts
        commits = Commits(delay_ms / 1000)
        if counted or delay_ms:
            commits.attach(store)
        runtime = Runtime(booking_agent(), store=store)
        failed: list[str] = []

        async def conversation(c: int) -> None:
            session_id = None
            for turn in range(1, turns + 1):
                response = await runtime.run("Booker", booking_message(turn, c), session_id=session_id)
                if not response.success:
                    failed.append(response.message)
                session_id = response.session

        await conversation(sessions)  # warm up (imports, caches) on a session of its own
        if freeze:  # what start-up made, out of the collector's view (as tether serve does)
            gc.collect()
            gc.freeze()
        commits.transactions = commits.flushed = 0
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(conversation(c) for c in range(sessions)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await runtime.close()
        await store.close()
    done = sessions * turns
    if failed:
        raise SystemExit(f"{len(failed)} turns failed, e.g. {failed[0]}")
    return {"turns_per_s": done / wall, "cpu_ms": cpu * 1000 / done,
            "transactions": commits.transactions / done if counted else None,
            "flushed": commits.flushed / done if counted else None}


def child(src: Path, sessions: int, turns: int, delay_ms: float, ungrouped: bool = False,
          counted: bool = True) -> dict[str, Any]:
    """``measure`` in a fresh interpreter importing tether from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, __file__, "--child", "--sessions", str(sessions), "--turns", str(turns),
                          "--commit-delay", str(delay_ms), *(["--ungrouped"] if ungrouped else []),
                          *([] if counted else ["--uncounted"])],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _groups(src: Path) -> bool:
    """True when the tree at ``src`` commits in groups (its transactions are counted cheaply)."""
    return "_commit_group" in (src / "tether" / "stores" / "sqlite.py").read_text()


def line(name: str, figures: dict[str, Any]) -> str:
    counts = "(not counted)" if figures["transactions"] is None else (
        f"{figures['transactions']:5.2f} transactions/turn  {figures['flushed']:5.3f} flushed commits/turn")
    return f"{name:<8} {figures['turns_per_s']:8.0f} turns/s  {figures['cpu_ms']:6.2f} ms CPU/turn  {counts}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--commit-delay", type=float, default=0.0, help="ms added to every flushed commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout: compare with its src")
    parser.add_argument("--ungrouped", action="store_true", help="also run with each write committed alone")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--uncounted", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--freeze", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.sessions, args.turns, args.commit_delay, args.ungrouped,
                                             counted=not args.uncounted, freeze=args.freeze))))
        return
    here = HERE.parent / "src"
    print(f"booking conversations: {args.sessions} at once x {args.turns} messages, SQLite, one process; "
          f"flushed commits {args.commit_delay:g} ms slower; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    ratios, grouping, runs, alones = [], [], [], []
    for r in range(1, args.rounds + 1):
        this = child(here, args.sessions, args.turns, args.commit_delay)
        runs.append(this)
        print(line(f"round {r}", this))
        if args.ungrouped:
            alone = child(here, args.sessions, args.turns, args.commit_delay, ungrouped=True)
            alones.append(alone)
            print(line("  ungrouped", alone))
            grouping.append(this["turns_per_s"] / alone["turns_per_s"])
            print(f"  grouped / ungrouped: {grouping[-1]:.2f}x turns/s")
        if args.against is not None:  # counted as this tree is when it can be cheaply (see Commits)
            that = child(args.against / "src", args.sessions, args.turns, args.commit_delay,
                         counted=_groups(args.against / "src"))
            print(line("  before", that))
            ratios.append(this["turns_per_s"] / that["turns_per_s"])
            print(f"  this / before: {ratios[-1]:.2f}x turns/s")
    print("goals (issue 30):")
    flushed = statistics.median(run["flushed"] for run in runs)
    at64 = "" if args.sessions >= 64 else f" (the goal is at 64 sessions; this run has {args.sessions})"
    print(f"  flushed commits per turn: {flushed:.3f}, goal <= 0.25 at 64 sessions{at64}")
    if grouping:
        setting = "" if args.sessions >= 64 and args.commit_delay >= 2 else \
            " (the goal is with --sessions 64 --commit-delay 2)"
        print(f"  median grouped / ungrouped: {statistics.median(grouping):.2f}x turns/s, goal >= 4{setting}")
    if ratios:
        print(f"  median this / before: {statistics.median(ratios):.2f}x turns/s, goal >= 1.5 at 16 sessions "
              "against 7797a50")
    print("floors (this machine):")
    commit_ms = commit_floor()
    print(f"  one small flushed commit: {commit_ms:.3f} ms ({1000 / commit_ms:,.0f} commits/s); "
          f"with the {args.commit_delay:g} ms delay: {commit_ms + args.commit_delay:.3f} ms")
    if alones:
        per_turn = statistics.median(alone["flushed"] for alone in alones)
        print(f"  one commit per write: at most {1000 / (per_turn * (commit_ms + args.commit_delay)):,.0f} turns/s "
              f"({per_turn:.2f} flushed commits per turn, each {commit_ms + args.commit_delay:.3f} ms)")
    cpu_ms = statistics.median(run["cpu_ms"] for run in runs)
    print(f"  CPU: at most {1000 / cpu_ms:,.0f} turns/s at {cpu_ms:.2f} ms of CPU per turn (grouped: the "
          "process's CPU on one core, never idle; the store's thread can add a second core)")


def commit_floor(count: int = 200) -> float:
    """The median ms of one small flushed commit on this disk, made as ``SQLiteStore`` commits
    (``bench/runtime_turns.py``'s ``CommitFloor``)."""
    from runtime_turns import CommitFloor

    with tempfile.TemporaryDirectory() as tmp:
        floor = CommitFloor(Path(tmp))
        for _ in range(count):
            floor.commit()
        asyncio.run(floor.store.close())
        return statistics.median(floor.timings)


if __name__ == "__main__":
    main()
