"""Finding a parked workflow run again: ``tether workflow runs`` lists the stored runs, what each
waits on and the command that resumes it; ``tether sessions list/show`` point there; a bad
``--db``, ``--status`` or ``--run`` is a one-line error naming it."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import EXAMPLES, child_env, tether

from tether.cli import _workflow_run
from tether.cli._workflow_runs import _runs
from tether.engine.core.session import Session
from tether.stores import MemoryStore, SQLiteStore
from tether.workflow_host import WorkflowRun, queue_run

RELEASE = EXAMPLES / "release.yaml"
ECHO = EXAMPLES / "echo_workflow.yaml"
PARKED = re.compile(r"run (\S+) is parked; resume with: .* --run (\S+) ")


def _parked(*args: str | Path, stdin: str = "") -> str:
    done = tether("workflow", "run", *args, stdin=stdin)
    assert done.code == 0, done.out + done.err
    found = PARKED.search(done.out)
    assert found, done.out
    return found.group(1)


def _row(out: str, run_id: str) -> str:
    return next(line for line in out.splitlines() if run_id in line and "│" in line)


def _resume_line(out: str, run_id: str) -> str:
    return next(line.strip() for line in out.splitlines() if f"--run {run_id}" in line)


def test_runs_lists_what_each_run_waits_on_and_the_command_that_resumes_it(tmp_path: Path) -> None:
    db, workspace = tmp_path / "runs.db", tmp_path / "ws"
    workspace.mkdir()
    gate = _parked(RELEASE, "--input", "version=2.0.0", "--db", db, "--workspace", workspace, stdin="q\n")
    asking = _parked(ECHO, "--script", EXAMPLES / "echo_workflow.script.json", "--db", db, "--workspace", workspace)

    listed = tether("workflow", "runs", "--db", db, process=True)  # the real path
    assert listed.code == 0, listed.err
    assert re.search(r"run\s+┃ workflow\s+┃ status\s+┃ waiting on\s+┃ saved", listed.out), listed.out
    assert re.search(r"│ release\s+│ waiting\s+│ approval at sign: Sign the release off\?\s+│ \d{4}-\d\d-\d\d ",
                     _row(listed.out, gate)), listed.out
    assert re.search(r"│ echo\s+│ waiting\s+│ input at ask-name: Whom should I greet\?", _row(listed.out, asking))
    assert listed.out.index(asking) < listed.out.index(gate)  # newest first
    assert _resume_line(listed.out, gate) == (
        f"tether workflow run {RELEASE} --run {gate} --db {db} --workspace {workspace}")
    assert _resume_line(listed.out, asking) == (
        f"tether workflow run {ECHO} --run {asking} --db {db} --workspace {workspace}")

    # the printed command, as printed (from another directory), resumes the run
    resumed = tether(*shlex.split(_resume_line(listed.out, gate))[1:], stdin="a\nship it\n", cwd=tmp_path)
    assert resumed.code == 0, resumed.err
    assert f"run {gate} complete" in resumed.out and '"artifact": "release-2.0.0.tar.gz"' in resumed.out

    waiting = tether("workflow", "runs", "--db", db, "--status", "waiting").out
    assert asking in waiting and gate not in waiting
    complete = tether("workflow", "runs", "--db", db, "--status", "complete").out
    assert re.search(r"│ release\s+│ complete\s+│ -\s+│", _row(complete, gate)) and asking not in complete
    assert "--run" not in complete  # nothing to resume
    only_echo = tether("workflow", "runs", "--db", db, "--workflow", "echo").out
    assert asking in only_echo and gate not in only_echo
    assert tether("workflow", "runs", "--db", db, "--workflow", "nope").out.strip() == "no workflow runs"


def test_runs_finds_runs_behind_newer_sessions_and_says_agent_work_needs_a_model(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    answered = _parked(ECHO, "--script", EXAMPLES / "echo_workflow.script.json", "--db", db,
                       "--workspace", tmp_path)
    done = tether("workflow", "run", ECHO, "--run", answered, "--db", db, "--workspace", tmp_path, stdin="Ada\n")
    assert done.code == 1 and f"run {answered} needs agent work at ask-name: set TETHER_MODEL" in done.out, done.out
    keyless = tether("workflow", "run", ECHO, "--db", db, "--workspace", tmp_path)
    found = re.search(r"run (\S+) needs agent work at ask-name", keyless.out)
    assert keyless.code == 1 and found, keyless.out

    async def chats_after() -> None:  # five newer sessions of an agent, saved after the runs
        store = SQLiteStore(db)
        for index in range(5):
            await store.create(Session(id=f"chat-{index}", agent="Bot", created_at=datetime.now(UTC)))
        await store.close()

    asyncio.run(chats_after())
    newest = tether("workflow", "runs", "--db", db, "--limit", "1")
    assert newest.code == 0, newest.err
    assert re.search(r"│ echo\s+│ waiting\s+│ agent work at ask-name \(needs --model or TETHER_MODEL\)",
                     _row(newest.out, found.group(1))), newest.out
    assert answered not in newest.out and not re.search(r"\bchat-\d\b", newest.out)  # ids: a path may hold "chat-"
    both = tether("workflow", "runs", "--db", db, "--limit", "2").out
    assert re.search(r"│ echo\s+│ running\s+│ agent work at ask-name \(needs --model or TETHER_MODEL\)",
                     _row(both, answered)), both


def test_a_run_started_from_python_has_no_file_to_name(tmp_path: Path) -> None:
    db = tmp_path / "t.db"

    async def started() -> None:
        store = SQLiteStore(db)
        run = WorkflowRun(RELEASE.read_text(), store=store, run_id="from-code", workspace=tmp_path)
        await run.drain()
        await store.close()

    asyncio.run(started())
    done = tether("workflow", "runs", "--db", db)
    assert done.code == 0, done.err
    assert "approval at sign" in _row(done.out, "from-code")
    assert _resume_line(done.out, "from-code") == f"tether workflow run FILE --run from-code --db {db}"
    assert "FILE: the workflow's file (the run was not started by tether workflow run)" in done.out


def test_sessions_list_and_show_point_a_workflow_run_to_the_workflow_commands(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    run_id = _parked(RELEASE, "--db", db, "--workspace", tmp_path, stdin="q\n")
    listed = tether("sessions", "list", "--db", db)
    assert listed.code == 0, listed.err
    assert "workflow:release" in _row(listed.out, run_id)
    assert listed.out.rstrip().endswith(
        f"workflow runs: (status) is the run's own; tether workflow runs --db {db} says what each waits on")
    shown = tether("sessions", "show", run_id, "--db", db, process=True)  # the real path
    assert shown.code == 0, shown.err
    assert f'"id": "{run_id}"' in shown.out and "usage: 0 model call(s)" in shown.out
    assert "transcript" not in shown.out
    assert shown.out.rstrip().endswith(
        "workflow run of 'release': waiting (approval at sign: Sign the release off?)\n"
        f"resume with: tether workflow run {RELEASE} --run {run_id} --db {db} --workspace {tmp_path}")


def test_bad_input_names_what_is_wrong(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    done = tether("workflow", "runs", "--db", missing)
    assert done.code == 1 and done.err.strip() == f"error: no store at {missing}"
    assert not missing.exists()
    done = tether("workflow", "run", RELEASE, "--run", "r1", "--db", missing)
    assert done.code == 1 and done.err.strip() == f"error: no store at {missing} (--run resumes a run stored there)"
    assert not missing.exists()

    db = tmp_path / "t.db"
    _parked(RELEASE, "--db", db, "--workspace", tmp_path, stdin="q\n")
    done = tether("workflow", "run", RELEASE, "--run", "nope", "--db", db)
    assert done.code == 1
    assert done.err.strip() == f"error: no workflow run 'nope' in {db} (tether workflow runs --db {db} lists them)"
    done = tether("workflow", "runs", "--db", db, "--status", "parked")
    assert done.code == 2 and done.err.strip() == (
        "error: --status: 'parked' is not one of running, waiting, blocked, complete, failed, cancelled")
    done = tether("sessions", "list", "--db", db, "--status", "waiting")
    assert done.code == 2 and done.err.strip() == (
        "error: --status: 'waiting' is not one of running, handed_off, completed, aborted "
        f"(tether workflow runs --db {shlex.quote(str(db))} --status waiting lists waiting workflow runs)")


def test_a_run_saved_from_python_keeps_the_file_and_workspace_it_was_started_with(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    run_id = _parked(RELEASE, "--db", db, "--workspace", tmp_path, stdin="q\n")

    async def rejected() -> None:  # a save by a host that says nothing of how the run was started
        store = SQLiteStore(db)
        run = await WorkflowRun.load(store, run_id, RELEASE.read_text())
        await run.apply_approval("sign", "rejected", feedback="not yet")
        await store.close()

    asyncio.run(rejected())
    done = tether("workflow", "runs", "--db", db)
    assert done.code == 0, done.err
    assert "rejected at sign: Sign the release off?" in _row(done.out, run_id)
    assert _resume_line(done.out, run_id) == (
        f"tether workflow run {RELEASE} --run {run_id} --db {db} --workspace {tmp_path}")


def test_sessions_knows_a_workflow_run_by_the_agent_prefix_the_runs_are_stored_under() -> None:
    from tether.cli._sessions import _WORKFLOW_AGENT
    from tether.workflow_host._store import WORKFLOW_AGENT_PREFIX

    assert _WORKFLOW_AGENT == WORKFLOW_AGENT_PREFIX  # _sessions does not load the workflow host to read it


async def test_listing_the_runs_is_one_query_however_many_other_sessions_the_store_holds() -> None:
    store = MemoryStore()
    for index in range(3):
        await WorkflowRun({"schemaVersion": 2, "id": f"wf{index}", "version": "1", "name": "W", "nodes": [
            {"id": "g", "label": "G", "description": "a gate", "run": {"kind": "gate", "prompt": "ok?",
                                                                    "schema": {"kind": "text"}}}],
            "edges": []}, store=store, run_id=f"run-{index}").drain()
    for index in range(40):  # chat sessions saved after the runs: newer than every run
        await store.create(Session(id=f"chat-{index}", agent="support", created_at=store.now()))
    queries = []
    list_sessions = store.list

    async def counted(**options: object) -> object:
        queries.append(options)
        return await list_sessions(**options)  # type: ignore[arg-type]

    store.list = counted  # type: ignore[method-assign,assignment]
    found = await _runs(store, None, None, 3)
    assert sorted(row.id for row, _, _ in found) == ["run-0", "run-1", "run-2"]
    assert len(queries) == 1


def test_detach_stores_a_run_and_tether_worker_drives_it(tmp_path: Path) -> None:
    log, file, db = tmp_path / "log", tmp_path / "pair.yaml", tmp_path / "t.db"
    file.write_text(f"""\
