"""The typer application behind ``tether``."""

from __future__ import annotations

import typer

app = typer.Typer(name="tether", help="Deterministic, durable LLM agents.", no_args_is_help=True)


@app.command()
def version() -> None:
    """Print tether's version."""
    from importlib.metadata import version as _version

    typer.echo(_version("tether"))
