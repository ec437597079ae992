"""``tether sessions``: list, show, delete and prune stored sessions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer
from rich.table import Table

from tether.cli._output import CliError, fail, one_line, stdout_console
from tether.flow import parse_duration

if TYPE_CHECKING:  # opened when a command runs (``tether --help`` does not load the stores)
    from tether.engine.session import Session, SessionUsage
    from tether.stores import Store

__all__ = ["sessions_app"]

DEFAULT_DB = ".tether/tether.db"

sessions_app = typer.Typer(name="sessions", help="List, show, delete and prune stored sessions.",
                           no_args_is_help=True)

T = TypeVar("T")

DbOption = typer.Option(DEFAULT_DB, "--db", help="the session store: a SQLite path or a store URL")


def _with_store(db: str, work: Callable[[Store], Awaitable[T]]) -> T:
    """Open the store at ``db``, run ``work`` on it, close it. A missing SQLite file is an error."""
    if "://" not in db and db != "memory:" and not Path(db).expanduser().is_file():
        raise CliError(f"no session store at {db}", 1)

    from tether.stores import open_store

    async def run() -> T:
        store = open_store(str(Path(db).expanduser()) if "://" not in db else db)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(run())
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"store {db}: {one_line(str(exc))}", 1) from None


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


@sessions_app.command("list")
def list_sessions(
    db: str = DbOption,
    agent: str | None = typer.Option(None, "--agent", help="only this agent's sessions"),
    status: str | None = typer.Option(None, "--status", help="running, completed or aborted"),
    limit: int = typer.Option(100, "--limit", min=1, help="at most this many rows"),
) -> None:
    """A table of the stored sessions, newest first: id, agent, status, revision, saved."""
    if "://" not in db and not Path(db).expanduser().is_file():
        typer.echo(f"no sessions (no store at {db})")
        return
    try:
        rows = _with_store(db, lambda store: store.list(agent=agent, status=status, limit=limit))
    except CliError as exc:
        fail(exc.message, exc.code)
    if not rows:
        typer.echo("no sessions")
        return
    table = Table("id", "agent", "status", "revision", "saved")
    for row in rows:
        table.add_row(row.id, row.agent, row.status, str(row.revision), _when(row.saved_at))
    stdout_console().print(table)


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
    """The session document as JSON, what it spent and how much it logged, then its transcript."""

    async def work(store: Store) -> tuple[Session, list[str]]:
        doc = await store.load(session_id)
        if doc is None:
            raise CliError(f"no session {session_id!r} in {db}", 1)
        lines = [f"{m.seq:>4} {m.role}/{m.kind}: {m.text}" for m in await store.transcript(session_id)]
        return doc, lines

    try:
        doc, transcript = _with_store(db, work)
    except CliError as exc:
        fail(exc.message, exc.code)
    typer.echo(doc.model_dump_json(indent=2))
    typer.echo("")
    typer.echo(_usage_line(doc.usage))
    typer.echo(_log_line(doc))
    typer.echo("")
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
        if not _with_store(db, exists):
            raise CliError(f"no session {session_id!r} in {db}", 1)
        if not yes and not typer.confirm(f"delete session {session_id}?", default=False):
            typer.echo("not deleted")
            raise typer.Exit(1)
        _with_store(db, delete)
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
        count = _with_store(db, work)
    except CliError as exc:
        fail(exc.message, exc.code)
    typer.echo(f"pruned {count} session(s) older than {older_than}")

