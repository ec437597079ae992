"""What ``tether workflow`` runs (:mod:`tether.cli._workflow` holds the commands, and says what
each does; they import this module when they run): a workflow file's run with live progress
(the node table, approval and input prompts, parking and resuming), its graph, its checks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import uuid
from pathlib import Path
from typing import Any, Literal

import typer
import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from tether.cli._chat import pick_model
from tether.cli._output import CliError, fail, one_line, stdout_console
from tether.cli._store import db_argument, open_db
from tether.cli._workflow_prompts import ask_answer
from tether.cli._workflow_runs import resume_command, stuck
from tether.errors import (
    DefinitionIssue,
    SessionLeaseTimeout,
    TetherError,
    WorkflowDefinitionError,
    WorkflowOperationError,
)
from tether.models import resolve_model
from tether.models.types import Model, ModelResponse, ToolCall
from tether.testing import ScriptedModel, ScriptExhausted
from tether.workflow import WorkflowGraph, WorkflowSnapshot
from tether.workflow._contract import RouterRun
from tether.workflow._load import camel_keys
from tether.workflow_host import (
    DEFAULT_RUN_LEASE,
    SnapshotStore,
    WorkflowRun,
    check_subflows,
    load_workflow_file,
    queue_run,
    workflow_directory_resolver,
)

__all__ = ["LEASE_WAIT", "check_workflow_file", "load_graph", "mermaid", "run_worker", "run_workflow"]

_STYLES = {"complete": "green", "failed": "red", "skipped": "dim", "running": "cyan", "available": "cyan",
           "awaiting_approval": "yellow", "awaiting_input": "yellow"}


def _where(issue: DefinitionIssue) -> str:
    """``path: `` before an issue's message (none for a syntax error: it names its file:line)."""
    return "" if issue.code == "workflow-syntax" else f"{issue.path or '<root>'}: "


def load_graph(path: str) -> WorkflowGraph:
    """The workflow file at ``path``; its definition problems are printed (exit 1)."""
    try:
        return load_workflow_file(path)
    except WorkflowDefinitionError as exc:
        for issue in exc.issues:
            typer.echo(f"error [{issue.code}] {_where(issue)}{one_line(issue.message)}", err=True)
        typer.echo(f"error: {path} has {len(exc.issues)} definition problem(s)", err=True)
        raise typer.Exit(1) from None


def check_workflow_file(path: str) -> None:
    """``tether check FILE.yaml``: print each problem (``path: message``) and exit 1, or say ok."""
    try:
        graph = load_workflow_file(path)
        check_subflows(graph, workflow_directory_resolver(Path(path).parent))
    except WorkflowDefinitionError as exc:
        for issue in exc.issues:
            where = f"{issue.flow}: " if issue.flow and issue.code.startswith("subflow") else ""
            typer.echo(f"{where}{_where(issue)}{one_line(issue.message)}")
        typer.echo(f"{len(exc.issues)} problem(s)")
        raise typer.Exit(1) from None
    workflow = graph.workflow
    older = camel_keys(_raw(path))
    for where, key, snake in older:
        typer.echo(f"warning [old-form] {where}: {key} is the older camelCase form of the key (write {snake})")
    counted = f" ({len(older)} warning(s))" if older else ""
    typer.echo(f"ok: workflow {workflow.id!r} ({len(workflow.nodes)} node(s), {len(workflow.edges)} edge(s))"
               f"{counted}")


def _raw(path: str) -> Any:
    """The contents of the workflow file ``path`` as data (it parsed already)."""
    text = Path(path).read_text(encoding="utf-8")
    return json.loads(text) if path.endswith(".json") else yaml.safe_load(text)


