"""``tether sessions``: list, show, delete and prune stored sessions."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, get_args

import typer
from rich.table import Table
from rich.text import Text

from tether.cli._output import CliError, fail, stdout_console
from tether.cli._store import DEFAULT_DB, saved_when, with_store
from tether.flow import parse_duration

if TYPE_CHECKING:  # opened when a command runs (``tether --help`` does not load the stores)
    from tether.engine.core.session import Session, SessionUsage
    from tether.stores import SessionSummary, Store

__all__ = ["DEFAULT_DB", "sessions_app"]

sessions_app = typer.Typer(name="sessions", help="List, show, delete and prune stored sessions.",
                           no_args_is_help=True)

_WORKFLOW_AGENT = "workflow:"  # a workflow run's agent prefix (tether.workflow_host._store, not loaded here)

DbOption = typer.Option(DEFAULT_DB, "--db", help="the session store: a SQLite path or a store URL")


@sessions_app.command("list")
def list_sessions(
    db: str = DbOption,
    agent: str | None = typer.Option(None, "--agent", help="only this agent's sessions"),
    status: str | None = typer.Option(None, "--status", help="running, handed_off, completed or aborted"),
    limit: int = typer.Option(100, "--limit", min=1, help="at most this many rows"),
) -> None:
    """A table of the stored sessions, newest first: id, agent, status, revision, saved (a
    workflow run's agent is ``workflow:<id>``, and its own status follows its stored one in
    brackets when it says more; ``tether workflow runs`` says what it waits on)."""
    from tether.engine.core.session import SessionStatus

    if status is not None and status not in get_args(SessionStatus):
        from tether.cli._workflow_runs import RUN_STATUSES

        hint = (f" (tether workflow runs --db {shlex.quote(db)} --status {status} lists {status} workflow runs)"
                if status in RUN_STATUSES else "")
        fail(f"--status: {status!r} is not one of {', '.join(get_args(SessionStatus))}{hint}")
    if "://" not in db and not Path(db).expanduser().is_file():
        typer.echo(f"no sessions (no store at {db})")
        return

    async def work(store: Store) -> tuple[list[SessionSummary], dict[str, str]]:
        rows = await store.list(agent=agent, status=status, limit=limit)
        return rows, await _run_statuses(store, rows)

    try:
        rows, runs = with_store(db, work)
    except CliError as exc:
        fail(exc.message, exc.code)
    if not rows:
        typer.echo("no sessions")
        return
    table = Table("id", "agent", "status", "revision", "saved")
    for row in rows:
        run = runs.get(row.id, _SAME[row.status])
        shown = row.status if run == _SAME[row.status] else f"{row.status} ({run})"
        table.add_row(Text(row.id), Text(row.agent), shown, str(row.revision), saved_when(row.saved_at))
    console = stdout_console()
    console.print(table)
    if any(row.agent.startswith(_WORKFLOW_AGENT) for row in rows):
        from tether.cli._workflow_runs import db_argument

        console.print(f"workflow runs: (status) is the run's own; tether workflow runs --db "
                      f"{shlex.quote(db_argument(db))} says what each waits on", markup=False)


# the run status a workflow run's document status says without saying it again
_SAME = {"running": "running", "completed": "complete", "aborted": "cancelled", "handed_off": "-"}


async def _run_statuses(store: Store, rows: list[SessionSummary]) -> dict[str, str]:
    """The run status of each workflow run among ``rows``, by id (a document that no longer
    loads as a run is left out: its row shows the stored status alone)."""
    from tether.errors import TetherError
    from tether.workflow_host._store import stored_run

    found: dict[str, str] = {}
    for row in rows:
        if not row.agent.startswith(_WORKFLOW_AGENT):
            continue
        try:
            document = await store.load(row.id)
            snapshot = stored_run(document) if document is not None else None
        except (TetherError, ValueError):
            continue
        if snapshot is not None:
            found[row.id] = snapshot.status
    return found


def _usage_line(usage: SessionUsage) -> str:
    """``usage: N model call(s) ..., P prompt + C completion tokens`` (other token counts when any)."""
    line = f"usage: {usage.llm_calls} model call(s)"
    among = [f"{count} by {what}" for count, what in ((usage.agent_calls, "agent steps"),
                                                       (usage.workflow_calls, "workflow runs")) if count]
    if among:
        line += f" ({', '.join(among)})"
    line += f", {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens"
    more = [f"{count} {what}" for count, what in ((usage.cached_input_tokens, "cached input"),
                                                  (usage.cache_creation_tokens, "cache creation"),
                                                  (usage.reasoning_tokens, "reasoning")) if count]
    return line + (f" ({', '.join(more)})" if more else "")


def _log_line(doc: Session) -> str:
    """``log: N log, N warn, N error`` (the entries the document keeps)."""
    return f"log: {len(doc.log)} log, {len(doc.warn)} warn, {len(doc.error)} error"


@sessions_app.command("show")
def show_session(session_id: str = typer.Argument(..., metavar="ID"), db: str = DbOption) -> None:
    """The session document as JSON, what it spent and how much it logged, then its transcript
    (for a workflow run: what it waits on and the command that resumes it)."""

    async def work(store: Store) -> tuple[Session, list[str]]:
        doc = await store.load(session_id)
        if doc is None:
            raise CliError(f"no session {session_id!r} in {db}", 1)
        lines = [f"{m.seq:>4} {m.role}/{m.kind}: {m.text}" for m in await store.transcript(session_id)]
        return doc, lines

    try:
        doc, transcript = with_store(db, work)
    except CliError as exc:
        fail(exc.message, exc.code)
    typer.echo(doc.model_dump_json(indent=2))
    typer.echo("")
    typer.echo(_usage_line(doc.usage))
    typer.echo(_log_line(doc))
    typer.echo("")
    if doc.agent.startswith(_WORKFLOW_AGENT):  # a run has no transcript: what it waits on, how to resume it
        from tether.cli._workflow_runs import run_lines

        about_run = run_lines(doc, db)
        if about_run:
            for line in about_run:
                typer.echo(line)
            return
    typer.echo(f"transcript ({len(transcript)} message(s)):")
    for line in transcript:
        typer.echo(line)


@sessions_app.command("delete")
def delete_session(
    session_id: str = typer.Argument(..., metavar="ID"),
    db: str = DbOption,
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
) -> None:
    """Delete a session with its transcript, events and wakes."""

    async def exists(store: Store) -> bool:
        return await store.load(session_id) is not None

    async def delete(store: Store) -> None:
        async with store.lease(session_id):  # a worker in the middle of a turn there finishes first
            await store.delete(session_id)

    try:
        if not with_store(db, exists):
            raise CliError(f"no session {session_id!r} in {db}", 1)
        if not yes and not typer.confirm(f"delete session {session_id}?", default=False):
            typer.echo("not deleted")
            raise typer.Exit(1)
        with_store(db, delete)
    except CliError as exc:
        fail(exc.message, exc.code)
    typer.echo(f"deleted session {session_id}")


@sessions_app.command("prune")
def prune_sessions(
    older_than: str = typer.Option(..., "--older-than", help="a duration such as 30d, 12h, 90m"),
    db: str = DbOption,
) -> None:
    """Delete ended (completed or aborted) sessions last saved longer ago than --older-than."""
    try:
        age = parse_duration(older_than)
    except ValueError as exc:
        fail(f"--older-than: {exc}")
    if "://" not in db and not Path(db).expanduser().is_file():
        typer.echo(f"pruned 0 session(s) (no store at {db})")
        return

    async def work(store: Store) -> int:
        return await store.prune(older_than=store.now() - age)

    try:
        count = with_store(db, work)
    except CliError as exc:
        fail(exc.message, exc.code)
    typer.echo(f"pruned {count} session(s) older than {older_than}")

