"""``tether check`` and ``tether graph``: validate an app, draw its flows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tether.cli._output import fail, format_issue, one_line
from tether.errors import AppLoadError, DefinitionIssue, FlowDefinitionError

if TYPE_CHECKING:
    from tether.apps import LoadedApp

__all__ = ["check", "graph", "load_or_exit"]


def load_or_exit(spec: str) -> LoadedApp:
    """Load ``APP`` for a command that needs a valid app.

    A bad ``APP`` is a one-line error (exit 2); definition problems are printed one per line on
    stderr (exit 1).
    """
    from tether.apps import load_app

    try:
        return load_app(spec)
    except AppLoadError as exc:
        fail(exc.message)
    except FlowDefinitionError as exc:
        for issue in exc.issues:
            typer.echo(format_issue(issue), err=True)
        typer.echo(f"error: {spec} has {len(exc.issues)} definition problem(s) (see `tether check`)", err=True)
        raise typer.Exit(1) from None


def _model_issues(app: LoadedApp) -> list[DefinitionIssue]:
    from tether.runtime import check_model_selections

    issues: list[DefinitionIssue] = []
    for agent in app.agents:
        try:
            check_model_selections(agent)
        except Exception as exc:
            issues.append(DefinitionIssue(getattr(exc, "code", "model-configuration"), one_line(str(exc))))
    return issues


def _registry_issues(app: LoadedApp) -> list[DefinitionIssue]:
    seen: set[str] = set()
    issues: list[DefinitionIssue] = []
    for agent in app.agents:
        if agent.id in seen:
            issues.append(DefinitionIssue("duplicate-agent-id", f"agent id {agent.id!r} is used more than once"))
        seen.add(agent.id)
    return issues


def check(app_spec: str = typer.Argument(..., metavar="APP",
                                         help="file.py[:attr], package.module:attr, a flow file or a workflow file"),
          as_json: bool = typer.Option(False, "--json", help="flow files: print the issues as one JSON object "
                                       "(each with its repair action)")) -> None:
    """Load APP and validate every flow, or validate a workflow .yaml/.json file; print each
    definition problem (exit 1 if any)."""
    from tether.apps import load_app
    from tether.cli._workflow import is_workflow_file

    if not app_spec.endswith(".py"):  # the flow-file and workflow packages only for their files
        from tether.cli._dialect import check_flow_file
        from tether.dialect.files import is_flow_document

        if is_flow_document(app_spec):
            check_flow_file(app_spec, as_json=as_json)
            return
    if as_json:
        fail("--json is for flow files (a YAML/JSON file holding agent: or flow:)")
    if is_workflow_file(app_spec):
        from tether.cli._workflow_run import check_workflow_file

        check_workflow_file(app_spec)
        return
    try:
        app = load_app(app_spec)
    except AppLoadError as exc:
        fail(exc.message)
    except FlowDefinitionError as exc:
        issues = exc.issues or [DefinitionIssue(exc.code, one_line(exc.message))]
        for issue in issues:
            typer.echo(format_issue(issue))
        typer.echo(f"{len(issues)} problem(s)")
        raise typer.Exit(1) from None
    problems = _registry_issues(app) + _model_issues(app)
    if problems:
        for issue in problems:
            typer.echo(format_issue(issue))
        typer.echo(f"{len(problems)} problem(s)")
        raise typer.Exit(1)
    old = [issue for agent in app.agents for issue in agent.old_forms()]
    for issue in old:
        typer.echo(format_issue(issue))
    warned = f" ({len(old)} warning(s))" if old else ""
    typer.echo(f"ok: {len(app.agents)} agent(s), {app.flow_count} flow(s){warned}")


def graph(
    app_spec: str = typer.Argument(..., metavar="APP", help="path/to/file.py[:attr] or package.module:attr"),
    flow: str | None = typer.Argument(None, metavar="[FLOW]", help="only this flow"),
    format: str = typer.Option("mermaid", "--format", "-f", help="mermaid (the source) or html (a page that draws it)"),
    output: Path | None = typer.Option(None, "--output", "-o", help="write to this file instead of stdout"),
) -> None:
    """Draw the flows of APP (or only FLOW) as a mermaid flowchart: one chart per agent, with an
    edge from each start_flow to the flow it starts; --format html writes a page that renders it."""
    from tether.cli._graph_page import graph_page
    from tether.flow.mermaid import agent_to_mermaid

    if format not in ("mermaid", "html"):
        fail(f"unknown --format {format!r} (use mermaid or html)")
    app = load_or_exit(app_spec)
    charts: list[tuple[str, str]] = []
    for agent in app.agents:
        if flow is None:
            charts.append((f"agent {agent.id}", agent_to_mermaid(agent)))
        elif flow in agent.flows_by_id:
            charts.append((f"flow {flow}", agent.flows_by_id[flow].to_mermaid()))
            break
    if not charts:
        known = ", ".join(f.id for agent in app.agents for f in agent.flows) or "none"
        fail(f"unknown flow {flow!r} (flows: {known})")
    if format == "html":
        text = graph_page(app_spec, charts)
    else:
        text = "\n".join(f"%% {title}\n{chart}" for title, chart in charts)
    if output is None:
        typer.echo(text.rstrip("\n"))
    else:
        output.write_text(text)
        typer.echo(f"wrote {output}")
