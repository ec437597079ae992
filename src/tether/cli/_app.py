"""The typer application behind ``tether``."""

from __future__ import annotations

from pathlib import Path

import typer

from tether.cli._dialect import run_scenarios, schema
from tether.cli._inspect import check, graph, load_or_exit
from tether.cli._output import CliError, fail, stdout_console
from tether.cli._serve import serve
from tether.cli._sessions import DEFAULT_DB, sessions_app
from tether.cli._workflow import workflow_app

__all__ = ["app"]

app = typer.Typer(name="tether", help="Deterministic, durable LLM agents.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
app.command()(check)
app.command()(graph)
app.command()(serve)
app.command()(schema)
app.command(name="test")(run_scenarios)
app.add_typer(sessions_app)
app.add_typer(workflow_app)

APP_HELP = "path/to/file.py[:attr] or package.module:attr naming an Agent (or a list of Agents)"


@app.command()
def drift(
    app_spec: str = typer.Argument(..., metavar="APP", help=APP_HELP),
    db: str = typer.Option(DEFAULT_DB, "--db", help="the session store the running version writes: a SQLite path "
                           "or a store URL"),
) -> None:
    """Before a deploy: what APP (the new code) would do with every parked run in the store.

    Lists each live run with its verdict (unchanged, continue, migrate, restart, end or error)
    and why. Exits 1 when any run would fail with flow-drift, so a deploy script can stop there.
    """
    from tether.cli._drift import run_drift

    loaded = load_or_exit(app_spec)
    try:
        code = run_drift(loaded, db)
    except CliError as exc:
        fail(exc.message, exc.code)
    if code:
        raise typer.Exit(code)


@app.command()
def worker(
    db: str = typer.Option(DEFAULT_DB, "--db", help="the store: a SQLite path or a store URL"),
    once: bool = typer.Option(False, "--once", help="stop when no queued run has work left, instead of waiting"),
    poll: float = typer.Option(1.0, "--poll", min=0.01, help="seconds between looks when no run is queued"),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model for subprompt and agent nodes "
                                     "(default: TETHER_MODEL; none: agent work is left to a worker with one)"),
    script: Path | None = typer.Option(None, "--script", help="a JSON file of scripted model replies (no key needed)"),
    lease: float = typer.Option(30.0, "--lease", min=0.5, help="seconds a take of a run lasts unrenewed: how long "
                                "a run whose worker died waits before another worker resumes it"),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="runs this worker drives at once (a run "
                                    "mostly waits on its nodes' commands)"),
) -> None:
    """Drive the queued workflow runs, from any number of processes on one store.

    Takes the oldest queued run (leased to this worker; on PostgreSQL with SKIP LOCKED), resumes it
    from the workflow file it was started with, and drives it until it waits on a person or ends;
    with --concurrency N, up to N runs at once.
    """
    from tether.cli._workflow_run import run_worker

    try:
        run_worker(db, once=once, poll=poll, model=model, script=script, lease=lease, concurrency=concurrency)
    except CliError as exc:
        fail(exc.message, exc.code)


@app.command()
def version() -> None:
    """Print tether's version."""
    from importlib.metadata import version as _version

    typer.echo(_version("tether"))


@app.command()
def chat(
    app_spec: str = typer.Argument(..., metavar="APP", help=APP_HELP),
    session: str | None = typer.Option(None, "--session", "-s", help="resume this session id"),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model (default: TETHER_MODEL)"),
    db: str = typer.Option(DEFAULT_DB, "--db", help="the session store: a SQLite path or a store URL"),
    agent: str | None = typer.Option(None, "--agent", help="the agent id, when APP defines several"),
    message: list[str] | None = typer.Option(None, "--message", help="send this message (repeatable), then exit"),
) -> None:
    """Talk to an agent in the terminal (/help lists the slash commands).

    With --message, send those messages (or slash commands) in order and exit: 1 if a turn failed.
    """
    from tether.cli._chat import run_chat

    loaded = load_or_exit(app_spec)
    try:
        code = run_chat(loaded, agent_id=agent, session=session, model=model, db=db, messages=message or [],
                 console=stdout_console())
    except CliError as exc:
        fail(exc.message, exc.code)
    if code:
        raise typer.Exit(code)
