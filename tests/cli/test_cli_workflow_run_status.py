"""Ended workflow runs on the command line, on a real SQLite file: ``tether sessions list`` shows
each run's stored status with the run's own in brackets when it says more, ``tether sessions
prune`` removes old ended runs (complete, cancelled, blocked, failed with nothing to retry) and
keeps the open ones (parked, failed with a node to retry), and ``tether workflow runs`` prints
no resume command for a run that has ended."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from cli_helpers import tether

from tether.stores import SQLiteStore
from tether.testing import FakeClock
from tether.workflow_host import WorkflowRun

FAILING = """\
schemaVersion: 2
id: fails
version: "1"
name: Fails
nodes:
  - {id: a, label: A, description: exits 1, run: {kind: function, command: "false"}}
  - {id: b, label: B, description: never runs, run: {kind: function, command: "true"}}
edges:
  - {id: ab, source: a, target: b, type: flow}
"""


def _node(node_id: str, run: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": node_id, "label": node_id, "description": node_id, "run": run, **fields}


def _workflow(workflow_id: str, nodes: list[dict[str, Any]], edges: tuple[tuple[str, str], ...] = (), **fields: Any
              ) -> dict[str, Any]:
    return {"schemaVersion": 2, "id": workflow_id, "version": "1", "name": workflow_id, "nodes": nodes,
            "edges": [{"id": f"{s}-{t}", "source": s, "target": t, "type": "flow"} for s, t in edges], **fields}


GATED = _workflow("gated", [_node("sign", {"kind": "gate", "prompt": "sign?", "schema": {"kind": "text"}}),
                            _node("b", {"kind": "function", "command": "true"})], (("sign", "b"),))
RUNS = {  # run id: (workflow, what happens after the drain)
    "complete": (_workflow("ok", [_node("a", {"kind": "function", "command": "true"})]), ""),
    "cancelled": (GATED, "cancel"),
    "blocked": (_workflow("guarded", [_node("a", {"kind": "function", "command": "true"},
                                            contract={"requires": [{"expr": "input.go == true"}]})],
                          input={"go": False}), ""),
    "rejected": (_workflow("checked", [_node("verify", {"kind": "check", "command": "false"})]), "reject"),
    "failed": (_workflow("failing", [_node("a", {"kind": "function", "command": "false"})]), ""),
    "parked": (GATED, ""),
}


def _store_runs(db: Path, workspace: Path) -> None:
    """The runs of ``RUNS``, saved a year ago; ``old-blocked`` as an older tether stored a blocked run."""
    async def save() -> None:
        store = SQLiteStore(str(db), clock=FakeClock("2025-12-01T09:00:00Z"))
        try:
            for run_id, (workflow, then) in RUNS.items():
                run = WorkflowRun(workflow, store=store, run_id=run_id, workspace=workspace)
                await run.drain()
                if then == "cancel":
                    await run.cancel()
                elif then == "reject":
                    await run.apply_approval("verify", "rejected", feedback="no")
            old = WorkflowRun(RUNS["blocked"][0], store=store, run_id="old-blocked", workspace=workspace)
            await old.drain()
            document = await store.load("old-blocked")
            assert document is not None
            await store.save(document.model_copy(update={"status": "running"}), document.revision)
        finally:
            await store.close()
    asyncio.run(save())


def _status(out: str, run_id: str) -> str:
    row = next(line for line in out.splitlines() if f"│ {run_id} " in line)
    return [cell.strip() for cell in row.split("│")][3]


def test_sessions_list_prune_and_workflow_runs_know_which_runs_ended(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _store_runs(db, tmp_path)
    (tmp_path / "fails.yaml").write_text(FAILING)
    done = tether("workflow", "run", tmp_path / "fails.yaml", "--db", db, "--workspace", tmp_path)
    assert done.code == 1 and "failed" in done.out, done.out + done.err
    fresh = re.search(r"run (\S+) failed", done.out)
    assert fresh, done.out

    listed = tether("sessions", "list", "--db", db, process=True)  # the real path
    assert listed.code == 0, listed.err
    assert {run_id: _status(listed.out, run_id) for run_id in [*RUNS, "old-blocked", fresh.group(1)]} == {
        "complete": "completed", "cancelled": "aborted", "blocked": "aborted (blocked)",
        "rejected": "aborted (failed)", "failed": "running (failed)", "parked": "running (waiting)",
        "old-blocked": "running (blocked)", fresh.group(1): "running (failed)"}
    assert f"workflow runs: (status) is the run's own; tether workflow runs --db {db} says what each waits on" \
        in listed.out

    runs = tether("workflow", "runs", "--db", db).out
    resumed = set(re.findall(r"--run (\S+)", runs))
    assert resumed == {"failed", "parked", fresh.group(1)}, runs  # an ended run has no resume command
    blocked = tether("workflow", "runs", "--db", db, "--status", "blocked").out
    assert "│ blocked " in blocked and "│ old-blocked " in blocked, blocked  # stored aborted, and running before

    pruned = tether("sessions", "prune", "--older-than", "30d", "--db", db)
    assert pruned.out.strip() == "pruned 4 session(s) older than 30d", pruned.out + pruned.err
    left = tether("sessions", "list", "--db", db).out
    assert {run_id for run_id in [*RUNS, "old-blocked"] if f"│ {run_id} " in left} == {
        "failed", "parked", "old-blocked"}  # an older tether's blocked run stays until it is saved again


FLAKY = FAILING.replace('command: "false"', 'command: "test -f ready"')


def test_a_failed_run_stays_open_and_its_resume_command_retries_the_failed_node(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (tmp_path / "flaky.yaml").write_text(FLAKY)
    done = tether("workflow", "run", tmp_path / "flaky.yaml", "--db", db, "--workspace", tmp_path)
    found = re.search(r"run (\S+) failed", done.out)
    assert done.code == 1 and found, done.out + done.err
    run_id = found.group(1)
    assert _status(tether("sessions", "list", "--db", db).out, run_id) == "running (failed)"

    refused = tether("workflow", "run", tmp_path / "flaky.yaml", "--run", run_id, "--db", db, "--retry", "b")
    assert refused.code == 1 and refused.err.strip() == (
        "error: node 'b' is pending; only a failed node can be retried"), refused.err
    no_run = tether("workflow", "run", tmp_path / "flaky.yaml", "--db", db, "--retry", "a")
    assert no_run.code == 2 and "--retry retries a failed node of a stored run: give the run with --run" in no_run.err

    (tmp_path / "ready").touch()
    command = next(line.strip() for line in tether("workflow", "runs", "--db", db).out.splitlines()
                   if f"--run {run_id}" in line)
    assert command.endswith(f"--workspace {tmp_path} --retry a"), command
    resumed = tether(*command.split()[1:])
    assert resumed.code == 0 and f"run {run_id} complete" in resumed.out, resumed.out + resumed.err
    assert _status(tether("sessions", "list", "--db", db).out, run_id) == "completed"


UNMATCHED = """\
schemaVersion: 2
id: routed
version: "1"
name: Routed
input: {tier: min}
nodes:
  - {id: r, label: R, description: by tier, run: {kind: router, routes: [{when: "input.tier == 'max'", target: a}]}}
  - {id: a, label: A, description: the max branch, run: {kind: function, command: "true"}}
  - {id: w, label: W, description: agent work, run: {kind: agent, instruction: write it}}
