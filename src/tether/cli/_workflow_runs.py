"""``tether workflow runs``: the stored workflow runs, newest first, with what each waits on and
the command that resumes it; and the lines ``tether sessions show`` ends a workflow run with.

A run is a session document of agent ``workflow:<id>`` (:mod:`tether.workflow_host._store`); the
store lists documents by exact agent, so without ``--workflow`` the listing asks for more rows
until it has ``--limit`` runs or the store has no more. The file and workspace in the resume
command are the ones ``tether workflow run`` stored with the run (``metadata.launch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

import typer
from rich.table import Table
from rich.text import Text

from tether.cli._output import CliError, command, fail, one_line, stdout_console
from tether.cli._store import db_argument, saved_when, with_store
from tether.engine.core.session import Session, SessionStatus
from tether.stores import SessionSummary, Store
from tether.workflow import WorkflowSnapshot, ops
from tether.workflow._state import RunStatus
from tether.workflow_host import waiting_on
from tether.workflow_host._store import WORKFLOW_AGENT_PREFIX, stored_run

__all__ = ["RUN_STATUSES", "db_argument", "list_runs", "resume_command", "run_lines", "stuck", "waits_on"]

RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
_ENDED = ("complete", "cancelled")
_TEXT = 60  # characters of a prompt or an error shown in a row
_NO_FILE = "FILE"

Found = tuple[SessionSummary, Session, WorkflowSnapshot]


def _short(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


def stuck(snapshot: WorkflowSnapshot, short: bool = False) -> list[str]:
    """``node: why`` for each node of a failed or blocked run that cannot move and says why: a
    false guard, a router that matched no route and has no default, an available node waiting on a
    producer."""
    text = _short if short else one_line
    return [f"{w['node']}: {text(w['why'])}" for w in waiting_on(snapshot) if w["kind"] == "blocked"]


def waits_on(snapshot: WorkflowSnapshot) -> str:
    """What the run waits on (:func:`tether.workflow_host.waiting_on`, in a line): its pending
    approvals and input requests, else the agent work left, the nodes running or failed, what
    blocks it, or ``-`` once it has ended."""
    waits = waiting_on(snapshot)
    asks = [f"{w['decision'] or 'approval'} at {w['node']}: {_short(w['summary'])}" if w["kind"] == "approval"
            else f"input at {w['node']}: {_short(w['prompt'])}" for w in waits if w["kind"] in ("approval", "input")]
    if asks:
        return "; ".join(asks)
    if snapshot.status in _ENDED:
        return "-"
    kinds = {w["kind"]: w for w in waits}
    if "worker" in kinds:
        return f"running at {', '.join(kinds['worker']['nodes'])} (resume to continue)"
    if "agent" in kinds:
        nodes = kinds["agent"]["nodes"]
        rejected = [f"rejected at {node_id}: {_short(approval.feedback or 'no feedback')}" for node_id in nodes
                    if (approval := snapshot.nodes[node_id].approval) is not None and approval.decision == "rejected"]
        if rejected:  # back with the agent, to revise
            return f"{'; '.join(rejected)} (agent work: needs --model or TETHER_MODEL)"
        return f"agent work at {', '.join(nodes)} (needs --model or TETHER_MODEL)"
    failed = [f"failed at {w['node']}: {_short(w['error'] or 'no error recorded')}" for w in waits
              if w["kind"] == "failed"]
    if failed:
        return "; ".join(failed)
    held = stuck(snapshot, short=True)
    return f"blocked at {'; '.join(held)}" if held else "nothing it can run"


def resume_command(file: str, run_id: str, db: str, workspace: str | None, retry: Sequence[str] = ()) -> str:
    """The ``tether workflow run`` command that resumes ``run_id`` (retrying the nodes ``retry``
    names first), with its store made absolute."""
    words = ["workflow", "run", file, "--run", run_id, "--db", db_argument(db)]
    if workspace:
        words += ["--workspace", workspace]
    for node_id in retry:
        words += ["--retry", node_id]
    return command(*words)  # the FILE placeholder needs no quoting


def _resume(document: Session, snapshot: WorkflowSnapshot, db: str) -> str | None:
    """The command that resumes the run (``None`` once it has ended); a failed run's retries its
    failed nodes first (``--retry``)."""
    if ops.run_ended(snapshot):
        return None
    launch = document.metadata.get("launch")
    launch = launch if isinstance(launch, dict) else {}
    retry = ops.retryable(snapshot) if snapshot.status == "failed" else []
    return resume_command(str(launch.get("file") or _NO_FILE), snapshot.run_id, db,
                          str(launch["workspace"]) if launch.get("workspace") else None, retry)


def run_lines(document: Session, db: str) -> list[str]:
    """What ``tether sessions show`` says after a workflow run's document (nothing for another
    session): the run's status and what it waits on, and the command that resumes it."""
    snapshot = stored_run(document)
    if snapshot is None:
        return []
    waiting = waits_on(snapshot)
    about = f" ({waiting})" if waiting != "-" else ""
    lines = [f"workflow run of {snapshot.workflow_id!r}: {snapshot.status}{about}"]
    command = _resume(document, snapshot, db)
    if command is not None:
        lines.append(f"resume with: {command}")
    return lines


