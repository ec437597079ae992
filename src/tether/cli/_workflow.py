"""``tether workflow``: run a workflow file with live progress, draw it, print its JSON Schema.

``tether workflow run FILE --input k=v`` drains the run, showing a table of node states (live on
a terminal); with a model (``--model``, ``TETHER_MODEL``, or scripted replies with ``--script``)
it runs subprompt nodes and gives the agent its turns. At a pending approval it asks approve /
reject / quit and a feedback line; at an agent's input request it asks for the typed answer;
quitting leaves the run parked in the store, and ``--run ID`` resumes it (``--retry NODE`` first
sends a failed node back to admission). Exit status: 0 when the run
completed or was left parked on purpose, 1 when it failed or cannot progress. ``tether workflow
runs`` lists the stored runs, what each waits on and the command that resumes it.

The commands import what they run (:mod:`tether.cli._workflow_run`) when they run, so that
``tether --help`` and the other commands do not load the workflow engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tether.cli._store import DEFAULT_DB

__all__ = ["is_workflow_file", "workflow_app"]

workflow_app = typer.Typer(name="workflow", help="Run and draw declared-edge workflows (YAML or JSON files).",
                           no_args_is_help=True)


def is_workflow_file(spec: str) -> bool:
    """Whether ``tether check`` should read ``spec`` as a workflow file."""
    return Path(spec).suffix in (".yaml", ".yml", ".json")


@workflow_app.command("run")
def run_command(
    file: Path = typer.Argument(..., metavar="FILE", help="a workflow .yaml/.yml/.json file"),
    input: list[str] | None = typer.Option(None, "--input", "-i", help="run input name=value (JSON or text)"),
    run_id: str | None = typer.Option(None, "--run", help="resume this stored run"),
    retry: list[str] | None = typer.Option(None, "--retry", help="with --run: retry this failed node first "
                                           "(repeat for more)"),
    db: str = typer.Option(DEFAULT_DB, "--db", help="the store: a SQLite path or a store URL"),
    workspace: Path = typer.Option(Path("."), "--workspace", "-w",
                                   help="where commands run and write their files (created when missing)"),
    autonomous: bool = typer.Option(False, "--autonomous", help="no pauses except mandatory approvals and gates"),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model for subprompt and agent nodes "
                                     "(default: TETHER_MODEL)"),
    script: Path | None = typer.Option(None, "--script", help="a JSON file of scripted model replies (no key needed)"),
    detach: bool = typer.Option(False, "--detach", help="store the new run and exit: a `tether worker` drives it"),
) -> None:
    """Run FILE (or resume --run ID), showing node states; ask at approvals and input requests."""
    from tether.cli._workflow_run import run_workflow

    run_workflow(file, input, run_id, db, workspace, autonomous, model, script, retry or [], detach=detach)


@workflow_app.command("runs")
def runs_command(
    db: str = typer.Option(DEFAULT_DB, "--db", help="the store: a SQLite path or a store URL"),
    workflow: str | None = typer.Option(None, "--workflow", help="only the runs of this workflow id"),
    status: str | None = typer.Option(None, "--status", help="running, waiting, blocked, complete, failed or "
                                      "cancelled"),
    limit: int = typer.Option(100, "--limit", min=1, help="at most this many runs"),
) -> None:
    """The stored runs, newest first: what each waits on, when it was saved, how to resume it."""
    from tether.cli._workflow_runs import list_runs

    list_runs(db, workflow, status, limit)


@workflow_app.command("graph")
def graph_command(file: Path = typer.Argument(..., metavar="FILE", help="a workflow .yaml/.yml/.json file")) -> None:
    """Print the mermaid graph of FILE."""
    from tether.cli._workflow_run import load_graph, mermaid

    typer.echo(mermaid(load_graph(str(file))))


@workflow_app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the v2 workflow contract."""
    from tether.workflow import workflow_json_schema

    typer.echo(json.dumps(workflow_json_schema(), indent=2, sort_keys=True))