def _inputs(pairs: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise CliError(f"--input takes name=value, got {pair!r}")
        try:
            values[name] = json.loads(text)
        except json.JSONDecodeError:
            values[name] = text
    return values


def _detail(graph: WorkflowGraph, snapshot: WorkflowSnapshot, node_id: str) -> str:
    state = snapshot.nodes[node_id]
    if state.approval is not None and state.status == "awaiting_approval":
        decided = f" [{state.approval.decision}]" if state.approval.decision else ""
        return f"{state.approval.summary}{decided}"
    if state.approval is not None and state.approval.decision == "rejected" and state.status == "running":
        return f"rejected: {one_line(state.approval.feedback or 'no feedback')}"[:120]  # back with the agent
    if state.error and state.status in ("failed", "skipped"):
        return one_line(state.error)[:120]
    if isinstance(graph.nodes[node_id].run, RouterRun) and state.output is not None:
        return f"-> {', '.join(state.output.selected or []) or 'nothing'}"
    if state.failed_conditions:
        return "; ".join(state.failed_conditions)
    if state.skip_reason == "pruned":
        return "branch not taken"
    return ""


def render(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> Table:
    """The table of node states."""
    table = Table(title=f"workflow {graph.id} · run {snapshot.run_id} · {snapshot.status}", title_justify="left")
    for column in ("node", "kind", "status", "detail"):
        table.add_column(column)
    for node_id in graph.order:
        state = snapshot.nodes[node_id]
        style = _STYLES.get(state.status, "")
        status = f"[{style}]{state.status}[/]" if style else state.status
        table.add_row(node_id, graph.nodes[node_id].run.kind, status, _detail(graph, snapshot, node_id))
    return table


async def _drain(run: WorkflowRun, console: Console, *, agent: bool) -> None:
    with Live(render(run.graph, run.snapshot), console=console, auto_refresh=False) as live:
        run.on_change = lambda snapshot: live.update(render(run.graph, snapshot), refresh=True)
        try:
            await (run.advance() if agent else run.drain())
        finally:
            run.on_change = None
    if not console.is_terminal:
        console.line()


def _pending_input(run: WorkflowRun) -> str | None:
    return next((n for n in run.graph.order if run.snapshot.nodes[n].status == "awaiting_input"), None)


async def _answer(run: WorkflowRun, node_id: str, console: Console) -> bool:
    """Ask the terminal for ``node_id``'s requested input; ``False`` when the user quits."""
    request = run.node(node_id).input_request
    assert request is not None
    console.print(f"[bold]{node_id}[/] asks: {request.prompt}")
    while True:
        try:
            answer = await asyncio.to_thread(ask_answer, request.schema_, "answer")
        except typer.Abort:
            return False
        try:
            await run.apply_input(node_id, answer, provided_by="cli")
        except TetherError as exc:
            console.print(f"[red]refused:[/] {exc.message}")
            continue
        return True


def load_script(path: Path) -> ScriptedModel:
    """A scripted model from a JSON file: ``{"agent": [...], "subprompt": [...]}``, each reply a
    text or ``{"tool_calls": [{"name": ..., "arguments": {...}}], "text": ...}``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"cannot read the script {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise CliError(f"script {str(path)!r}: expected an object of reply lists by call name")
    scripted = ScriptedModel(name=f"script:{path.name}")
    for call, replies in data.items():
        for index, reply in enumerate(replies):
            if isinstance(reply, dict) and "tool_calls" in reply:
                calls = tuple(ToolCall(id=f"{call}-{index}-{n}", name=c["name"], arguments=c.get("arguments", {}))
                              for n, c in enumerate(reply["tool_calls"]))
                reply = ModelResponse(text=reply.get("text", ""), tool_calls=calls, finish_reason="tool_calls")
            scripted.add(call, reply)
    return scripted


def _model(model: str | None, script: Path | None) -> Model | None:
    if script is not None:
        if model is not None:
            raise CliError("--script and --model cannot be used together")
        return load_script(script)
    chosen = pick_model(model)
    if chosen is None:
        return None
    try:
        return resolve_model(chosen)
    except TetherError as exc:
        raise CliError(f"invalid model {chosen!r}: {one_line(exc.message)}") from None


def _pending_approval(run: WorkflowRun) -> str | None:
    for node_id in run.graph.order:
        state = run.snapshot.nodes[node_id]
        if state.status == "awaiting_approval" and state.approval is not None and state.approval.decision is None:
            return node_id
    return None


async def _decide(run: WorkflowRun, node_id: str, console: Console) -> bool:
    """Ask about ``node_id``'s approval; ``False`` when the user quits. (The prompts run on a thread:
    the event loop keeps renewing the run's lease while the user thinks.)"""
    approval = run.node(node_id).approval
    assert approval is not None
    console.print(f"[bold]{node_id}[/]: {approval.summary}")
    if approval.check:
        console.print(f"  evidence: {json.dumps(approval.check)}")
    while True:
        try:
            asked = await asyncio.to_thread(typer.prompt, "approve, reject or quit? [a/r/q]", default="q")
            answer = asked.strip().lower()
        except typer.Abort:
            return False
        if answer in ("q", "quit"):
            return False
        if answer not in ("a", "approve", "r", "reject"):
            continue
        decision: Literal["approved", "rejected"] = "approved" if answer.startswith("a") else "rejected"
        try:
            response = None
            if decision == "approved" and (approval.schema_ or {}).get("kind", "text") != "text":
                response = await asyncio.to_thread(ask_answer, approval.schema_, "response")
            feedback = await asyncio.to_thread(typer.prompt, "feedback", default="", show_default=False)
        except typer.Abort:
            return False
        try:
            await run.apply_approval(node_id, decision, feedback=feedback or None, decided_by="cli",
                                     response=response)
        except TetherError as exc:
            console.print(f"[red]refused:[/] {exc.message}")
            continue
        if decision == "rejected" and run.node(node_id).status == "awaiting_approval":
            console.print(f"{node_id} stays parked with the rejection; resume with a fresh request later")
            return False
        return True


LEASE_WAIT = 5.0
"""Seconds ``tether workflow run`` waits for a run's lease (a worker driving it) before it gives up."""


async def _run(graph: WorkflowGraph, *, path: Path, inputs: dict[str, Any], run_id: str | None, db: str,
               workspace: Path, autonomous: bool, console: Console, model: Model | None, retry: list[str],
               detach: bool = False) -> int:
    if detach and run_id is not None:
        raise CliError("--detach stores a new run for a worker: it cannot take --run")
    if retry and run_id is None:
        raise CliError("--retry retries a failed node of a stored run: give the run with --run")
    if run_id is not None and "://" not in db and not Path(db).expanduser().is_file():
        raise CliError(f"no store at {db} (--run resumes a run stored there)", 1)
    workspace.mkdir(parents=True, exist_ok=True)  # where the run's commands write their files
    store = open_db(db)
    if detach:
        try:
            snapshot = await queue_run(store, path, input=inputs, workspace=workspace, autonomous=autonomous)
        finally:
            await store.close()
        console.print(f"run {snapshot.run_id} queued ({snapshot.status}); `tether worker --db {db_argument(db)}` "
                      "(or tether serve on this store) drives it", markup=False, highlight=False)
        return 0
    # stored with the run, so that `tether workflow runs` prints the command that resumes it
    snapshots = SnapshotStore(store, launch={"file": str(path.resolve()), "workspace": str(workspace.resolve())})
    options: dict[str, Any] = {"workspace": workspace, "resolve": workflow_directory_resolver(path.parent),
                               "model": model}
    held = run_id or str(uuid.uuid4())
    lease = contextlib.AsyncExitStack()
    try:
        try:  # held while this process drives the run, so a `tether worker` leaves it alone
            await lease.enter_async_context(store.lease(held, timeout=LEASE_WAIT))
        except SessionLeaseTimeout:
            raise CliError(f"run {held} is being driven by another process (a tether worker?): try again when it "
                           "waits", 1) from None
        if run_id is not None:
            if inputs:
                raise CliError("--input cannot change a run that already exists (--run)")
            try:
                run = await WorkflowRun.load(snapshots, run_id, graph, **options)
            except WorkflowOperationError as exc:
                if exc.code != "unknown-run":
                    raise
                raise CliError(f"no workflow run {run_id!r} in {db} (tether workflow runs --db {db} lists them)",
                               1) from None
            if autonomous and not run.snapshot.autonomous:
                await run.set_autonomous_mode(True)
            for node_id in retry:  # a refusal (not failed, a rejected check, unknown) names the node
                await run.retry_node(node_id)
        else:
            run = WorkflowRun(graph, store=snapshots, run_id=held, input=inputs, autonomous=autonomous, **options)
        exhausted: ScriptExhausted | None = None
        try:
            while True:
                await _drain(run, console, agent=model is not None)
                pending = _pending_approval(run)
                if pending is not None:
                    if not await _decide(run, pending, console):
                        break
                    continue
                asking = _pending_input(run)
                if asking is None or not await _answer(run, asking, console):
                    break
        except ScriptExhausted as exc:  # the run is saved as it stands: say where and how to go on
            exhausted = exc
        resume = resume_command(str(path.resolve()), run.snapshot.run_id, db, str(workspace.resolve()))
        if exhausted is not None:  # the live table shows the run as it stopped
            working = [n for n in run.agent_nodes if run.snapshot.nodes[n].status in ("available", "running")]
            console.print(f"run {run.snapshot.run_id} stopped ({run.snapshot.status}"
                          f"{', agent work at ' + ', '.join(sorted(working)) if working else ''}): the script ran "
                          f"out of replies ({exhausted}); resume with: {resume}", markup=False, highlight=False)
            return 1
        return _report(run, console, has_model=model is not None, resume=resume)
    finally:
        await lease.aclose()
        await store.close()


def _report(run: WorkflowRun, console: Console, *, has_model: bool, resume: str) -> int:
    snapshot = run.snapshot
    if snapshot.model_calls:
        tokens = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in sorted(snapshot.usage.items()))
        console.print(f"[dim]{snapshot.model_calls} model call(s){': ' + tokens if tokens else ''}[/]")
    if snapshot.status == "complete":
        console.print(f"run {snapshot.run_id} complete")
        if snapshot.output:
            console.print(json.dumps(snapshot.output, indent=2))
        return 0
    if snapshot.status == "waiting" or (snapshot.status == "running" and not has_model):
        # without a model, an agent node the answer to its input request set running again is agent work too
        agents = [n for n, s in snapshot.nodes.items()
                  if s.status in ("available", "running") and n in run.agent_nodes]
        if agents and _pending_approval(run) is None and _pending_input(run) is None:
            console.print(f"run {snapshot.run_id} needs agent work at {', '.join(agents)}: "
                          f"{_why_no_agent_work(run, has_model)}", markup=False, highlight=False)
            return 1
    if snapshot.status == "waiting":
        console.print(f"run {snapshot.run_id} is parked; resume with: {resume}", markup=False, highlight=False)
        return 0
    held = stuck(snapshot) if snapshot.status == "blocked" else []
    console.print(f"run {snapshot.run_id} {snapshot.status}" + (f": {'; '.join(held)}" if held else ""),
                  markup=False, highlight=False)
    return 1


def _why_no_agent_work(run: WorkflowRun, has_model: bool) -> str:
    """Why the agent nodes left are not done: no model, or what the model's last turn did."""
    turn = run.last_agent_turn
    if not has_model or turn is None:
        return "set TETHER_MODEL, --model or --script to run it"
    said = f"it replied {one_line(turn.text)!r}" if turn.text.strip() else "it replied with no text"
    if not turn.calls:
        return f"the model did not call a flow tool (start_node, request_input, complete_node, ...); {said}"
    called = ", ".join(name for name, _, _ in turn.calls)
    return f"the model's last turn called {called} and moved no node; {said}"


def run_workflow(file: Path, input: list[str] | None, run_id: str | None, db: str, workspace: Path,
                 autonomous: bool, model: str | None, script: Path | None, retry: list[str] | None = None, *,
                 detach: bool = False) -> None:
    """``tether workflow run``: run FILE (or resume ``run_id``, retrying the failed nodes ``retry``
    names first), showing node states; with ``detach``, store the new run for a worker and exit."""
    graph = load_graph(str(file))
    try:
        chosen = _model(model, script)
        code = asyncio.run(_run(graph, path=file, inputs=_inputs(input or []), run_id=run_id, db=db,
                                workspace=workspace, autonomous=autonomous, console=stdout_console(), model=chosen,
                                retry=retry or [], detach=detach))
    except CliError as exc:
        fail(exc.message, exc.code)
    except TetherError as exc:
        fail(exc.message, 1)
    except ScriptExhausted as exc:
        fail(f"the script ran out of replies: {exc}", 1)
    if code:
        raise typer.Exit(code)


def mermaid(graph: WorkflowGraph) -> str:
    """The workflow as a mermaid flowchart: flow edges solid, optional dotted, parallel labelled,
    router routes labelled with their condition."""
    names = {node_id: f"n{index}" for index, node_id in enumerate(graph.order)}
    lines = ["flowchart TD"]
    for node_id in graph.order:
        node = graph.nodes[node_id]
        shape = ("{{", "}}") if node.run.kind == "router" else ("[/", "/]") if node.run.kind == "gate" else ("[", "]")
        label = f"{node_id}: {node.label} ({node.run.kind})".replace('"', "'")
        lines.append(f'    {names[node_id]}{shape[0]}"{label}"{shape[1]}')
    for edge in graph.workflow.edges:
        arrow = {"flow": "-->", "optional": "-.->", "parallel": "-. parallel .->"}[edge.type]
        lines.append(f"    {names[edge.source]} {arrow} {names[edge.target]}")
    for node_id, routes in graph.routes.items():
        for route in routes:
            if route.target is not None:
                when = (route.when.source if route.when else "default").replace('"', "'")
                lines.append(f'    {names[node_id]} -. "{when}" .-> {names[route.target]}')
    return "\n".join(lines)


def run_worker(db: str, *, once: bool, poll: float, model: str | None = None, script: Path | None = None,
               lease: float = DEFAULT_RUN_LEASE, concurrency: int = 1) -> None:
    """``tether worker``: drive the queued runs (see :func:`drive_stored_runs`), with the model of
    ``--model``/``TETHER_MODEL`` (or a script) for subprompt and agent nodes. A ``SIGTERM`` or
    ``SIGINT`` stops it once the runs it drives wait or end (``SIGKILL`` leaves their nodes in
    doubt for the next worker); ``concurrency``: how many runs it drives at once."""
    from tether.workflow_host import drive_stored_runs

    chosen = _model(model, script)

    async def work() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):  # finish the run being driven, then stop
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stop.set)
        store = open_db(db)
        try:
            return await drive_stored_runs(store, model=chosen, once=once, poll=poll, lease=lease, stop=stop,
                                           concurrency=concurrency)
        finally:
            await store.close()

    moved = asyncio.run(work())
    stdout_console().print(f"{moved} run(s) driven", markup=False, highlight=False)
