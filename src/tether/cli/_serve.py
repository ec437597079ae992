"""``tether serve``: the HTTP API of an app on uvicorn, with the wake scheduler and a worker of the
store's workflow run queue in every process (the model chosen here serves their agent nodes).

With no API keys (``TETHER_API_KEYS`` unset) the API is open, so the server binds 127.0.0.1 only
and says so; binding another address needs keys. ``--workers N`` runs N processes on one listening
socket, each taking new connections only while it holds no more than the others (see
:mod:`tether.cli._workers`; on Windows, uvicorn's workers); each builds its own
app from the app file and store named in the environment
(``worker_app``), and they share the sessions through the store: on PostgreSQL any number of
processes (and hosts) share the load and each wake fires once (claimed with ``SKIP LOCKED``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tether.cli import _workers
from tether.cli._inspect import load_or_exit
from tether.cli._output import CliError, fail
from tether.cli._sessions import DEFAULT_DB

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from tether.agent import Agent

__all__ = ["serve", "worker_app"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")

APP_HELP = "path/to/file.py[:attr] or package.module:attr naming an Agent (or a list of Agents)"

APP_ENV = "TETHER_SERVE_APP"
STORE_ENV = "TETHER_SERVE_STORE"
REFRESH_ENV = "TETHER_SERVE_FLOW_REFRESH"
MODEL_ENV = "TETHER_SERVE_MODEL"
WORKFLOWS_ENV = "TETHER_SERVE_WORKFLOWS"
DEFAULT_FLOW_REFRESH = 5.0


def _log_turns() -> None:
    """Print the ``tether`` loggers (one line per turn on ``tether.turn``) to stderr at INFO."""
    logger = logging.getLogger("tether")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def _settle_heap() -> None:
    """Move what start-up made (modules, the app, its agents and flows: objects that live as long
    as the process) out of the garbage collector's view (``gc.freeze``), so its collections while
    serving walk only what requests make."""
    gc.collect()
    gc.freeze()


def _agents(app_spec: str, model: str | None) -> list[Agent]:
    """The app's agents, served by ``model`` when one is chosen (else by their own models)."""
    from tether.cli._chat import serve_agents

    try:
        return serve_agents(load_or_exit(app_spec), model)
    except CliError as exc:
        fail(exc.message, exc.code)


def model_banner(agents: list[Agent]) -> str:
    """What serves the agents' turns, for the start-up banner: the default model selection of each
    agent (``openai-compatible:fake``), or ``none (keyword routing)`` when no agent has one."""
    names: list[str] = []
    for agent in agents:
        selection = agent.model_selections.get("default")
        if selection is not None:
            name = selection if isinstance(selection, str) else selection.name
            if name not in names:
                names.append(name)
    return ", ".join(names) if names else "none (keyword routing)"


def _app(agents: list[Agent], store: str, flow_refresh: float, model: str | None = None,
         workflows: str | None = None) -> Starlette:
    from tether.server import create_app, keys_from_env
    from tether.stores import open_store

    try:
        return create_app(agents, store=open_store(store), api_keys=keys_from_env(), flow_refresh=flow_refresh,
                          workflow_model=model, workflows=workflows)
    except Exception as exc:
        fail(f"cannot serve: {exc}")


def _check_store(store: str) -> None:
    """Open the store once before serving, so a URL that cannot work (a missing database, a
    refused login, a server that does not answer within the store's connect wait) is one line,
    ``error: cannot serve: store open failed: <libpq's reason>``, and exit 1, rather than a
    traceback from the start-up of every worker."""
    if store in ("memory:", "memory://"):
        return
    from tether.stores import open_store

    async def check() -> None:
        opened = open_store(store)
        try:
            await opened.list(limit=1)
        finally:
            await opened.close()

    try:
        asyncio.run(check())
    except Exception as exc:
        fail(f"cannot serve: {exc}", 1)


def worker_app() -> Starlette:
    """The app of one ``--workers`` process (a uvicorn factory): the app file, store and flow refresh
    come from ``TETHER_SERVE_APP``, ``TETHER_SERVE_STORE`` and ``TETHER_SERVE_FLOW_REFRESH``, and
    the model chosen by ``--model`` from ``TETHER_SERVE_MODEL``, set by ``tether serve``."""
    _log_turns()
    model = os.environ.get(MODEL_ENV) or None
    app = _app(_agents(os.environ[APP_ENV], model), os.environ[STORE_ENV],
               float(os.environ.get(REFRESH_ENV, DEFAULT_FLOW_REFRESH)), model, os.environ.get(WORKFLOWS_ENV) or None)
    _settle_heap()
    return app


