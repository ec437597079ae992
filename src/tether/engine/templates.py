"""Templates: ``{name}`` placeholders filled from the state (and ``{input.x}``, ``{context.x}``).

A missing value renders as an empty string; objects render as JSON. Nothing is evaluated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tether.flow.resolvers import read_path

__all__ = ["render", "render_value"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")


def render(template: str, state: Mapping[str, Any], input: Any = None,
           context: Mapping[str, Any] | None = None) -> str:
    """Fill ``{name}`` placeholders."""
    root = {**state, "state": state, "input": input, "context": dict(context or {})}

    def fill(match: re.Match[str]) -> str:
        value = read_path(root, match.group(1))
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return str(value)

    return _PLACEHOLDER.sub(fill, template)


def render_value(value: Any, state: Mapping[str, Any], input: Any = None,
                 context: Mapping[str, Any] | None = None) -> Any:
    """Render every string inside ``value`` (dicts and lists walked)."""
    if isinstance(value, str):
        return render(value, state, input, context)
    if isinstance(value, Mapping):
        return {k: render_value(v, state, input, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render_value(v, state, input, context) for v in value]
    return value
