"""Older forms in a flow file: where a predicate object stands, and the CEL text that says the
same (``tether check`` lists them, so a file can move to the one expression language)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from tether.dialect.spec import And, Compare, ConditionCall, Exists, Literal_, Membership, Not, Or, Path, Truth

__all__ = ["cel_text", "old_forms"]

_PREDICATES = (Compare, Membership, Exists, Truth, And, Or, Not)

_OPS = {"eq": "==", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def _path(raw: str) -> str:
    text = raw.strip()
    if text.startswith("${") and text.endswith("}"):
        text = text[2:-1].strip()
    return "context" + text[len("requestContext"):] if text.startswith("requestContext") else text


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if value is None:
        return "null"
    return json.dumps(value)


def _operand(operand: Path | Literal_) -> str:
    return _path(operand.path) if isinstance(operand, Path) else _literal(operand.literal)


def cel_text(predicate: Any) -> str | None:
    """The CEL condition that says what ``predicate`` says (None for a registered condition,
    which has no CEL form). A path that reads nothing makes the object false, where CEL raises:
    the text guards nothing, so a hint, not a translation to apply blindly."""
    if isinstance(predicate, Compare):
        return f"{_operand(predicate.left)} {_OPS[predicate.op]} {_operand(predicate.right)}"
    if isinstance(predicate, Membership):
        text = f"{_operand(predicate.value)} in {_operand(predicate.set)}"
        return text if predicate.op == "in" else f"!({text})"
    if isinstance(predicate, Exists):
        parent, _, key = _path(predicate.path).rpartition(".")
        text = f"{_literal(key)} in {parent}" if parent else _literal(True)
        return text if predicate.op == "exists" else f"!({text})"
    if isinstance(predicate, Truth):
        value = _operand(predicate.value)
        return value if predicate.op == "truthy" else f"!{value}"
    if isinstance(predicate, And | Or):
        parts = [cel_text(arg) for arg in predicate.args]
        if any(p is None for p in parts):
            return None
        return f" {'&&' if isinstance(predicate, And) else '||'} ".join(f"({p})" if len(parts) > 1 else str(p)
                                                                        for p in parts)
    if isinstance(predicate, Not):
        inner = cel_text(predicate.arg)
        return None if inner is None else f"!({inner})"
    assert isinstance(predicate, ConditionCall)
    return None


def old_forms(spec: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(path, CEL text)`` for every predicate object in a parsed flow or agent file (a registered
    condition call, which has no CEL form, is left out)."""
    if isinstance(spec, _PREDICATES):
        if (text := cel_text(spec)) is not None:
            yield path, text
    elif isinstance(spec, BaseModel):
        for name, field in type(spec).model_fields.items():
            yield from old_forms(getattr(spec, name), f"{path}.{field.alias or name}".lstrip("."))
    elif isinstance(spec, list | tuple):
        for index, item in enumerate(spec):
            yield from old_forms(item, f"{path}.{index}")
    elif isinstance(spec, dict):
        for key, item in spec.items():
            yield from old_forms(item, f"{path}.{key}")