def serve(
    app_spec: str = typer.Argument(..., metavar="APP", help=APP_HELP),
    store: str = typer.Option(DEFAULT_DB, "--db", "--store", help="the session store: a SQLite path or a store URL "
                              "(--store: its older name)"),
    host: str = typer.Option("127.0.0.1", "--host", help="the address to bind (non-loopback needs API keys)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="the port to bind"),
    workers: int = typer.Option(1, "--workers", min=1, help="server processes sharing the address and the store"),
    model: str | None = typer.Option(None, "--model", "-m", help="provider:model serving every agent "
                                      "(default: TETHER_MODEL; else each agent's own model)"),
    flow_refresh: float = typer.Option(DEFAULT_FLOW_REFRESH, "--flow-refresh", min=0.0,
                                       help="seconds between reads of the stored flow versions, so a flow another "
                                            "worker published reaches new runs here (0: never)"),
    workflows: Path | None = typer.Option(None, "--workflows", file_okay=False, dir_okay=True, exists=True,
                                          help="a directory of workflow files that POST /v1/workflows/{id}/runs "
                                               "starts runs of (this server drives them, as does any tether "
                                               "worker on the same store; their commands run in the current "
                                               "directory)"),
) -> None:
    """Serve the app's agents over HTTP (routes under /v1, OpenAPI at /openapi.json, inspector at /inspect).

    The model is chosen as for ``tether chat``: --model, else TETHER_MODEL, else each agent's own;
    every server process also drives the store's queued workflow runs, with that model for their
    subprompt and agent nodes (none chosen: agent work is left to a worker with one).
    API keys come from TETHER_API_KEYS ("tenant:key,tenant:key"); without any the API is open
    and binds 127.0.0.1 only. Each turn logs one line (tether.turn) to stderr, and nothing else
    is logged per request (no access log). With the fast extra installed (uvloop and httptools),
    uvicorn runs on them.
    """
    try:
        import uvicorn

        from tether.cli._banner_server import BannerServer, base_url
        from tether.cli._protocol import http_protocol, http_stack
        from tether.runtime.costs import Budgets, PriceTable
        from tether.server import keys_from_env
        from tether.server.auth import operator_keys_from_env
    except ImportError as exc:
        fail(f"tether serve needs the server extra (pip install 'tether[server]'): {exc}")
    try:
        keys = keys_from_env()
        operators = operator_keys_from_env()
        budgets = Budgets.from_env()
        PriceTable.from_env()
    except ValueError as exc:
        fail(str(exc))
    if not keys and host not in LOOPBACK:
        fail(f"refusing to bind {host} with no API keys (set TETHER_API_KEYS, or bind 127.0.0.1)")
    if workers > 1 and store in ("memory:", "memory://"):
        fail("--workers needs a store the processes share (a SQLite file or PostgreSQL), not memory:")
    from tether.cli._chat import pick_model

    try:
        chosen = pick_model(model)
    except CliError as exc:
        fail(exc.message, exc.code)
    agents = _agents(app_spec, chosen)
    if "://" not in store and store != "memory:":
        Path(store).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store = str(Path(store).expanduser().resolve())
    names = ", ".join(agent.id for agent in agents)
    folder = str(workflows.resolve()) if workflows is not None else None
    typer.echo(f"tether serve: agents {names}; store {store}; {workers} worker(s); {http_stack()}", err=True)
    _check_store(store)
    banner = f"model: {model_banner(agents)}"
    if folder is not None:
        typer.echo(f"tether serve: workflow runs of the files in {folder} start over POST /v1/workflows/ID/runs; "
                   f"this server drives them, as does any `tether worker --db {store}`", err=True)
    if not keys:
        typer.echo("tether serve: no API keys configured: the API is OPEN (binding 127.0.0.1 only)", err=True)
    else:
        typer.echo(f"tether serve: {len(keys)} API key(s) configured"
                   + (f", {len(operators)} operator key(s)" if operators else ""), err=True)
    limits = [f"{name}={value}" for name, value in dataclasses.asdict(budgets).items() if value is not None]
    if limits:
        typer.echo(f"tether serve: budgets {', '.join(limits)}", err=True)
    _log_turns()
    if workers == 1:
        config = uvicorn.Config(_app(agents, store, flow_refresh, chosen, folder), host=host, port=port, lifespan="on",
                                log_level="info", access_log=False, http=http_protocol())
        _settle_heap()
        BannerServer(config, banner).run()
        return
    typer.echo(f"tether serve: {banner}; inspector {base_url(host, port)}/inspect", err=True)
    file, sep, attr = app_spec.partition(":")
    os.environ[APP_ENV] = str(Path(file).resolve()) + sep + attr if Path(file).is_file() else app_spec
    os.environ[STORE_ENV] = store
    os.environ[REFRESH_ENV] = str(flow_refresh)
    os.environ[MODEL_ENV] = chosen or ""
    os.environ[WORKFLOWS_ENV] = folder or ""
    if _workers.available():  # each worker takes its share of the connections
        _workers.run_workers(host, port, workers)
        return
    uvicorn.run("tether.cli._serve:worker_app", factory=True, host=host, port=port, workers=workers,
                lifespan="on", log_level="info", access_log=False, http=http_protocol())
