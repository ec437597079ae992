"""Stored runs operated from another process on every store: ``queue_run`` stores a run of a
tenant for the workers, the tenant stays with the run through a worker's saves, ``act_on_run``
applies an action with its ``workflow.action`` event in the same save, and refuses (nothing
written) another tenant's run, a node that is not waiting, and a run a process drives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_backends import Backend
from workflow_helpers import definition, fn, node

from tether.errors import WorkflowOperationError
from tether.stores.records import session_tenant
from tether.workflow_host import RunAction, act_on_run, drive_stored_runs, queue_run, waiting_on


def _file(tmp_path: Path) -> Path:
    sign = node("sign", {"kind": "gate", "prompt": "ship?", "schema": {"kind": "text"}})
    data = definition([fn("build", "true"), sign], [("build", "sign")])
    file = tmp_path / "ship.json"
    file.write_text(json.dumps(data))
    return file


async def test_a_submitted_run_keeps_its_tenant_and_an_action_is_an_event_of_its_save(
        backend: Backend, tmp_path: Path) -> None:
    store = await backend.make()
    snapshot = await queue_run(store, _file(tmp_path), workspace=tmp_path, tenant="acme", run_id="r1")
    assert waiting_on(snapshot) == [{"kind": "worker", "nodes": ["build"]}]
    assert await drive_stored_runs(store, once=True) == 1  # a worker's saves keep the tenant
    document = await store.load("r1")
    assert document is not None and session_tenant(document.metadata) == "acme"
    assert [row.id for row in await store.list(tenant="acme", agent_prefix="workflow:")] == ["r1"]
    assert await store.list(tenant="public", agent_prefix="workflow:") == []

    with pytest.raises(WorkflowOperationError) as refused:
        await act_on_run(store, "r1", RunAction("approve", "sign"), tenant="globex")
    assert refused.value.code == "unknown-run"
    with pytest.raises(WorkflowOperationError) as refused:
        await act_on_run(store, "r1", RunAction("approve", "build"), tenant="acme")
    assert refused.value.code == "no-pending-approval"
    async with store.lease("r1"):
        with pytest.raises(WorkflowOperationError) as refused:
            await act_on_run(store, "r1", RunAction("approve", "sign"), wait=0.05)
    assert refused.value.code == "run-busy"
    unchanged = await store.load("r1")
    assert unchanged is not None and unchanged.revision == document.revision

    after = await act_on_run(store, "r1", RunAction("approve", "sign", by="Ann", feedback="ok"), tenant="acme")
    assert after.status == "complete"
    events = await store.events("r1")
    action = next(e for e in events if e.type == "workflow.action")
    last_save = [e for e in events if e.at == action.at]
    assert action.data["by"] == "Ann" and action.data["node"] == "sign" and action.data["run_id"] == "r1"
    assert any(e.type == "workflow.status" and e.data["status"] == "complete" for e in last_save)
    final = await store.load("r1")
    assert final is not None and session_tenant(final.metadata) == "acme"