edges:
  - {id: ra, source: r, target: a, type: flow}
  - {id: aw, source: a, target: w, type: flow}
"""


def test_a_router_that_matches_no_route_blocks_the_run_and_the_commands_say_why(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    (tmp_path / "routed.yaml").write_text(UNMATCHED)
    done = tether("workflow", "run", tmp_path / "routed.yaml", "--db", db, "--workspace", tmp_path)
    found = re.search(r"run (\S+) blocked", done.out)
    assert done.code == 1 and found, done.out + done.err
    assert "needs agent work" not in done.out, done.out  # the router is not agent work, w never became available
    said = " ".join(done.out.split())  # the table may wrap; the last line may not
    assert (f"run {found.group(1)} blocked: r: router 'r' matched no route and has no default: "
            """input.tier == 'max' is false (input = {"tier": "min"})""") in said, done.out

    runs = tether("workflow", "runs", "--db", db).out
    row = next(line for line in runs.splitlines() if f"│ {found.group(1)} " in line)
    assert "│ blocked " in row and "blocked at r: router 'r' matched no route" in row, runs
    assert "--run" not in runs  # nothing moves it: no resume command


def test_waits_on_never_calls_a_router_that_matched_no_route_agent_work() -> None:
    from tether.cli._workflow_runs import waits_on

    routed = _workflow("routed", [
        _node("r", {"kind": "router", "routes": [{"when": "input.n > 10", "target": "a"}]}),
        _node("a", {"kind": "function", "command": "true"}), _node("w", {"kind": "agent", "instruction": "write"})],
        (("r", "a"),), input={"n": 1})
    run = WorkflowRun(routed)
    asyncio.run(run.drain())
    assert run.status == "waiting"
    assert waits_on(run.snapshot) == "agent work at w (needs --model or TETHER_MODEL)"


def test_resuming_a_run_with_its_file_changed_is_a_one_line_error_naming_both_digests(tmp_path: Path) -> None:
    from tether.workflow import load_workflow

    db, path = tmp_path / "runs.db", tmp_path / "flaky.yaml"
    path.write_text(FLAKY)
    done = tether("workflow", "run", path, "--db", db, "--workspace", tmp_path)
    found = re.search(r"run (\S+) failed", done.out)
    assert done.code == 1 and found, done.out + done.err
    run_id = found.group(1)

    path.write_text(FLAKY.replace("never runs", "never runs either"))
    before, after = load_workflow(FLAKY).digest, load_workflow(path.read_text()).digest
    refused = tether("workflow", "run", path, "--run", run_id, "--db", db, "--workspace", tmp_path, "--retry", "a")
    assert refused.code == 1 and refused.out == "", refused.out
    assert refused.err.strip() == (
        f"error: run {run_id!r} of workflow 'fails' was started with definition {before}, not {after} (the "
        "definition given now): a run is pinned to the definition it started with. Resume it with that "
        "definition, or start a new run of the changed one"), refused.err

    path.write_text(FLAKY)
    (tmp_path / "ready").touch()
    resumed = tether("workflow", "run", path, "--run", run_id, "--db", db, "--workspace", tmp_path, "--retry", "a")
    assert resumed.code == 0 and f"run {run_id} complete" in resumed.out, resumed.out + resumed.err
