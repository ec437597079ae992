"""Workers killed mid-node (real worker processes, SIGKILL): the next worker takes the run once the
dead worker's take lapses, and the node that was in flight is in doubt. Its command runs again
only when the node declares retries; otherwise the node fails ``in doubt`` and a person retries it.
Counted with a marker file per command run (``mktemp``), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend, PostgresBackend, open_backend
from workflow_helpers import definition, fn

from tether.stores import Store
from tether.workflow import WorkflowSnapshot
from tether.workflow_host import SnapshotStore, WorkflowRun, queue_run

WORKER = Path(__file__).resolve().parent / "runs_worker.py"
LEASE = 1.0  # seconds: how long a dead worker's take holds its run

pytestmark = [pytest.mark.slow,
              pytest.mark.parametrize("durable", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])]


async def start_worker(backend: Backend) -> asyncio.subprocess.Process:
    schema = backend.schema if isinstance(backend, PostgresBackend) else "-"
    return await asyncio.create_subprocess_exec(sys.executable, str(WORKER), backend.target, schema, str(LEASE),
                                                stderr=asyncio.subprocess.DEVNULL)


async def until(check: Callable[[], Any], what: str, tries: int = 1500) -> None:
    for _ in range(tries):
        found = check()
        if asyncio.iscoroutine(found):
            found = await found
        if found:
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def marks(folder: Path) -> collections.Counter[str]:
    """How many times each command ran: ``<run>.<node>`` -> count."""
    return collections.Counter(path.name.rsplit(".", 1)[0] for path in folder.iterdir())


async def snapshot(store: Store, run_id: str) -> WorkflowSnapshot:
    stored = await SnapshotStore(store).load(run_id)
    assert stored is not None
    return stored[0]


async def stop(*workers: asyncio.subprocess.Process) -> None:
    for worker in workers:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()


@pytest.mark.parametrize("retries", [0, 1])
async def test_the_node_a_killed_worker_was_running_is_in_doubt(
    durable: str, retries: int, tmp_path: Path, clock: Any
) -> None:
    folder, go, file = tmp_path / "marks", tmp_path / "go", tmp_path / "flow.json"
    folder.mkdir()
    file.write_text(json.dumps(definition([
        fn("a", f"mktemp {folder}/r.a.XXXXXX"),
        fn("b", f"mktemp {folder}/r.b.XXXXXX; while [ ! -f {go} ]; do sleep 0.02; done", control={"retries": retries}),
        fn("c", f"mktemp {folder}/r.c.XXXXXX"),
    ], [("a", "b"), ("b", "c")])))
    backend = await open_backend(durable, clock, tmp_path)
    workers: list[asyncio.subprocess.Process] = []
    try:
        store = await backend.make()
        await queue_run(store, file, run_id="r", workspace=tmp_path)
        workers.append(await start_worker(backend))
        await until(lambda: marks(folder)["r.b"] == 1, "node b to start")
        workers[0].kill()  # mid-node: no save, no release
        await workers[0].wait()
        go.touch()  # the orphaned command may finish now: nobody will see it
        workers.append(await start_worker(backend))

        async def settled() -> bool:
            return (await snapshot(store, "r")).status in ("complete", "failed")
        await until(settled, "the second worker to resume the run")
        run = await snapshot(store, "r")
        b = run.nodes["b"]
        assert b.attempts[0].in_doubt and b.attempts[0].error and b.attempts[0].error.startswith("in doubt")
        events = [e.data for e in await store.events("r") if e.data.get("code") == "in-doubt"]
        assert [(e["node"], e["status"]) for e in events] == [("b", "available" if retries else "failed")]
        if retries:  # declared safe to run again: it did, once
            assert run.status == "complete" and marks(folder) == {"r.a": 1, "r.b": 2, "r.c": 1}
            return
        # not declared safe: failed in doubt, never run again on its own
        assert (run.status, b.status) == ("failed", "failed") and "Retry the node" in (b.error or "")
        assert marks(folder) == {"r.a": 1, "r.b": 1}

        async def released() -> bool:
            return await store.queued_runs() == []
        await until(released, "the worker to release the run")  # waits on a person: out of the queue
        operator = await WorkflowRun.load(store, "r")  # a person checked, and retries it
        await operator.retry_node("b")

        async def complete() -> bool:
            return (await snapshot(store, "r")).status == "complete"
        await until(complete, "the retried run to complete")
        assert marks(folder) == {"r.a": 1, "r.b": 2, "r.c": 1}
    finally:
        await stop(*workers)
        await backend.aclose()


RUNS, NODES = 20, 10


async def test_two_workers_and_one_killed_mid_way_leave_every_run_complete(
    durable: str, tmp_path: Path, clock: Any
) -> None:
    """20 runs of a 10-node chain; the odd nodes declare a retry, the even ones none. One of two
    workers is killed a quarter of the way: every run completes (a node left in doubt that may not
    run again is retried by a person), and only the node the killed worker had in flight ran twice."""
    folder, file, killed = tmp_path / "marks", tmp_path / "chain.json", tmp_path / "killed"
    folder.mkdir()
    ids = [f"n{i}" for i in range(NODES)]
    # each command lasts a while, so the kill most likely lands while one runs (a node in flight);
    # once the kill is done the pause has nothing left to catch, and the survivor runs without it
    nodes = [fn(n, f"mktemp {folder}/$RUN.{n}.XXXXXX; [ -f {killed} ] || sleep 0.03",
                contract={"input": {"RUN": "${input.run}"}}, control={"retries": i % 2}) for i, n in enumerate(ids)]
    file.write_text(json.dumps(definition(nodes, list(itertools.pairwise(ids)), input={"run": ""})))
    backend = await open_backend(durable, clock, tmp_path)
    workers: list[asyncio.subprocess.Process] = []
    try:
        store = await backend.make()
        runs = [f"r{i}" for i in range(RUNS)]
        for run_id in runs:
            await queue_run(store, file, run_id=run_id, input={"run": run_id}, workspace=tmp_path)
        workers += [await start_worker(backend), await start_worker(backend)]
        await until(lambda: sum(marks(folder).values()) >= RUNS * NODES // 4, "a quarter of the work")
        workers[0].kill()
        await workers[0].wait()
        killed.touch()

        retried: list[str] = []
        for _ in range(3000):
            found = {run_id: await snapshot(store, run_id) for run_id in runs}
            for run_id, run in found.items():
                if run.status == "failed":  # in doubt, not declared retryable: a person retries it
                    [node_id] = [n for n, s in run.nodes.items() if s.status == "failed"]
                    assert run.nodes[node_id].attempts[-1].in_doubt and int(node_id[1:]) % 2 == 0
                    await (await WorkflowRun.load(store, run_id)).retry_node(node_id)
                    retried.append(f"{run_id}.{node_id}")
            if all(run.status == "complete" for run in found.values()):
                break
            assert workers[1].returncode is None, "the surviving worker died"
            await asyncio.sleep(0.05)
        else:
            pytest.fail(f"runs left behind: {await asyncio.gather(*(snapshot(store, r) for r in runs))}")

        counts = marks(folder)
        assert set(counts) == {f"{r}.{n}" for r in runs for n in ids}
        twice = sorted(command for command, times in counts.items() if times > 1)
        in_doubt = sorted(f"{r}.{n}" for r, run in found.items() for n, s in run.nodes.items()
                          if any(a.in_doubt for a in s.attempts))
        # only the node the killed worker had in flight is in doubt, and only it may have run twice (its
        # command may not have started when the worker died): again on its own when it declares a
        # retry, else because a person retried it
        assert len(in_doubt) <= 1 and max(counts.values()) <= 2 and set(twice) <= set(in_doubt)
        assert retried == [t for t in in_doubt if int(t.rsplit(".n", 1)[1]) % 2 == 0]

        async def released() -> bool:  # a worker releases a run just after its last save
            return await store.queued_runs() == []
        await until(released, "the workers to release the runs")
    finally:
        await stop(*workers)
        await backend.aclose()
