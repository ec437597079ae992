"""``tether serve`` drives the store's queued workflow runs: every app process runs a worker of the
run queue beside its requests (``create_app(workflow_runs=...)``), stopped with the app."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from server_agents import echo_agent
from server_client import app_client

from tether.server import create_app
from tether.stores import SQLiteStore
from tether.workflow_host import RunQueueTask, SnapshotStore, queue_run


def chain(log: Path) -> dict[str, object]:
    """Three function nodes in a chain, each appending its id to ``log``."""
    ids = [f"n{i}" for i in range(3)]
    return {"schemaVersion": 2, "id": "chain", "version": "1", "name": "Chain",
            "nodes": [{"id": i, "label": i, "description": i,
                       "run": {"kind": "function", "command": f"echo {i} >> {log}"}} for i in ids],
            "edges": [{"id": f"{s}-{t}", "source": s, "target": t, "type": "flow"} for s, t in itertools.pairwise(ids)]}


async def status(store: SQLiteStore, run_id: str) -> str:
    stored = await SnapshotStore(store).load(run_id)
    assert stored is not None
    return stored[0].status


async def test_the_app_drives_a_queued_run_while_it_is_up(tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(chain(log)))
    store = SQLiteStore(tmp_path / "t.db")
    try:
        await queue_run(store, file, run_id="r", workspace=tmp_path)
        app = create_app([echo_agent()], store=SQLiteStore(tmp_path / "t.db"), api_keys={}, scheduler=False,
                         workflow_runs=True)
        async for _ in app_client(app):
            for _ in range(500):
                if await status(store, "r") == "complete":
                    break
                await asyncio.sleep(0.02)
        assert await status(store, "r") == "complete"
        assert log.read_text().split() == ["n0", "n1", "n2"]
        assert await store.queued_runs() == []
    finally:
        await store.close()


async def test_an_app_without_the_worker_leaves_the_run_queued(tmp_path: Path) -> None:
    file = tmp_path / "chain.json"
    file.write_text(json.dumps(chain(tmp_path / "log")))
    store = SQLiteStore(tmp_path / "t.db")
    try:
        await queue_run(store, file, run_id="r", workspace=tmp_path)
        app = create_app([echo_agent()], store=SQLiteStore(tmp_path / "t.db"), api_keys={}, workflow_runs=False)
        async for client in app_client(app):
            assert (await client.get("/healthz")).status_code == 200
            await asyncio.sleep(0.2)
        assert await status(store, "r") == "running" and len(await store.queued_runs()) == 1
    finally:
        await store.close()


async def test_a_stop_right_after_the_start_ends_the_worker_without_its_grace(tmp_path: Path) -> None:
    # the worker cleared its stop flag when its loop first ran: a stop made before then was lost,
    # and the app's shutdown waited out the grace (10 s) and cancelled it
    worker = RunQueueTask(SQLiteStore(tmp_path / "t.db"), grace=5)
    worker.start()
    task = worker._task
    assert task is not None
    await worker.stop()  # awaited here, not in a task of its own: the worker has not run a step yet
    assert task.done() and not task.cancelled()  # it ended on its own, not cancelled at the grace
    worker.start()  # and starts again after a stop
    assert worker.running
    await worker.stop()
    assert not worker.running
