"""A workflow run's saves grow with the change: the run's roll-up and the changed node states, not
the whole snapshot; the stored run still loads as one snapshot (CAS and crashes: see
test_workflow_persistence)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from store_backends import Backend
from workflow_helpers import definition, fn

from tether import Session
from tether.executors import SubprocessExecutor
from tether.stores import Store, TurnRecords
from tether.workflow import load_workflow, new_snapshot
from tether.workflow_host import SnapshotStore, WorkflowRun


def chain(size: int) -> dict[str, Any]:
    ids = [f"n{i}" for i in range(size)]
    return definition([fn(i) for i in ids], list(itertools.pairwise(ids)))


def record_saves(store: Store) -> list[tuple[Session, TurnRecords | None]]:
    """Every ``(document, records)`` the store is asked to save, from now on."""
    saves: list[tuple[Session, TurnRecords | None]] = []
    save = store.save

    async def recording(session: Session, expected_revision: int, records: TurnRecords | None = None) -> Session:
        saves.append((session, records))
        return await save(session, expected_revision, records)

    store.save = recording  # type: ignore[method-assign]
    return saves


def written_nodes(records: TurnRecords | None) -> set[str]:
    return set((records.parts if records else {}).get("workflow_run.nodes", {}))


async def test_a_save_writes_the_roll_up_and_the_nodes_that_changed(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    saves = record_saves(store)
    run = WorkflowRun(chain(30), executor=executor, workspace=workspace, store=store, run_id="chain")
    await run.drain()
    assert run.status == "complete" and len(saves) == run.snapshot.mutations == 60
    for document, records in saves:
        assert document.data["workflow_run"]["nodes"] == {}  # the document is the roll-up
        assert 1 <= len(written_nodes(records)) <= 2  # the node that ran, and the next one admitted
    assert written_nodes(saves[1][1]) == {"n0", "n1"}  # n0 completed, n1 became available

    loaded = await (await backend.make()).load("chain")
    assert loaded is not None and loaded.data["workflow_run"] == run.snapshot.model_dump(mode="json", by_alias=True)


async def test_a_run_stored_whole_loads_and_its_next_save_writes_every_node(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    graph = load_workflow(chain(4))
    snapshot = new_snapshot(graph, "old")
    store = await backend.make()
    await store.create(Session(id="old", agent="workflow:wf", created_at=store.now(),
                               data={"workflow_run": snapshot.model_dump(mode="json", by_alias=True)},
                               metadata={"kind": "workflow"}))  # as runs were stored before node parts
    saves = record_saves(store)
    run = await WorkflowRun.load(store, "old", chain(4), executor=executor, workspace=workspace)
    await run.drain()
    assert run.status == "complete"
    assert written_nodes(saves[0][1]) == {"n0", "n1", "n2", "n3"}
    assert all(len(written_nodes(records)) <= 2 for _, records in saves[1:])
    reloaded = await SnapshotStore(await backend.make()).load("old")
    assert reloaded is not None and reloaded[0] == run.snapshot


async def test_a_reader_always_loads_one_snapshot_while_the_run_saves(
    durable: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    """Each load reads the document and the node parts as of one commit: in a chain, every
    mutation either starts a node or completes it, so ``mutations == 2 * complete + running``
    holds in every snapshot, and a document read with the parts of another commit breaks it."""
    writer, reader = await durable.make(), await durable.make()
    run = WorkflowRun(chain(12), executor=executor, workspace=workspace, store=writer, run_id="watched")
    await run.save()
    seen: list[int] = []

    async def watch() -> None:
        while True:
            found = await SnapshotStore(reader).load("watched")
            assert found is not None
            snapshot, revision = found
            states = [state.status for state in snapshot.nodes.values()]
            assert snapshot.mutations == revision == 2 * states.count("complete") + states.count("running"), states
            seen.append(revision)
            if snapshot.status == "complete":
                return
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await run.drain()
    await asyncio.wait_for(watcher, timeout=60)
    assert seen[-1] == 24 and len(set(seen)) > 1
