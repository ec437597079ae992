"""Workflow drain overhead: a chain of N ``true`` function nodes, in memory and on SQLite.

For each size (default 25, 100, 400 and 1,000 nodes) it prints the wall time per node in memory
and on SQLite (a real subprocess per node, one compare-and-swap save per mutation on SQLite),
the mutations per node, and the bytes each mutation hands the store (the document JSON and the
records written with it, counted in a separate pass so the count costs the timed runs nothing).
The floor is the same subprocesses spawned one after the other with nothing else around them:
what a node costs with no workflow at all. The closing lines compare the largest size with the
smallest (the goal: at most 1.3x, time per node and bytes per mutation).

The machine may be shared: compare the ratios of one run, not figures across runs.

    python bench/workflow.py [--nodes 25 100 400 1000] [--only memory sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from tether import Session
from tether.executors import ProcessRequest, SubprocessExecutor
from tether.stores import SQLiteStore
from tether.stores.records import TurnRecords
from tether.workflow import edge, function_node, workflow
from tether.workflow_host import WorkflowRun


class CountingStore(SQLiteStore):
    """A SQLite store that counts the bytes of what each save and create hands it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0
        self.written = 0

    def _count(self, session: Session, records: TurnRecords | None) -> None:
        self.writes += 1
        self.written += len(session.model_dump_json(exclude_none=True))
        if records is not None:
            self.written += len(records.model_dump_json(exclude_defaults=True))

    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        self._count(session, records)
        return await super().create(session, records)

    async def save(self, session: Session, expected_revision: int, records: TurnRecords | None = None) -> Session:
        self._count(session, records)
        return await super().save(session, expected_revision, records)


def chain(nodes: int) -> Any:
    ids = [f"n{i}" for i in range(nodes)]
    return workflow("chain", nodes=[function_node(i, "true") for i in ids],
                    edges=[edge(a, b) for a, b in itertools.pairwise(ids)])


async def drain(nodes: int, store: SQLiteStore | None) -> tuple[float, int]:
    """Seconds to drain the chain (the store opened before), and the run's mutations."""
    try:
        if store is not None:
            await store.load("-")  # opens the database and creates its schema, outside the timing
        run = WorkflowRun(chain(nodes), executor=SubprocessExecutor(), store=store, workspace=tempfile.gettempdir())
        started = time.perf_counter()
        await run.drain()
        elapsed = time.perf_counter() - started
        assert run.status == "complete", run.status
        return elapsed, run.snapshot.mutations
    finally:
        if store is not None:
            await store.close()


async def floor(nodes: int) -> float:
    """Seconds to run ``true`` ``nodes`` times on the executor, one after the other."""
    executor = SubprocessExecutor()
    request = ProcessRequest(node="n", command="true", cwd=tempfile.gettempdir())
    started = time.perf_counter()
    for _ in range(nodes):
        outcome = await executor.execute(request)
        assert outcome.exit_code == 0
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="+", default=[25, 100, 400, 1000])
    parser.add_argument("--only", nargs="+", choices=["memory", "sqlite"], default=["memory", "sqlite"])
    args = parser.parse_args()
    per_node: dict[str, dict[int, float]] = {label: {} for label in ("floor", *args.only, "bytes")}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            per_node["floor"][n] = await floor(n) * 1000 / n
            line = [f"{n:5} nodes: floor {per_node['floor'][n]:.1f} ms/node"]
            for label in args.only:
                path = Path(tmp) / f"{label}-{n}.db"
                elapsed, mutations = await drain(n, SQLiteStore(path) if label == "sqlite" else None)
                per_node[label][n] = elapsed * 1000 / n
                line.append(f"{label} {per_node[label][n]:.1f} ms/node")
            counting = CountingStore(Path(tmp) / f"bytes-{n}.db")
            _, mutations = await drain(n, counting)
            per_node["bytes"][n] = counting.written / counting.writes
            line.append(f"{mutations / n:.1f} mutations/node, {per_node['bytes'][n]:,.0f} bytes/mutation")
            print(", ".join(line), flush=True)
    small, large = min(args.nodes), max(args.nodes)
    if small != large:
        for label, figures in per_node.items():
            unit = "bytes/mutation" if label == "bytes" else "ms/node"
            print(f"{label:7} {unit} at {large} / at {small}: {figures[large] / figures[small]:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
