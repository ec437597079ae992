"""Workflow runs in the stores: CAS saves after every change, events, reload, and a crash mid-drain."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend, PostgresBackend, open_backend
from workflow_helpers import definition, fn, node

from tether.errors import SessionConflict, WorkflowOperationError
from tether.executors import SubprocessExecutor
from tether.workflow_host import SnapshotStore, WorkflowRun

WORKER = Path(__file__).resolve().parent / "workflow_worker.py"


def release() -> dict[str, Any]:
    return definition([fn("build", "printf artifact", capture="artifact"),
                       node("sign", {"kind": "gate", "prompt": "sign?", "schema": {"kind": "text"}}),
                       fn("ship", contract={"input": {"A": "${build.output.fields.artifact}"}})],
                      [("build", "sign"), ("sign", "ship")])


async def test_a_run_is_saved_after_every_change_and_resumes_from_another_store(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    first = await backend.make()
    run = WorkflowRun(release(), executor=executor, workspace=workspace, store=first, run_id="run-1")
    await run.drain()
    assert run.node("sign").status == "awaiting_approval"
    assert run.revision == run.snapshot.mutations  # created at 0, then one CAS save per mutation

    second = await backend.make()
    resumed = await WorkflowRun.load(second, "run-1", release(), executor=executor, workspace=workspace)
    assert resumed.snapshot == run.snapshot and resumed.revision == run.revision
    await resumed.apply_approval("sign", "approved", feedback="ok", decided_by="ana")
    await resumed.drain()
    assert resumed.status == "complete"

    document = await second.load("run-1")
    assert document is not None and document.status == "completed" and document.agent == "workflow:wf"
    events = await second.events("run-1")
    node_events = [(e.data["node"], e.data["status"]) for e in events if e.type == "workflow.node"]
    assert ("build", "complete") in node_events and ("sign", "awaiting_approval") in node_events
    assert node_events[-1] == ("ship", "complete")
    assert [e.data["status"] for e in events if e.type == "workflow.status"][-1] == "complete"


async def test_a_stale_writer_loses_the_compare_and_swap(
    backend: Backend, executor: SubprocessExecutor, workspace: Path
) -> None:
    store = await backend.make()
    run = WorkflowRun(release(), executor=executor, workspace=workspace, store=store, run_id="run-2")
    await run.drain()
    other = await WorkflowRun.load(await backend.make(), "run-2", release(), executor=executor, workspace=workspace)
    await run.apply_approval("sign", "approved")
    with pytest.raises(SessionConflict):
        await other.apply_approval("sign", "rejected", feedback="late")
    reloaded = await SnapshotStore(store).load("run-2")
    assert reloaded is not None and reloaded[0].nodes["sign"].status == "complete"


async def test_loading_checks_the_run_and_its_workflow(backend: Backend) -> None:
    store = await backend.make()
    with pytest.raises(WorkflowOperationError) as info:
        await WorkflowRun.load(store, "missing", release())
    assert info.value.code == "unknown-run"
    await WorkflowRun(release(), store=store, run_id="run-3").save()
    other = release()
    other["id"] = "other"
    with pytest.raises(WorkflowOperationError) as info:
        await WorkflowRun.load(store, "run-3", other)
    assert info.value.code == "wrong-workflow"


def crash_definition(workspace: Path) -> dict[str, Any]:
    """``first`` commits; ``slow`` marks itself started (pid in a file) and hangs the first time
    (safe to run again, so it declares a retry: in doubt after a crash, it runs again)."""
    slow = (f'echo $$ > {workspace}/slow.pid; if [ -e {workspace}/started ]; then exit 0; fi; '
            f'touch {workspace}/started; exec sleep 60')
    return definition([fn("first", "printf one", capture="v"), fn("slow", slow, control={"retries": 1}), fn("after")],
                      [("first", "slow"), ("slow", "after")])


@pytest.mark.slow
@pytest.mark.parametrize("durable", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_crash_mid_drain_reruns_uncommitted_work_under_a_new_generation(
    durable: str, tmp_path: Path, workspace: Path, executor: SubprocessExecutor, clock: Any
) -> None:
    backend = await open_backend(durable, clock, tmp_path)
    try:
        store = await backend.make()
        assert await store.load("crash") is None  # the store (and its schema) exists before the worker
        args = [backend.target, "crash", str(workspace), json.dumps(crash_definition(workspace))]
        if isinstance(backend, PostgresBackend):
            args.append(backend.schema)
        proc = await asyncio.create_subprocess_exec(sys.executable, str(WORKER), *args,
                                                    stderr=asyncio.subprocess.PIPE)
        try:
            for _ in range(3000):
                if (workspace / "started").exists() and (workspace / "slow.pid").exists():
                    break
                if proc.returncode is not None:
                    _, err = await proc.communicate()
                    pytest.fail(f"worker exited early: {err.decode()[-2000:]}")
                await asyncio.sleep(0.01)
            else:
                pytest.fail("the slow node never started")
        finally:
            proc.kill()  # the crash: no cleanup, no final save
            await proc.wait()
            pid_file = workspace / "slow.pid"
            if pid_file.exists():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.killpg(int(pid_file.read_text().strip()), signal.SIGKILL)  # the orphaned command's group

        stored = await SnapshotStore(store).load("crash")
        assert stored is not None
        snapshot, _ = stored
        assert snapshot.nodes["first"].status == "complete"  # committed before the crash
        assert snapshot.nodes["slow"].status == "running" and snapshot.nodes["slow"].generation == 1

        run = await WorkflowRun.load(store, "crash", crash_definition(workspace), executor=executor,
                                     workspace=workspace)
        assert run.node("slow").status == "available" and run.node("slow").generation == 2
        await run.drain()
        assert run.status == "complete"
        assert run.node("first").output.fields == {"v": "one"}  # type: ignore[union-attr]
        assert run.node("first").attempts[0].generation == 1 and len(run.node("first").attempts) == 1
        slow = run.node("slow").attempts  # the attempt lost in the crash is in doubt, then the retry
        assert run.node("slow").generation == 3
        assert [(a.generation, a.in_doubt) for a in slow] == [(1, True), (3, False)]
    finally:
        await backend.aclose()
