"""Shared output helpers: consoles, one-line errors and definition-issue lines."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from tether.errors import DefinitionIssue

__all__ = ["CliError", "command", "fail", "format_issue", "one_line", "stdout_console"]


class CliError(Exception):
    """A user-facing error: printed as one ``error: ...`` line on stderr, then exit ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def one_line(text: str) -> str:
    """``text`` folded onto one line (newlines and runs of blanks become single spaces)."""
    return " ".join(text.split())


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` (one line) on stderr and exit with ``code``."""
    typer.echo(f"error: {one_line(message)}", err=True)
    raise typer.Exit(code)


def format_issue(issue: DefinitionIssue) -> str:
    """One definition problem on one line: ``error [code] flow 'f' node 'n': message`` (a syntax
    error's message starts with its ``file:line:column`` already)."""
    if issue.code.endswith("-syntax"):
        return f"error [{issue.code}] {one_line(issue.message)}"
    where: list[str] = []
    if issue.flow:
        where.append(f"flow {issue.flow!r}")
    if issue.node:
        where.append(f"node {issue.node!r}")
    if issue.path and not issue.node:
        where.append(f"at {issue.path}")
    location = " ".join(where) or "agent"
    hint = f" ({issue.hint})" if issue.hint else ""
    return f"{issue.severity} [{issue.code}] {location}: {one_line(issue.message)}{hint}"


def stdout_console() -> Console:
    """The console for normal output: colours only on a terminal, never wraps long lines."""
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = max(console.width, 200)
    return console


def command(*words: str) -> str:
    """A ``tether`` command line to print as a hint, quoted for a shell.

    It starts the way this process was started when that was the ``tether`` script (say
    ``.venv/bin/tether``, so the hint works when pasted into the same shell), else with ``tether``.
    """
    program = sys.argv[0] if sys.argv and Path(sys.argv[0]).name == "tether" else "tether"
    return " ".join(shlex.quote(word) for word in (program, *words))
