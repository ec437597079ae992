"""Workflow drain overhead: a chain of N ``true`` function nodes, in memory and on SQLite.

For each size (default 25, 100, 400 and 1,000 nodes) it prints, in ms per node:

- ``floor``: the same ``true`` commands spawned one after the other with nothing around them
  (what a node costs with no workflow at all);
- ``memory`` / ``sqlite``: the whole run (a real subprocess per node; on SQLite one
  compare-and-swap save per mutation, the store opened before the timing);
- ``engine``: the run in memory over an executor that answers at once, so no process is
  spawned: the workflow's own cost per node;

each as wall time and, after a slash, as this process's CPU time (``time.process_time``: its
threads included, the commands' own processes not), which other load on a shared machine
disturbs far less than wall time. Then the mutations per node and the bytes each mutation hands
the store (the document JSON and the records written with it, counted in a separate pass). Each
figure is the best of ``--repeat`` rounds. The closing lines compare the largest size with the
smallest (the goal: at most 1.3x).

The machine may be shared: compare the ratios of one run, not figures across runs.

    python bench/workflow.py [--nodes 25 100 400 1000] [--repeat 3]
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
from tether.executors import Executor, ProcessRecord, ProcessRequest, ProcessResult, SubprocessExecutor
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


class InstantExecutor:
    """An executor whose every command exits 0 at once, without a process."""

    async def execute(self, request: ProcessRequest, abort: asyncio.Event | None = None) -> ProcessResult:
        return ProcessResult(node=request.node, process=ProcessRecord.of(request), exit_code=0)


def chain(nodes: int) -> Any:
    ids = [f"n{i}" for i in range(nodes)]
    return workflow("chain", nodes=[function_node(i, "true") for i in ids],
                    edges=[edge(a, b) for a, b in itertools.pairwise(ids)])


async def drain(nodes: int, store: SQLiteStore | None, executor: Executor) -> tuple[float, float, int]:
    """Wall and CPU seconds to drain the chain (the store opened before), and the run's mutations."""
    try:
        if store is not None:
            await store.load("-")  # opens the database and creates its schema, outside the timing
        run = WorkflowRun(chain(nodes), executor=executor, store=store, workspace=tempfile.gettempdir())
        started, cpu = time.perf_counter(), time.process_time()
        await run.drain()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert run.status == "complete", run.status
        return elapsed, cpu, run.snapshot.mutations
    finally:
        if store is not None:
            await store.close()


async def floor(nodes: int) -> tuple[float, float]:
    """Wall and CPU seconds to run ``true`` ``nodes`` times on the executor, one after the other."""
    executor = SubprocessExecutor()
    request = ProcessRequest(node="n", command="true", cwd=tempfile.gettempdir())
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(nodes):
        outcome = await executor.execute(request)
        assert outcome.exit_code == 0
    return time.perf_counter() - started, time.process_time() - cpu


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="+", default=[25, 100, 400, 1000])
    parser.add_argument("--repeat", type=int, default=3, help="rounds per figure; the best is kept")
    args = parser.parse_args()
    labels = ("floor", "memory", "sqlite", "engine")
    wall: dict[str, dict[int, float]] = {label: {} for label in labels}
    cpu: dict[str, dict[int, float]] = {label: {} for label in labels}
    per_mutation: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            for round_ in range(args.repeat):
                for label in labels:
                    if label == "floor":
                        elapsed, used = await floor(n)
                    else:
                        store = SQLiteStore(Path(tmp) / f"{label}-{n}-{round_}.db") if label == "sqlite" else None
                        executor = InstantExecutor() if label == "engine" else SubprocessExecutor()
                        elapsed, used, _ = await drain(n, store, executor)
                    wall[label][n] = min(wall[label].get(n, float("inf")), elapsed * 1000 / n)
                    cpu[label][n] = min(cpu[label].get(n, float("inf")), used * 1000 / n)
            counting = CountingStore(Path(tmp) / f"bytes-{n}.db")
            _, _, mutations = await drain(n, counting, SubprocessExecutor())
            per_mutation[n] = counting.written / counting.writes
            figures = ", ".join(f"{label} {wall[label][n]:.2f}/{cpu[label][n]:.2f}" for label in labels)
            print(f"{n:5} nodes, ms/node wall/cpu: {figures}; {mutations / n:.1f} mutations/node, "
                  f"{per_mutation[n]:,.0f} bytes/mutation", flush=True)
    small, large = min(args.nodes), max(args.nodes)
    if small != large:
        for label in labels:
            print(f"{label:7} ms/node at {large} / at {small}: wall {wall[label][large] / wall[label][small]:.2f}x, "
                  f"cpu {cpu[label][large] / cpu[label][small]:.2f}x")
        print(f"bytes   per mutation at {large} / at {small}: {per_mutation[large] / per_mutation[small]:.2f}x")

if __name__ == "__main__":
    asyncio.run(main())
