"""A run is pinned to the digest of the definition it was started with (DESIGN §4: "running a
changed definition on a parked run is an error, not a surprise"): loading or hydrating it under
another definition of its workflow is a ``WorkflowOperationError`` (code ``definition-changed``)
naming the run, the workflow and both digests. A run stored before runs were pinned (no digest)
still loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend
from workflow_helpers import definition, fn, node

from tether.errors import WorkflowOperationError
from tether.executors import SubprocessExecutor
from tether.workflow import load_workflow
from tether.workflow_host import WorkflowRun

GATE = {"kind": "gate", "prompt": "sign?", "schema": {"kind": "text"}}


def release(command: str = "true") -> dict[str, Any]:
    return definition([node("sign", GATE), fn("ship", command)], [("sign", "ship")])


def test_the_digest_is_the_definition_not_its_text() -> None:
    first, same = load_workflow(release()), load_workflow(release())
    assert first.digest == same.digest and first.digest.startswith("sha256:") and len(first.digest) == 71
    assert load_workflow(release("false")).digest != first.digest
    yaml_text = """\
schemaVersion: 2
id: wf
version: "1"
name: Workflow
nodes:
  - {id: sign, label: Sign, description: the sign step, run: {kind: gate, prompt: "sign?", schema: {kind: text}}}
  - {id: ship, label: Ship, description: the ship step, run: {kind: function, command: "true"}}
edges:
  - {id: sign->ship, source: sign, target: ship, type: flow}   # a comment changes nothing
"""
    assert load_workflow(yaml_text).digest == first.digest


async def test_a_new_run_is_pinned_to_its_definition(backend: Backend) -> None:
    store = await backend.make()
    run = WorkflowRun(release(), store=store, run_id="pinned")
    await run.drain()
    assert run.snapshot.workflow_digest == load_workflow(release()).digest
    loaded = await WorkflowRun.load(store, "pinned", release())
    assert loaded.snapshot.workflow_digest == run.snapshot.workflow_digest and loaded.status == "waiting"


async def test_loading_a_run_under_a_changed_definition_is_an_error_naming_both_digests(backend: Backend) -> None:
    store = await backend.make()
    run = WorkflowRun(release(), store=store, run_id="parked")
    await run.drain()
    changed = load_workflow(release("false"))
    with pytest.raises(WorkflowOperationError) as info:
        await WorkflowRun.load(store, "parked", changed)
    error = info.value
    assert error.code == "definition-changed"
    assert error.message == (
        f"run 'parked' of workflow 'wf' was started with definition {run.snapshot.workflow_digest}, "
        f"not {changed.digest} (the definition given now): a run is pinned to the definition it started "
        "with. Resume it with that definition, or start a new run of the changed one")
    document = await store.load("parked")
    assert document is not None and document.revision == run.revision  # nothing was written


async def test_an_ended_run_is_not_reopened_by_a_changed_definition(backend: Backend, workspace: Path,
                                                                     executor: SubprocessExecutor) -> None:
    store = await backend.make()
    guarded = definition([fn("a", contract={"requires": [{"expr": "input.go", "message": "go is off"}]})],
                         input={"go": False})
    run = WorkflowRun(guarded, store=store, run_id="ended", executor=executor, workspace=workspace)
    await run.drain()
    assert run.status == "blocked"
    guarded["nodes"][0]["contract"]["requires"][0]["expr"] = "true"  # would make `a` available again
    with pytest.raises(WorkflowOperationError) as info:
        await WorkflowRun.load(store, "ended", guarded, executor=executor, workspace=workspace)
    assert info.value.code == "definition-changed"


async def test_a_run_stored_before_runs_were_pinned_still_loads(backend: Backend) -> None:
    store = await backend.make()
    run = WorkflowRun(release(), store=store, run_id="old")
    await run.drain()
    document = await store.load("old")
    assert document is not None
    data = dict(document.data["workflow_run"])
    del data["workflow_digest"]
    await store.save(document.model_copy(update={"data": {**document.data, "workflow_run": data}}),
                     document.revision)
    loaded = await WorkflowRun.load(store, "old", release("false"))  # unknown digest: no error
    assert loaded.snapshot.workflow_digest is None and loaded.status == "waiting"
    await loaded.apply_approval("sign", "approved")


async def test_hydrating_a_snapshot_of_a_changed_definition_is_refused() -> None:
    run = WorkflowRun(release())
    await run.drain()
    other = WorkflowRun(release("false"))
    with pytest.raises(WorkflowOperationError) as info:
        await other.hydrate(run.snapshot)
    assert info.value.code == "definition-changed"
    assert other.snapshot.mutations == 0


def parent_of(child: str) -> dict[str, Any]:
    """``sign`` (a gate), then ``sub`` running workflow ``child`` (whose definition is ``child``)."""
    return definition([node("sign", GATE), node("sub", {"kind": "sub-flow", "flow": "child"})], [("sign", "sub")])


def child_flow(command: str) -> dict[str, Any]:
    data = definition([fn("step", command)])
    data["id"] = "child"
    return data


async def test_a_changed_sub_flow_definition_is_a_changed_run_definition(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    run = WorkflowRun(parent_of("child"), executor=executor, workspace=workspace, store=store, run_id="p",
                      resolve={"child": child_flow("true")})
    await run.drain()
    assert run.node("sign").status == "awaiting_approval"
    assert run.snapshot.workflow_digest != run.graph.digest  # the parent's digest alone no longer pins it

    same = await WorkflowRun.load(store, "p", parent_of("child"), executor=executor, workspace=workspace,
                                  resolve={"child": child_flow("true")})
    assert same.snapshot == run.snapshot
    with pytest.raises(WorkflowOperationError) as info:
        await WorkflowRun.load(store, "p", parent_of("child"), executor=executor, workspace=workspace,
                               resolve={"child": child_flow("false")})
    assert info.value.code == "definition-changed" and "with its sub-flows" in info.value.message
    await same.apply_approval("sign", "approved")
    await same.drain()
    assert same.status == "complete"


def test_a_workflow_without_sub_flows_is_pinned_to_its_own_digest() -> None:
    run = WorkflowRun(release())
    assert run.snapshot.workflow_digest == run.graph.digest == run.digest
