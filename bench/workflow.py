"""Workflow drain overhead: a chain of N ``true`` function nodes, in memory and on SQLite.

Reports the wall time per node (a real subprocess per node, one CAS save per mutation on
SQLite) and the mutations/saves per node.

    python bench/workflow.py [--nodes 50]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from pathlib import Path

from tether.executors import SubprocessExecutor
from tether.stores import SQLiteStore
from tether.workflow import edge, function_node, workflow
from tether.workflow_host import WorkflowRun


async def measure(nodes: int, store_path: Path | None) -> tuple[float, int]:
    ids = [f"n{i}" for i in range(nodes)]
    definition = workflow("chain", nodes=[function_node(i, "true") for i in ids],
                          edges=[edge(a, b) for a, b in itertools.pairwise(ids)])
    store = SQLiteStore(str(store_path)) if store_path else None
    try:
        run = WorkflowRun(definition, executor=SubprocessExecutor(), store=store, workspace=tempfile.gettempdir())
        started = time.perf_counter()
        await run.drain()
        elapsed = time.perf_counter() - started
        assert run.status == "complete", run.status
        return elapsed, run.snapshot.mutations
    finally:
        if store is not None:
            await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in (("memory", None), ("sqlite", Path(tmp) / "bench.db")):
            elapsed, mutations = await measure(args.nodes, path)
            print(f"{label:7} {args.nodes} nodes: {elapsed * 1000 / args.nodes:.1f} ms/node, "
                  f"{mutations / args.nodes:.1f} mutations (saves) per node")


if __name__ == "__main__":
    asyncio.run(main())
