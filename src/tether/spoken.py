"""How a value reads in text a person or a model reads: one renderer for every template.

Python reply texts (``{toppings}``), flow files (``${state.toppings}``), workflow instructions
and the facts a speak call is given all render values here, so a customer reads "ham and olives",
never ``["ham", "olives"]``. Environment variables of workflow commands are not text for a person:
they keep seed 001's canonical form (:func:`tether.executors.values.stringify_value`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

__all__ = ["spoken"]


def spoken(value: Any) -> str:
    """``value`` as natural text: a list as "a, b and c", a mapping as "key: value, ...", text as
    itself, anything else as ``str``. Nested values are rendered the same way."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ", ".join(f"{key}: {spoken(item)}" for key, item in value.items())
    if isinstance(value, list | tuple | Set):
        items = [spoken(item) for item in (sorted(value, key=str) if isinstance(value, Set) else value)]
        if len(items) <= 1:
            return "".join(items)
        return f"{', '.join(items[:-1])} and {items[-1]}"
    return str(value)