# The document status a run of each status is stored with; a failed run is stored ``running``
# while a node can be retried and ``aborted`` after, and a document saved before blocked and failed
# runs were stored ``aborted`` has them ``running``: those two are looked for under any status.
_STORED: dict[str, SessionStatus] = {"running": "running", "waiting": "running", "complete": "completed",
                                     "cancelled": "aborted"}


async def _runs(store: Store, workflow: str | None, status: str | None, limit: int) -> list[Found]:
    """The newest ``limit`` runs (of ``workflow``, in ``status``), newest first."""
    agent = f"{WORKFLOW_AGENT_PREFIX}{workflow}" if workflow else None
    stored = _STORED.get(status) if status else None
    loaded: dict[str, tuple[Session, WorkflowSnapshot] | None] = {}
    asked = limit
    while True:
        rows = await store.list(agent=agent, status=stored, limit=asked,
                                agent_prefix=None if agent else WORKFLOW_AGENT_PREFIX)
        found: list[Found] = []
        for row in rows:
            if row.id not in loaded:
                document = await store.load(row.id)
                snapshot = stored_run(document) if document is not None else None
                loaded[row.id] = (document, snapshot) if document is not None and snapshot is not None else None
            entry = loaded[row.id]
            if entry is not None and (status is None or entry[1].status == status):
                found.append((row, *entry))
                if len(found) == limit:
                    return found
        if len(rows) < asked:  # the store has no more
            return found
        asked *= 4


def list_runs(db: str, workflow: str | None, status: str | None, limit: int) -> None:
    """``tether workflow runs``: a table of the runs, then the command that resumes each open one."""
    try:
        if status is not None and status not in RUN_STATUSES:
            raise CliError(f"--status: {status!r} is not one of {', '.join(RUN_STATUSES)}")
        found = with_store(db, lambda store: _runs(store, workflow, status, limit), what="store")
    except CliError as exc:
        fail(exc.message, exc.code)
    if not found:
        typer.echo("no workflow runs")
        return
    table = Table("run", "workflow", "status", "waiting on", "saved")
    commands: list[str] = []
    for row, document, snapshot in found:
        table.add_row(Text(snapshot.run_id), Text(snapshot.workflow_id), snapshot.status, Text(waits_on(snapshot)),
                      saved_when(row.saved_at))
        command = _resume(document, snapshot, db)
        if command is not None:
            commands.append(command)
    console = stdout_console()
    console.print(table)
    if commands:
        console.print("to resume a run:", *(f"  {command}" for command in commands), sep="\n", markup=False)
    if any(f" {_NO_FILE} " in command for command in commands):
        console.print(f"{_NO_FILE}: the workflow's file (the run was not started by tether workflow run)", markup=False)
