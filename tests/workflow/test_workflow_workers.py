"""Stored runs driven by any worker: ``tether workflow run --detach`` stores a run, ``tether worker``
(``drive_stored_runs``) drives the runs that have work, each under its lease; two workers share a
store's runs, and when one is killed mid-run the other finishes its runs."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend, PostgresBackend, open_backend
from workflow_helpers import definition, fn

from tether.stores import Store
from tether.workflow_host import SnapshotStore, WorkflowRun, drive_stored_runs

WORKER = Path(__file__).resolve().parent / "runs_worker.py"
NODES = 10


def logging_chain(log: Path) -> dict[str, Any]:
    """A chain of NODES function nodes, each appending ``<run> <node>`` to ``log``."""
    ids = [f"n{i}" for i in range(NODES)]
    nodes = [fn(i, f'echo "$RUN {i}" >> {log}; sleep 0.02', contract={"input": {"RUN": "${input.run}"}}) for i in ids]
    return definition(nodes, list(itertools.pairwise(ids)), input={"run": ""})


async def store_runs(store: Store, file: Path, workspace: Path, count: int) -> list[str]:
    """``count`` runs of the workflow in ``file``, stored with how they were launched, not driven."""
    snapshots = SnapshotStore(store, launch={"file": str(file), "workspace": str(workspace)})
    ids = [f"r{i}" for i in range(count)]
    for run_id in ids:
        await WorkflowRun(json.loads(file.read_text()), store=snapshots, run_id=run_id, input={"run": run_id},
                          workspace=workspace).save()
    return ids


async def statuses(store: Store, ids: list[str]) -> dict[str, str]:
    found = {}
    for run_id in ids:
        stored = await SnapshotStore(store).load(run_id)
        assert stored is not None
        found[run_id] = stored[0].status
    return found


def commands_run(log: Path) -> collections.Counter[str]:
    return collections.Counter(log.read_text().splitlines()) if log.exists() else collections.Counter()


async def test_a_worker_drives_the_stored_runs_that_have_work(backend: Backend, tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    ids = await store_runs(store, file, tmp_path, 3)
    assert set((await statuses(store, ids)).values()) == {"running"} and not log.exists()

    assert await drive_stored_runs(store, once=True) == 3
    assert set((await statuses(store, ids)).values()) == {"complete"}
    assert commands_run(log) == collections.Counter(f"r{r} n{n}" for r in range(3) for n in range(NODES))
    assert await drive_stored_runs(store, once=True) == 0  # nothing left to drive


async def test_a_run_another_worker_holds_is_skipped(backend: Backend, tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    ids = await store_runs(store, file, tmp_path, 2)
    async with (await backend.make()).lease("r0"):  # another worker drives r0
        assert await drive_stored_runs(store, once=True) == 1
    assert await statuses(store, ids) == {"r0": "running", "r1": "complete"}


@pytest.mark.slow
@pytest.mark.parametrize("durable", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_two_workers_share_the_runs_and_one_killed_mid_run_leaves_none_behind(
    durable: str, tmp_path: Path, clock: Any
) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    backend = await open_backend(durable, clock, tmp_path)
    workers: list[asyncio.subprocess.Process] = []
    try:
        store = await backend.make()
        ids = await store_runs(store, file, tmp_path, 20)
        args = [backend.target] + ([backend.schema] if isinstance(backend, PostgresBackend) else [])
        for _ in range(2):
            workers.append(await asyncio.create_subprocess_exec(sys.executable, str(WORKER), *args,
                                                                stderr=asyncio.subprocess.PIPE))
        for _ in range(3000):  # until a quarter of the work is done
            if sum(commands_run(log).values()) >= 50:
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the workers did not start")
        workers[0].kill()  # mid-run: no release, no final save
        await workers[0].wait()

        for _ in range(1200):
            if set((await statuses(store, ids)).values()) == {"complete"}:
                break
            assert workers[1].returncode is None, "the surviving worker died"
            await asyncio.sleep(0.1)
        else:
            pytest.fail(f"runs left behind: {await statuses(store, ids)}")
        counts = commands_run(log)
        assert set(counts) == {f"r{r} n{n}" for r in range(20) for n in range(NODES)}
        twice = [command for command, times in counts.items() if times > 1]
        # the node the killed worker was running runs again (crash semantics: back to admission);
        # every other command ran once
        assert len(twice) <= 1 and max(counts.values()) <= 2, twice
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
        await backend.aclose()


async def test_runs_with_work_behind_a_batch_of_parked_runs_are_driven(backend: Backend, tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    ids = await store_runs(store, file, tmp_path, 2)  # the oldest runs
    parked = definition([fn("first"), {"id": "sign", "label": "Sign", "description": "a gate",
                                       "run": {"kind": "gate", "prompt": "ok?", "schema": {"kind": "text"}}}],
                        [("first", "sign")])
    for index in range(5):  # newer runs, parked at a gate: stored `running` too
        run = WorkflowRun(parked, store=store, run_id=f"parked-{index}", workspace=tmp_path)
        await run.drain()
        assert run.status == "waiting"
    assert await drive_stored_runs(store, once=True, batch=2) == 2
    assert await statuses(store, ids) == {"r0": "complete", "r1": "complete"}
