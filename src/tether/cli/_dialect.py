"""``tether check`` for flow files (issues printed like a compiler), ``tether schema`` and ``tether test``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tether.cli._output import CliError, fail, one_line
from tether.errors import DefinitionIssue, FlowDefinitionError

if TYPE_CHECKING:  # the commands import the dialect when they run (``tether --help`` does not load it)
    from tether.dialect.registry import Registry
    from tether.dialect.spec import AgentSpec

__all__ = ["check_flow_file", "run_scenarios", "schema"]


def _print(path: str, text: str, issues: list[DefinitionIssue]) -> None:
    from tether.dialect.files import line_of

    located = sorted(((line_of(text, issue.path), issue) for issue in issues), key=lambda pair: pair[0])
    for line, issue in located:
        code = issue.code if issue.severity == "error" else f"warning {issue.code}"
        typer.echo(f"{path}:{line}: {code}: {one_line(issue.message)} [{issue.path}]")
        if issue.hint:
            typer.echo(f"    hint: {issue.hint}")


def _spec_and_registry(path: str) -> tuple[AgentSpec | None, Registry | None, list[DefinitionIssue], str]:
    from tether.dialect.cel_text import old_forms
    from tether.dialect.files import load_registry, read_document
    from tether.dialect.parse import parse_document
    from tether.dialect.spec import AgentSpec
    from tether.dialect.validate import validate_spec

    try:
        data, text = read_document(path)
    except FlowDefinitionError as exc:
        fail(one_line(exc.issues[0].message))
    spec, issues = parse_document(data)
    if spec is None:
        return None, None, issues, text
    registry = None
    if isinstance(spec, AgentSpec) and spec.code is not None:
        try:
            registry = load_registry(spec.code, Path(path).parent)
        except FlowDefinitionError as exc:
            return None, None, exc.issues, text
        except Exception as exc:  # the user's code module failed to import
            raise CliError(f"cannot import {spec.code}: {type(exc).__name__}: {one_line(str(exc))}") from None
    issues = validate_spec(spec, registry)
    issues += [DefinitionIssue("old-form", "a predicate object is the older form of a condition", path=where,
                               hint=f"write the CEL condition {text!r}", severity="warning")
               for where, text in old_forms(spec, "agent" if isinstance(spec, AgentSpec) else "flow")]
    return spec if isinstance(spec, AgentSpec) else None, registry, issues, text


def check_flow_file(path: str, *, as_json: bool = False) -> None:
    """``tether check agent.yaml``: every issue as ``file:line: code: message [path]`` with its
    hint; exit 1 when any is an error. ``--json``: one object ``{file, ok, errors, warnings,
    issues}``, each issue with its ``line`` and ``repair`` action, for a host handing them to a model."""
    from tether.dialect.files import line_of

    try:
        _, _, issues, text = _spec_and_registry(path)
    except CliError as exc:
        fail(exc.message, exc.code)
    errors = [i for i in issues if i.severity == "error"]
    if as_json:
        listed = [{**issue.as_dict(), "line": line_of(text, issue.path)} for issue in issues]
        typer.echo(json.dumps({"file": path, "ok": not errors, "errors": len(errors),
                               "warnings": len(issues) - len(errors), "issues": listed}, indent=2))
        if errors:
            raise typer.Exit(1)
        return
    _print(path, text, issues)
    if errors:
        typer.echo(f"{len(errors)} error(s), {len(issues) - len(errors)} warning(s)")
        raise typer.Exit(1)
    typer.echo(f"ok: {path}" + (f" ({len(issues)} warning(s))" if issues else ""))


def schema(
    kind: str = typer.Argument(..., metavar="KIND", help="flow or agent"),
    agent: str | None = typer.Argument(None, metavar="[AGENT_FILE]",
                                       help="an agent file: enumerate its fields, tools, actions, events, conditions"),
) -> None:
    """Print the JSON Schema of a flow (or agent) file; closed, and given an agent file, restricted
    to exactly what that agent offers."""
    from tether.dialect.files import is_flow_file
    from tether.dialect.registry import Registry
    from tether.dialect.schema import flow_file_schema

    if kind not in ("flow", "agent"):
        fail(f"unknown schema {kind!r} (flow, agent)")
    if agent is None:
        typer.echo(json.dumps(flow_file_schema(kind), indent=2))
        return
    if not is_flow_file(agent):
        what = "a Python file" if agent.endswith(".py") or ".py:" in agent else "not a flow file (.yaml/.yml/.json)"
        fail(f"{agent} is {what}, and only a flow file (agent.yaml) has a schema of its own: run "
             f"`tether check {agent}` to validate it, or `tether schema {kind}` for the schema every flow file follows")
    try:
        spec, registry, issues, _ = _spec_and_registry(agent)
    except CliError as exc:
        fail(exc.message, exc.code)
    if spec is None:
        fail(f"{agent} is not a valid agent file ({len(issues)} problem(s): run tether check {agent})")
    registry = registry or Registry()
    tools = spec.tools if spec.tools is not None else [t.name for t in registry.tools]
    typer.echo(json.dumps(flow_file_schema(kind, fields=spec.fields, tools=tools, actions=registry.actions,
                                           events=registry.events, conditions=registry.conditions), indent=2))


def run_scenarios(
    paths: list[str] = typer.Argument(..., metavar="PATH...", help="*.scenario.yaml files and directories of them"),
    record: bool = typer.Option(False, "--record", help="write what each turn did as its expect (rewrites the files)"),
) -> None:
    """Run scenario files (a conversation, or a suite of them, with a scripted model and what each
    turn must do); report like pytest, with a diff for every failed expectation (exit 1 if any
    failed). With --record, each file is rewritten with what every turn did as its expect."""
    import asyncio

    from tether.testing.scenarios import ScenarioError, find_scenarios, record_file, run_file

    found: list[Path] = []
    for path in paths:
        if not Path(path).exists():
            fail(f"no such file or directory: {path}")
        here = find_scenarios(path)
        if not here:
            fail(f"no scenario files (*.scenario.yaml) at {path}")
        found += [file for file in here if file not in found]
    passed = failed = 0
    for file in found:
        try:
            results = asyncio.run(record_file(file) if record else run_file(file))
        except (ScenarioError, FlowDefinitionError) as exc:
            failed += 1
            said = one_line(str(exc))
            typer.echo(f"ERROR  {said if said.startswith(f'{file}: ') else f'{file}: {said}'}")
            continue
        if record:
            passed += len(results)
            typer.echo(f"RECORDED {file} :: {len(results)} scenario{'' if len(results) == 1 else 's'}")
            continue
        for result in results:
            if result.passed:
                passed += 1
                typer.echo(f"PASSED {file} :: {result.name}")
            else:
                failed += 1
                typer.echo(f"FAILED {file} :: {result.name}")
                typer.echo(result.report())
    typer.echo(f"{passed} {'recorded' if record else 'passed'}, {failed} failed")
    if failed:
        raise typer.Exit(1)
