"""Reading the run, evaluating predicates and mappings, checking ``${root.path}`` templates.

Evaluation never raises. A path that reads nothing (an unknown root, an absent key, None, a step
into a non-object) is *missing*, and the predicate rules for missing values are:

======================  ================================================
predicate               with a missing operand
======================  ================================================
eq ne lt lte gt gte     false (missing vs missing too)
in                      false
notIn                   true
exists / notExists      false / true
truthy / falsy          false / true
======================  ================================================

Ordering (lt, lte, gt, gte) compares only number with number or string with string; anything
else is false. A registered condition that raises counts as false.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tether.cel import compile_condition
from tether.dialect.spec import (
    And,
    Compare,
    ConditionCall,
    Exists,
    Literal_,
    Membership,
    Not,
    Operand,
    Or,
    PathSource,
    Predicate,
    TemplateSource,
    Truth,
    ValueSource,
)
from tether.errors import FlowRuntimeError
from tether.templating import Slot, fill

__all__ = ["MISSING", "RECORDING_KINDS", "RESULTS_KEY", "ROOTS", "TEMPLATE", "evaluate", "read", "read_results",
           "render", "resolve_mapping", "split_path"]

ROOTS = ("state", "input", "context", "requestContext", "results", "result")
"""The roots a path may start with (``requestContext`` is ``context``; ``results.<node>`` is what
a node recorded; ``result`` only in ``bind``)."""

RECORDING_KINDS = ("reply", "collect", "action", "decide")
"""The node kinds that record a result under ``results.<node id>``."""

RESULTS_KEY = "results"
"""The run-state key under which the nodes a flow reads via ``results.<id>`` record their result."""

_READS_RESULTS = re.compile(r"(?:\$\{|^|[^A-Za-z0-9_.'\"])\s*results\.([A-Za-z_][A-Za-z0-9_-]*)")

TEMPLATE = re.compile(r"\$\{([^}]*)\}")
"""A ``${root.path}`` placeholder."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

CONDITION_ROOTS = frozenset({"state", "input", "context", "results"})
"""The names a CEL condition of a flow file reads."""
"""What a path reads when there is nothing there."""


def split_path(path: str) -> list[str]:
    """``"${state.a.b}"`` -> ``["state", "a", "b"]``."""
    text = path.strip()
    if text.startswith("${") and text.endswith("}"):
        text = text[2:-1].strip()
    return [part for part in text.split(".")]


def read(root: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` in ``root``, or MISSING."""
    parts = split_path(path)
    if not parts or parts[0] not in ROOTS:
        return MISSING
    head = "context" if parts[0] == "requestContext" else parts[0]
    value: Any = root.get(head, MISSING)
    for part in parts[1:]:
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return MISSING if value is None else value


def read_results(data: Any) -> frozenset[str]:
    """The node ids that ``data`` (a dumped flow spec: every path and template in it) reads via
    ``results.<id>``."""
    if isinstance(data, str):
        return frozenset(m.group(1) for m in _READS_RESULTS.finditer(data.strip()))
    values = data.values() if isinstance(data, Mapping) else data if isinstance(data, list) else ()
    found: frozenset[str] = frozenset()
    for value in values:
        found |= read_results(value)
    return found


def _operand(root: Mapping[str, Any], operand: Operand) -> Any:
    if isinstance(operand, Literal_):
        return MISSING if operand.literal is None else operand.literal
    return read(root, operand.path)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is MISSING or right is MISSING:
        return False
    if op == "eq":
        return bool(left == right)
    if op == "ne":
        return bool(left != right)
    comparable = (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))
    if not comparable:
        return False
    if op == "lt":
        return bool(left < right)
    if op == "lte":
        return bool(left <= right)
    if op == "gt":
        return bool(left > right)
    return bool(left >= right)


Conditions = Mapping[str, Callable[[Mapping[str, Any], Any], Any]]
"""Registered conditions: ``condition(root, arg) -> bool`` (``root`` holds state, input, context)."""


def evaluate(predicate: Predicate, root: Mapping[str, Any], conditions: Conditions | None = None) -> bool:
    """Whether ``predicate`` holds over ``root`` (``{"state", "input", "context"}``). A predicate
    object never raises; a CEL string that cannot be decided (a name that is not set, a type
    mismatch) raises :class:`~tether.errors.FlowRuntimeError` saying why, as in a Python flow."""
    if isinstance(predicate, str):
        try:
            return compile_condition(predicate, CONDITION_ROOTS).holds(root)
        except ValueError as exc:
            raise FlowRuntimeError(str(exc)) from None
    if isinstance(predicate, Compare):
        return _compare(predicate.op, _operand(root, predicate.left), _operand(root, predicate.right))
    if isinstance(predicate, Membership):
        value, options = _operand(root, predicate.value), _operand(root, predicate.set)
        if value is MISSING or not isinstance(options, list):
            return predicate.op == "notIn"
        found = value in options
        return found if predicate.op == "in" else not found
    if isinstance(predicate, Exists):
        present = read(root, predicate.path) is not MISSING
        return present if predicate.op == "exists" else not present
    if isinstance(predicate, Truth):
        truthy = bool(_operand(root, predicate.value))
        return truthy if predicate.op == "truthy" else not truthy
    if isinstance(predicate, And):
        return all(evaluate(arg, root, conditions) for arg in predicate.args)
    if isinstance(predicate, Or):
        return any(evaluate(arg, root, conditions) for arg in predicate.args)
    if isinstance(predicate, Not):
        return not evaluate(predicate.arg, root, conditions)
    if isinstance(predicate, ConditionCall):
        condition = (conditions or {}).get(predicate.name)
        if condition is None:
            return False
        try:
            return bool(condition(root, predicate.arg))
        except Exception:  # evaluation never throws: a failing condition does not hold
            return False
    return False


def render(template: str, root: Mapping[str, Any]) -> str:
    """Fill ``${root.path}`` placeholders (:mod:`tether.templating`): values as natural text
    (:func:`~tether.spoken.spoken`), missing as empty text."""

    def value(slot: Slot) -> Any:
        found = read(root, slot.path)
        return "" if found is MISSING else found

    return fill(template, value)


def resolve_mapping(mapping: Mapping[str, ValueSource | TemplateSource | PathSource],
                    root: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate a mapping: each key from a literal ``value``, a ``template`` or a ``path``
    (a missing path gives None)."""
    resolved: dict[str, Any] = {}
    for key, source in mapping.items():
        if isinstance(source, ValueSource):
            resolved[key] = source.value
        elif isinstance(source, TemplateSource):
            resolved[key] = render(source.template, root)
        else:
            value = read(root, source.path)
            resolved[key] = None if value is MISSING else value
    return resolved
