"""``tether serve``: the HTTP API of an app on uvicorn, with the wake scheduler.

With no API keys (``TETHER_API_KEYS`` unset) the API is open, so the server binds 127.0.0.1 only
and says so; binding another address needs keys.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tether.cli._inspect import load_or_exit
from tether.cli._output import fail
from tether.cli._sessions import DEFAULT_DB

__all__ = ["serve"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")

APP_HELP = "path/to/file.py[:attr] or package.module:attr naming an Agent (or a list of Agents)"


def serve(
    app_spec: str = typer.Argument(..., metavar="APP", help=APP_HELP),
    store: str = typer.Option(DEFAULT_DB, "--store", help="the session store: a SQLite path or a store URL"),
    host: str = typer.Option("127.0.0.1", "--host", help="the address to bind (non-loopback needs API keys)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="the port to bind"),
) -> None:
    """Serve the app's agents over HTTP (routes under /v1, OpenAPI at /openapi.json).

    API keys come from TETHER_API_KEYS ("tenant:key,tenant:key"); without any the API is open
    and binds 127.0.0.1 only.
    """
    try:
        import uvicorn

        from tether.runtime import Runtime
        from tether.server import create_app, keys_from_env
        from tether.stores import open_store
    except ImportError as exc:
        fail(f"tether serve needs the server extra (pip install 'tether[server]'): {exc}")
    try:
        keys = keys_from_env()
    except ValueError as exc:
        fail(str(exc))
    if not keys and host not in LOOPBACK:
        fail(f"refusing to bind {host} with no API keys (set TETHER_API_KEYS, or bind 127.0.0.1)")
    loaded = load_or_exit(app_spec)
    if "://" not in store and store != "memory:":
        Path(store).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store = str(Path(store).expanduser())
    try:
        runtime = Runtime(list(loaded.agents), store=open_store(store))
    except Exception as exc:
        fail(f"cannot serve {app_spec}: {exc}")
    app = create_app(runtime, api_keys=keys)
    agents = ", ".join(agent.id for agent in loaded.agents)
    typer.echo(f"tether serve: agents {agents}; store {store}", err=True)
    if not keys:
        typer.echo("tether serve: no API keys configured: the API is OPEN (binding 127.0.0.1 only)", err=True)
    else:
        typer.echo(f"tether serve: {len(keys)} API key(s) configured", err=True)
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", log_level="info")
    uvicorn.Server(config).run()
