"""The ``tether`` command."""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """Entry point of the ``tether`` command."""
    from tether.cli._app import app

    app()
