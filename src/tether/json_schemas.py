"""Walking a JSON Schema: the keywords that hold subschemas, and a copy with keys left out.

Shared by the prompt builders (a schema without the titles pydantic derives from names) and the
model adapters (a strict schema shown in fewer tokens)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SCHEMA_MANY", "SCHEMA_MAPS", "SCHEMA_ONE", "subschemas", "without"]

SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
"""Keywords whose value maps names to subschemas."""
SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
"""Keywords whose value is one subschema."""
SCHEMA_MANY = ("anyOf", "allOf", "oneOf", "prefixItems")
"""Keywords whose value is a list of subschemas."""

Drop = Callable[[Mapping[str, Any], str, Any, "str | None"], bool]
"""``drop(node, key, value, name)``: leave ``key`` of the subschema ``node`` out (``name``: the
name ``node`` is listed under in a keyword of :data:`SCHEMA_MAPS`, else None)."""


def subschemas(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The subschemas ``node`` holds directly."""
    found: list[Mapping[str, Any]] = []
    for key, value in node.items():
        if key in SCHEMA_MAPS and isinstance(value, Mapping):
            found += [v for v in value.values() if isinstance(v, Mapping)]
        elif key in SCHEMA_ONE and isinstance(value, Mapping):
            found.append(value)
        elif key in SCHEMA_MANY and isinstance(value, list):
            found += [v for v in value if isinstance(v, Mapping)]
    return found


def without(node: Mapping[str, Any], drop: Drop, name: str | None = None) -> dict[str, Any]:
    """A copy of the schema ``node`` and of every subschema in it, without the keys ``drop`` names."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if drop(node, key, value, name):
            continue
        if key in SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: without(v, drop, k) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif key in SCHEMA_ONE and isinstance(value, Mapping):
            out[key] = without(value, drop)
        elif key in SCHEMA_MANY and isinstance(value, list):
            out[key] = [without(v, drop) if isinstance(v, Mapping) else v for v in value]
        else:
            out[key] = value
    return out
