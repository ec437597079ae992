"""A flow-file predicate as a short text (``topic == order``), for the label of a route's edge in
a drawn graph."""

from __future__ import annotations

import json
import re
from typing import Any

from tether.dialect.spec import And, Compare, ConditionCall, Exists, Literal_, Membership, Not, Or, Path, Truth

__all__ = ["predicate_text"]

_OPS = {"eq": "==", "ne": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_LIMIT = 48
_STATE = re.compile(r"(?<![\w.'\"])state\.")


def predicate_text(predicate: Any) -> str:
    """``predicate`` as one short line (at most 48 characters, cut with an ellipsis)."""
    text = _text(predicate)
    return text if len(text) <= _LIMIT else text[: _LIMIT - 1] + "…"


def _operand(operand: Any) -> str:
    if isinstance(operand, Path):
        path = operand.path.removeprefix("${").removesuffix("}")
        return path.removeprefix("state.")
    if isinstance(operand, Literal_):
        value = operand.literal
        return value if isinstance(value, str) else json.dumps(value)
    return str(operand)


def _text(predicate: Any, nested: bool = False) -> str:
    if isinstance(predicate, str):  # a CEL condition reads as itself, its state. prefixes left out
        return _STATE.sub("", predicate)
    if isinstance(predicate, Compare):
        return f"{_operand(predicate.left)} {_OPS[predicate.op]} {_operand(predicate.right)}"
    if isinstance(predicate, Membership):
        return f"{_operand(predicate.value)} {'in' if predicate.op == 'in' else 'not in'} {_operand(predicate.set)}"
    if isinstance(predicate, Exists):
        return f"{predicate.path.removeprefix('state.')} {'is set' if predicate.op == 'exists' else 'is not set'}"
    if isinstance(predicate, Truth):
        return _operand(predicate.value) if predicate.op == "truthy" else f"not {_operand(predicate.value)}"
    if isinstance(predicate, And | Or):
        joined = f" {predicate.op} ".join(_text(arg, nested=True) for arg in predicate.args)
        return f"({joined})" if nested and len(predicate.args) > 1 else joined
    if isinstance(predicate, Not):
        return f"not {_text(predicate.arg, nested=True)}"
    if isinstance(predicate, ConditionCall):
        return predicate.name if predicate.arg is None else f"{predicate.name}({json.dumps(predicate.arg)})"
    return "when"
