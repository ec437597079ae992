"""Where a YAML or JSON document fails to parse, said as ``file:line:column: what is wrong``."""

from __future__ import annotations

import json

import yaml

__all__ = ["syntax_error"]


def syntax_error(exc: json.JSONDecodeError | yaml.YAMLError, source: str | None, fmt: str = "YAML") -> str:
    """``source:line:column: not valid FMT: problem`` for a parse error (1-based line and column;
    ``line L, column C`` when there is no ``source``), naming what was being read when the
    parser says (``while parsing a flow mapping at line 5``)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{_where(source, exc.lineno, exc.colno)}not valid {fmt}: {exc.msg}"
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return f"{source + ': ' if source else ''}not valid {fmt}: {' '.join(str(exc).split())}"
    mark = exc.problem_mark
    text = f"{_where(source, mark.line + 1, mark.column + 1)}not valid {fmt}: {exc.problem}"
    if exc.context and exc.context_mark is not None:
        text += f" ({exc.context} at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
    return text


def _where(source: str | None, line: int, column: int) -> str:
    return f"{source}:{line}:{column}: " if source else f"line {line}, column {column}: "