schemaVersion: 2
id: pair
version: "1"
name: Pair
input: {{who: ""}}
nodes:
  - {{id: a, label: A, description: a, run: {{kind: function, command: 'echo "$WHO a" >> {log}'}},
     contract: {{input: {{WHO: "${{input.who}}"}}}}}}
  - {{id: b, label: B, description: b, run: {{kind: function, command: 'echo "$WHO b" >> {log}'}},
     contract: {{input: {{WHO: "${{input.who}}"}}}}}}
edges:
  - {{id: e, source: a, target: b, type: flow}}
""")
    stored = tether("workflow", "run", file, "--input", "who=ana", "--db", db, "--detach", "--workspace",
                    tmp_path / "ws")
    assert stored.code == 0 and "queued (running)" in stored.out and f"tether worker --db {db}" in stored.out
    assert not log.exists()  # nothing ran: the run waits for a worker
    driven = tether("worker", "--db", db, "--once")
    assert driven.code == 0 and "1 run(s) driven" in driven.out, driven.err
    assert log.read_text().splitlines() == ["ana a", "ana b"]
    listed = tether("workflow", "runs", "--db", db)
    assert "complete" in listed.out
    assert tether("workflow", "run", file, "--run", "x", "--db", db, "--detach").code != 0


async def test_workflow_run_holds_the_run_so_a_worker_leaves_it_alone(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the lease is held for the whole call: how long the command waits for it before it gives
    # up (5 s) changes nothing here
    monkeypatch.setattr(_workflow_run, "LEASE_WAIT", 0.2)
    db = tmp_path / "t.db"
    file = EXAMPLES / "release.yaml"
    stored = await asyncio.to_thread(tether, "workflow", "run", file, "--db", db, "--detach", "--workspace", tmp_path)
    run_id = stored.out.split()[1]
    store = SQLiteStore(db)
    try:
        async with store.lease(run_id):  # another process drives it now
            busy = await asyncio.to_thread(tether, "workflow", "run", file, "--run", run_id, "--db", db, stdin="q\n")
        assert busy.code == 1 and f"run {run_id} is being driven by another process" in busy.err
    finally:
        await store.close()


def _slow_workflow(folder: Path) -> tuple[Path, Path, Path, Path]:
    """A one-node workflow file whose node touches ``started``, then waits until ``go`` exists;
    ``(started, go, db, file)``."""
    started, go, db, file = folder / "started", folder / "go", folder / "t.db", folder / "slow.json"
    file.write_text(json.dumps({
        "schemaVersion": 2, "id": "slow", "version": "1", "name": "Slow", "edges": [],
        "nodes": [{"id": "wait", "label": "Wait", "description": "waits for go", "run": {
            "kind": "function", "command": f"touch {started}; while [ ! -f {go} ]; do sleep 0.02; done"}}]}))
    return started, go, db, file


async def test_a_worker_stopped_with_sigterm_finishes_the_run_it_drives(tmp_path: Path) -> None:
    started, go, db, file = _slow_workflow(tmp_path)
    store = SQLiteStore(db)
    try:
        await queue_run(store, file, run_id="r", workspace=tmp_path)
        worker = await asyncio.create_subprocess_exec(sys.executable, "-m", "tether.cli", "worker", "--db", str(db),
                                                      "--poll", "0.05", stdout=asyncio.subprocess.PIPE,
                                                      env=child_env())
        for _ in range(3000):
            if started.exists():
                break
            await asyncio.sleep(0.02)
        worker.send_signal(signal.SIGTERM)  # mid-node: the worker finishes the run first
        await asyncio.sleep(0.2)
        go.touch()
        out, _ = await asyncio.wait_for(worker.communicate(), 60)
        assert worker.returncode == 0 and "1 run(s) driven" in out.decode()
        loaded = await WorkflowRun.load(store, "r")
        assert loaded.status == "complete" and not loaded.node("wait").attempts[0].in_doubt
    finally:
        await store.close()


async def test_a_worker_with_concurrency_drives_several_runs_at_once(tmp_path: Path) -> None:
    marks, db, file = tmp_path / "marks", tmp_path / "t.db", tmp_path / "meet.json"
    marks.mkdir()
    # each run's node waits until all three runs have started theirs: it ends only if they run at once
    meet = (f"touch {marks}/$$; i=0; while [ $(ls {marks} | wc -l) -lt 3 ]; do i=$((i+1)); "
            "[ $i -gt 1000 ] && exit 1; sleep 0.02; done")
    file.write_text(json.dumps({
        "schemaVersion": 2, "id": "meet", "version": "1", "name": "Meet", "edges": [],
        "nodes": [{"id": "meet", "label": "Meet", "description": "waits for the others",
                   "run": {"kind": "function", "command": meet}}]}))
    store = SQLiteStore(db)
    try:
        for run_id in ("r1", "r2", "r3"):
            await queue_run(store, file, run_id=run_id, workspace=tmp_path)
        driven = await asyncio.to_thread(tether, "worker", "--db", db, "--once", "--concurrency", "3")
        assert driven.code == 0 and "3 run(s) driven" in driven.out, driven.err
        for run_id in ("r1", "r2", "r3"):
            assert (await WorkflowRun.load(store, run_id)).status == "complete"
        refused = await asyncio.to_thread(tether, "worker", "--db", db, "--once", "--concurrency", "0")
        assert refused.code == 2 and "--concurrency" in refused.err
    finally:
        await store.close()


async def test_a_store_error_mid_way_lets_the_runs_being_driven_finish_before_it_is_raised(tmp_path: Path) -> None:
    from tether.errors import StoreError
    from tether.workflow_host import drive_stored_runs

    started, go, db, file = _slow_workflow(tmp_path)
    store = SQLiteStore(db)
    takes = 0
    take_runs = store.take_runs

    async def failing_after_the_first(*args: Any, **kwargs: Any) -> Any:
        nonlocal takes
        takes += 1
        if takes > 1:
            go.touch()  # the run in flight may finish now
            raise StoreError("the store is down", operation="take_runs")
        return await take_runs(*args, **kwargs)

    store.take_runs = failing_after_the_first  # type: ignore[method-assign]
    try:
        await queue_run(store, file, run_id="r", workspace=tmp_path)
        with pytest.raises(StoreError, match="the store is down"):
            await drive_stored_runs(store, poll=0.05, concurrency=2)
        assert started.exists()
        loaded = await WorkflowRun.load(store, "r")  # finished and saved before the error came out
        assert loaded.status == "complete" and not loaded.node("wait").attempts[0].in_doubt
    finally:
        await store.close()
