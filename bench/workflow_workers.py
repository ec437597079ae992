"""Workflow runs driven by ``tether worker`` processes: throughput with 1 and with 2 workers.

Starts the workers (``tether worker``, each its own process) and lets them settle, then queues
``--runs`` runs of a chain of ``--nodes`` function nodes (``queue_run``, as ``tether workflow run
--detach`` does; each node ``sleep --sleep``: a command that waits on something, as most CI steps
do; ``--sleep 0`` runs ``true``) and times until every run is complete. The workers take the runs
from the store's run queue (on PostgreSQL with ``SKIP LOCKED``). Prints runs per second for each worker
count and the ratio (2 workers / 1). On a machine with fewer free cores than workers the ratio says
more about the machine than about tether: state the load with the figure. ``--concurrency N`` also
times one worker driving up to N runs at once (``tether worker --concurrency N``) against one at a
time.

    python bench/workflow_workers.py [--runs 20] [--nodes 10] [--sleep 0.05] [--db PATH_OR_URL] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tether.stores import SQLiteStore, Store, open_store
from tether.workflow import edge, function_node, workflow
from tether.workflow_host import SnapshotStore, queue_run

STARTUP = 5.0  # seconds the workers get to start before the runs are stored


def chain(nodes: int, sleep: float) -> dict[str, object]:
    ids = [f"n{i}" for i in range(nodes)]
    command = f"sleep {sleep}" if sleep > 0 else "true"
    built = workflow("bench-workers", nodes=[function_node(i, command) for i in ids],
                     edges=[edge(a, b) for a, b in itertools.pairwise(ids)])
    return built.model_dump(mode="json", by_alias=True, exclude_none=True)


async def measure(store: Store, db: str, file: Path, workers: int, runs: int, concurrency: int = 1) -> float:
    """Seconds for ``workers`` worker processes (each driving up to ``concurrency`` runs at once),
    started and idle beforehand, to complete ``runs`` fresh runs (stored once the timing has started)."""
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-m", "tether.cli", "worker", "--db", db,
                                                  "--poll", "0.05", "--concurrency", str(concurrency),
                                                  stdout=asyncio.subprocess.DEVNULL)
             for _ in range(workers)]
    try:
        await asyncio.sleep(STARTUP)  # the workers import tether and open the store: not part of the figure
        snapshots = SnapshotStore(store)
        ids = [f"bench-{uuid.uuid4().hex[:8]}" for _ in range(runs)]
        started = time.perf_counter()
        for run_id in ids:
            await queue_run(store, file, run_id=run_id, workspace=tempfile.gettempdir())
        while True:
            done = [await snapshots.load(run_id) for run_id in ids]
            if all(found is not None and found[0].status == "complete" for found in done):
                return time.perf_counter() - started
            await asyncio.sleep(0.05)
    finally:
        for proc in procs:
            proc.terminate()
            await proc.wait()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--db", default=None, help="a store URL or SQLite path (default: a new SQLite file)")
    parser.add_argument("--concurrency", type=int, default=1, help="also time 1 worker driving this many runs at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "bench.db")
        file = Path(tmp) / "chain.json"
        file.write_text(json.dumps(chain(args.nodes, args.sleep)))
        store = open_store(db) if "://" in db else SQLiteStore(db)
        try:
            seconds = {workers: await measure(store, db, file, workers, args.runs) for workers in (1, 2)}
            together = await measure(store, db, file, 1, args.runs, args.concurrency) if args.concurrency > 1 else None
        finally:
            await store.close()
    for workers, elapsed in seconds.items():
        print(f"{workers} worker(s): {args.runs} runs of {args.nodes} nodes in {elapsed:.1f} s, "
              f"{args.runs / elapsed:.2f} runs/s")
    print(f"2 workers / 1: {seconds[1] / seconds[2]:.2f}x")
    if together is not None:
        print(f"1 worker, {args.concurrency} runs at once: {together:.1f} s, {args.runs / together:.2f} runs/s; "
              f"/ one at a time: {seconds[1] / together:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
