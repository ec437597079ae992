"""Reading node options when a node is defined: list options, tool lists, model classes, and
the name a callable is shown under (shared by the node kinds in :mod:`tether.flow.nodes`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from pydantic import BaseModel

from tether.errors import DefinitionIssue, FlowDefinitionError

__all__ = ["callable_name", "is_model_class", "listed", "tool_names"]


def callable_name(fn: Any) -> str | None:
    """How a flow's digest describes ``fn``: its qualified name, never the module it was imported
    as (an app file is imported under a name of the loader's choosing, and the same code copied to
    another folder or imported as a package module is the same flow). A callable built from data
    (a flow file's predicate or route, which has a ``digest_key``) is described by that data."""
    if fn is None:
        return None
    if not callable(fn):
        return repr(fn)
    key = getattr(fn, "digest_key", None)
    if callable(key):  # tether's own classes: flow-file digests have always named their module
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}:{key()}"
    return str(getattr(fn, "__qualname__", type(fn).__qualname__))


def tool_names(node_id: str, uses: Any) -> tuple[str, ...]:
    """``uses`` as a tuple of tool names; a bare string or a non-string entry is refused (a string
    would otherwise be split into letters)."""
    if isinstance(uses, str) or not isinstance(uses, list | tuple) or \
            not all(isinstance(name, str) and name for name in uses):
        raise FlowDefinitionError(DefinitionIssue(
            "invalid-option", f"uses must be a list of tool names, got {uses!r}", node=node_id, path="uses"))
    return tuple(uses)


def is_model_class(value: Any) -> TypeGuard[type[BaseModel]]:
    """True for a pydantic model class (what ``schema``/``output_schema`` options take)."""
    return isinstance(value, type) and issubclass(value, BaseModel)


def listed(node_id: str, option: str, value: Any) -> tuple[Any, ...]:
    """A list option as a tuple. One string would be read letter by letter, and a value that is not
    a list cannot be read at all: both are refused when the node is defined."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        hint = f" ([{value!r}])" if isinstance(value, str) else ""
        raise FlowDefinitionError(DefinitionIssue(
            "invalid-option", f"{option} must be a list{hint}, got {value!r}", node=node_id, path=option))
    return tuple(value)
