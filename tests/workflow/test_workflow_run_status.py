"""The session status a workflow run is stored with: ``completed`` once complete, ``aborted`` once
it ended any other way (cancelled, blocked, failed with no node left to retry), ``running`` while
it is open (parked, or failed with a node a retry would take); so ``Store.prune`` removes an ended
run and keeps an open one, on every store. A document stored ``running`` for an ended run (before
that rule) still loads."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend
from workflow_helpers import definition, fn, node

from tether.executors import SubprocessExecutor
from tether.stores import Store
from tether.testing import FakeClock
from tether.workflow import ops
from tether.workflow_host import WorkflowRun

GATE = {"kind": "gate", "prompt": "sign?", "schema": {"kind": "text"}}


def _failing() -> dict[str, Any]:
    return definition([fn("a", "false"), fn("b")], [("a", "b")])


def _blocked() -> dict[str, Any]:
    return definition([fn("a", contract={"requires": [{"expr": "input.go == true", "message": "go is false"}]})],
                      input={"go": False})


def _checked() -> dict[str, Any]:
    return definition([fn("verify", "false", kind="check")])


def _gated() -> dict[str, Any]:
    return definition([node("sign", GATE), fn("b")], [("sign", "b")])


async def _run(store: Store, definition: dict[str, Any], run_id: str, executor: SubprocessExecutor,
               workspace: Path, then: str = "") -> WorkflowRun:
    run = WorkflowRun(definition, store=store, run_id=run_id, executor=executor, workspace=workspace)
    await run.drain()
    if then == "reject":
        await run.apply_approval("verify", "rejected", feedback="no", decided_by="test")
    elif then == "cancel":
        await run.cancel("stopped by hand")
    return run


async def _stored(store: Store, run_id: str) -> str:
    document = await store.load(run_id)
    assert document is not None
    return document.status


CASES = [  # run id, definition, what happens after the drain, run status, stored session status
    pytest.param("complete", definition([fn("a")]), "", "complete", "completed", id="complete"),
    pytest.param("cancelled", _gated(), "cancel", "cancelled", "aborted", id="cancelled"),
    pytest.param("blocked", _blocked(), "", "blocked", "aborted", id="blocked"),
    pytest.param("rejected", _checked(), "reject", "failed", "aborted", id="failed-rejected-check"),
    pytest.param("failed", _failing(), "", "failed", "running", id="failed-retryable"),
    pytest.param("parked", _gated(), "", "waiting", "running", id="parked"),
]


@pytest.mark.parametrize(("run_id", "workflow", "then", "run_status", "stored"), CASES)
async def test_each_run_state_is_stored_with_the_session_status_it_means(
    backend: Backend, executor: SubprocessExecutor, workspace: Path,
    run_id: str, workflow: dict[str, Any], then: str, run_status: str, stored: str,
) -> None:
    store = await backend.make()
    run = await _run(store, workflow, run_id, executor, workspace, then)
    assert run.status == run_status
    assert await _stored(store, run_id) == stored
    (row,) = await store.list(agent="workflow:wf")
    assert row.status == stored
    assert ops.run_ended(run.snapshot) is (stored != "running")


async def test_a_failed_run_is_open_while_a_retry_can_take_it(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    run = await _run(store, _failing(), "r", executor, workspace)
    assert ops.retryable(run.snapshot) == ["a"]
    await run.retry_node("a")  # seed 001's retryNode: the failed node goes back to admission
    assert run.status == "running" and await _stored(store, "r") == "running"
    await run.drain()  # `false` fails again: still retryable, still open
    assert run.status == "failed" and await _stored(store, "r") == "running"


async def test_prune_removes_old_ended_runs_and_keeps_open_ones(
    backend: Backend, clock: FakeClock, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    await _run(store, _checked(), "rejected", executor, workspace, "reject")
    await _run(store, _blocked(), "blocked", executor, workspace)
    await _run(store, _gated(), "cancelled", executor, workspace, "cancel")
    await _run(store, _gated(), "parked", executor, workspace)
    await _run(store, _failing(), "failed", executor, workspace)
    clock.advance("31d")
    await _run(store, definition([fn("a")]), "recent", executor, workspace)
    assert await store.prune(older_than=clock.now() - timedelta(days=30)) == 3
    left = sorted(row.id for row in await store.list(limit=10))
    assert left == ["failed", "parked", "recent"]


async def test_an_ended_run_stored_running_by_an_older_tether_still_loads(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    await _run(store, _blocked(), "old", executor, workspace)
    document = await store.load("old")
    assert document is not None
    await store.save(document.model_copy(update={"status": "running"}), document.revision)  # as it was stored

    loaded = await WorkflowRun.load(store, "old", _blocked(), executor=executor, workspace=workspace)
    assert loaded.status == "blocked" and ops.run_ended(loaded.snapshot)
    assert await _stored(store, "old") == "running"  # loading writes nothing
    await loaded.cancel()  # its next save stores the status its run means
    assert await _stored(store, "old") == "aborted"
