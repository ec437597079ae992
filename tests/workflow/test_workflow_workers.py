"""Stored runs driven by any worker through the store's run queue: ``queue_run`` (``tether workflow
run --detach``) stores a run queued; a worker (``drive_stored_runs``, ``tether worker``) takes it,
drives it until it waits or ends and releases it; a change that gives a run work again queues it
again; a worker killed mid-node leaves the node in doubt for the next worker (it runs again only
when declared retryable)."""

from __future__ import annotations

import collections
import itertools
import json
from pathlib import Path
from typing import Any

from store_backends import Backend
from workflow_helpers import definition, fn

from tether.models.types import ModelResponse, ToolCall
from tether.stores import Store
from tether.testing import ScriptedModel
from tether.workflow_host import SnapshotStore, WorkflowRun, drive_stored_runs, queue_run

NODES = 10


def logging_chain(log: Path) -> dict[str, Any]:
    """A chain of NODES function nodes, each appending ``<run> <node>`` to ``log``."""
    ids = [f"n{i}" for i in range(NODES)]
    nodes = [fn(i, f'echo "$RUN {i}" >> {log}', contract={"input": {"RUN": "${input.run}"}}) for i in ids]
    return definition(nodes, list(itertools.pairwise(ids)), input={"run": ""})


async def queue_runs(store: Store, file: Path, workspace: Path, count: int) -> list[str]:
    """``count`` runs of the workflow in ``file``, queued, not driven."""
    ids = [f"r{i}" for i in range(count)]
    for run_id in ids:
        await queue_run(store, file, run_id=run_id, input={"run": run_id}, workspace=workspace)
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


async def test_a_worker_drives_the_queued_runs(backend: Backend, tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    ids = await queue_runs(store, file, tmp_path, 3)
    assert [q.session_id for q in await store.queued_runs()] == ids and not log.exists()

    assert await drive_stored_runs(store, once=True) == 3
    assert set((await statuses(store, ids)).values()) == {"complete"}
    assert commands_run(log) == collections.Counter(f"r{r} n{n}" for r in range(3) for n in range(NODES))
    assert await store.queued_runs() == []
    assert await drive_stored_runs(store, once=True) == 0  # nothing left to drive


async def test_a_run_another_process_drives_is_left_to_its_take(backend: Backend, tmp_path: Path) -> None:
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    ids = await queue_runs(store, file, tmp_path, 2)
    async with (await backend.make()).lease("r0"):  # another process drives r0 (in the foreground)
        assert await drive_stored_runs(store, once=True, worker="w1") == 1
    assert await statuses(store, ids) == {"r0": "running", "r1": "complete"}
    [held] = await store.queued_runs()
    assert (held.session_id, held.worker) == ("r0", "w1")  # taken; looked at again when the take lapses


GATED = definition([fn("first"), {"id": "sign", "label": "Sign", "description": "a gate",
                                  "run": {"kind": "gate", "prompt": "ok?", "schema": {"kind": "text"}}},
                    fn("last")], [("first", "sign"), ("sign", "last")])


async def test_a_run_that_waits_leaves_the_queue_and_an_approval_queues_it_again(
    backend: Backend, tmp_path: Path
) -> None:
    file = tmp_path / "gated.json"
    file.write_text(json.dumps(GATED))
    store = await backend.make()
    await queue_run(store, file, run_id="g", workspace=tmp_path)
    assert await drive_stored_runs(store, once=True) == 1
    assert (await statuses(store, ["g"])) == {"g": "waiting"}
    assert await store.queued_runs() == []  # waiting on a person: no worker looks at it

    run = await WorkflowRun.load(store, "g", workspace=tmp_path)  # an operator (or an HTTP route) approves
    await run.apply_approval("sign", "approved", decided_by="ops")
    assert [q.session_id for q in await store.queued_runs()] == ["g"]
    assert await drive_stored_runs(store, once=True) == 1
    assert (await statuses(store, ["g"])) == {"g": "complete"}
    assert await store.queued_runs() == []


async def test_agent_work_waits_for_a_worker_with_a_model(backend: Backend, tmp_path: Path) -> None:
    file = tmp_path / "agent.json"
    file.write_text(json.dumps(definition([{"id": "write", "label": "Write", "description": "write it",
                                            "run": {"kind": "agent", "instruction": "write"}}])))
    store = await backend.make()
    await queue_run(store, file, run_id="a", workspace=tmp_path)
    [queued] = await store.queued_runs()
    assert queued.agent
    assert await drive_stored_runs(store, once=True) == 0  # no model: not taken
    assert [q.leased_until for q in await store.queued_runs()] == [None]

    def call(name: str, **arguments: Any) -> ModelResponse:
        return ModelResponse(tool_calls=(ToolCall(id=f"c-{name}", name=name, arguments=arguments),),
                             finish_reason="tool_calls")
    model = ScriptedModel(agent=[call("start_node", node_id="write"),
                                 call("complete_node", node_id="write", summary="written"), "done"])
    assert await drive_stored_runs(store, model=model, once=True) == 1
    assert await statuses(store, ["a"]) == {"a": "complete"} and await store.queued_runs() == []


async def test_a_run_saved_unqueued_is_queued_by_its_next_change(backend: Backend, tmp_path: Path) -> None:
    """A run saved with ``queue=False`` (as a worker saves) is not queued; its next ordinary save
    queues it."""
    log, file = tmp_path / "log", tmp_path / "chain.json"
    file.write_text(json.dumps(logging_chain(log)))
    store = await backend.make()
    unqueued = SnapshotStore(store, launch={"file": str(file), "workspace": str(tmp_path)}, queue=False)
    await WorkflowRun(json.loads(file.read_text()), store=unqueued, run_id="old", input={"run": "old"}).save()
    assert await store.queued_runs() == [] and await drive_stored_runs(store, once=True) == 0
    run = await WorkflowRun.load(store, "old")
    await run.set_autonomous_mode(True)
    assert await drive_stored_runs(store, once=True) == 1
    assert await statuses(store, ["old"]) == {"old": "complete"}


async def test_a_run_whose_only_work_is_a_subprompt_waits_for_a_worker_with_a_model(
    backend: Backend, tmp_path: Path
) -> None:
    file = tmp_path / "note.json"
    file.write_text(json.dumps(definition([fn("first"), {"id": "note", "label": "Note", "description": "a note",
                                                         "run": {"kind": "subprompt", "instruction": "write"}}],
                                          [("first", "note")])))
    store = await backend.make()
    await queue_run(store, file, run_id="s", workspace=tmp_path)
    assert [q.agent for q in await store.queued_runs()] == [False]  # `first` needs no model
    assert await drive_stored_runs(store, once=True) == 1
    assert [(q.agent, q.leased_until) for q in await store.queued_runs()] == [(True, None)]  # `note` needs one
    assert await drive_stored_runs(store, once=True) == 0
    assert await drive_stored_runs(store, model=ScriptedModel(subprompt=["a note"]), once=True) == 1
    assert await statuses(store, ["s"]) == {"s": "complete"} and await store.queued_runs() == []
