"""Pydantic validation errors as :class:`~tether.errors.DefinitionIssue` s with dot paths.

Shared by the strict loaders (workflow files, flow files). The top level renders ``<root>``; a
discriminated union's tag, which pydantic puts in the error location, is left out of the path::

    <root>: Unrecognized key: "whoops"
    nodes.0.max_turn: Unrecognized key: "max_turn"
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from tether.errors import DefinitionIssue

__all__ = ["dot_path", "error_message", "validation_issues"]

TagTest = Callable[[Sequence[int | str], int], bool]
"""``is_tag(loc, index)``: whether ``loc[index]`` is a union member pydantic tried, not a key."""


def dot_path(loc: Sequence[int | str], is_tag: TagTest) -> str:
    """``("nodes", 0, "collect", "ask")`` -> ``"nodes.0.ask"`` when ``"collect"`` is a tag."""
    parts = [str(part) for index, part in enumerate(loc) if not (isinstance(part, str) and is_tag(loc, index))]
    return ".".join(parts) or "<root>"


def error_message(error: ErrorDetails, is_tag: TagTest) -> tuple[str, str]:
    """``(path, message)`` of one pydantic error; an unknown key is reported on its parent."""
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return dot_path(loc[:-1], is_tag), f'Unrecognized key: "{loc[-1]}"'
    if kind == "union_tag_invalid":
        expected = str((error.get("ctx") or {}).get("expected_tags", "")).replace(", ", " | ")
        return dot_path(loc, is_tag), f"Invalid discriminator value. Expected {expected}"
    if kind == "union_tag_not_found":
        discriminator = (error.get("ctx") or {}).get("discriminator", "'kind'")
        return dot_path(loc, is_tag), f"Missing discriminator key {discriminator}".replace("'", '"')
    if kind == "missing":
        return dot_path(loc, is_tag), "Required"
    return dot_path(loc, is_tag), error["msg"]


def validation_issues(exc: ValidationError, *, prefix: str, is_tag: TagTest, flow: str | None = None
                      ) -> list[DefinitionIssue]:
    """The issues of ``exc``: code ``<prefix>-<pydantic error type>``, a dot path, a message."""
    issues = []
    for error in exc.errors():
        path, message = error_message(error, is_tag)
        issues.append(DefinitionIssue(f"{prefix}-{error['type'].replace('_', '-')}", message, flow=flow, path=path))
    return issues
