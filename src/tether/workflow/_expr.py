"""Bounded expressions: guards (``requires``), bindings (``${...}``) and router ``when``.

Expressions are CEL (:mod:`tether.cel`, shared with the conditions of flows), parsed and evaluated
by ``cel-python`` (``celpy``) — never Python ``eval``. On top of CEL, a workflow expression is
*bounded* when it is compiled:

- no function or macro calls at all (``size(x)``, ``x.exists(...)``, ``has(x.y)`` are refused);
- no attribute escapes (names starting with ``__``, ``constructor``, ``prototype``);
- top-level names are only ``input`` (the run input), ``defaults`` (the workflow defaults),
  ``nodes`` (``nodes['run-tests']`` for ids that are not CEL identifiers) and node ids;
- ``nodes[...]`` takes a string literal only, so every node an expression reads is known
  statically: the expression *waits* while a producer it reads has not completed, and is an
  error (:class:`~tether.errors.WorkflowExpressionError` with ``skipped_producer``) when one was
  skipped.

A node reads as ``{"status": ..., "output": {"fields": {...}, "summary": ..., "selected": [...]}}``.

Templates (:mod:`tether.templating`): a string value ``"${expr}"`` (the whole string) binds the
expression's typed value; a string with ``${expr}`` inside text interpolates each value's
environment-variable text (``$$`` is a literal ``$``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError
from lark import Token, Tree

from tether.cel import CALLS, MAX_EXPRESSION_LENGTH, bounded_tree, cel_env, from_cel, primary_name
from tether.errors import WorkflowExpressionError
from tether.executors.values import stringify_value
from tether.templating import Slot, parse

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "Expression",
    "Template",
    "Wait",
    "compile_expression",
    "compile_template",
    "from_cel",
]

_ROOT_NAMES = frozenset({"input", "defaults", "nodes"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Wait:
    """The expression cannot be decided yet: ``producer`` has not completed."""

    producer: str


@dataclass(frozen=True)
class Expression:
    """A compiled bounded expression and the names it reads."""

    source: str
    reads_nodes: frozenset[str]
    reads_input: bool
    reads_defaults: bool
    _program: Any

    def evaluate(self, scope: Mapping[str, Any], *, node: str | None = None) -> Any:
        """The value of the expression over ``scope`` (see :func:`scope` in ``_scope``), or a
        :class:`Wait` when a node it reads has not completed.

        ``scope`` holds ``input``, ``defaults`` and ``nodes`` (node id -> status/output view).
        Raises :class:`WorkflowExpressionError` when a node it reads was skipped, or when CEL
        fails (missing key, type mismatch).
        """
        views: Mapping[str, Mapping[str, Any]] = scope["nodes"]
        for producer in sorted(self.reads_nodes):
            status = views[producer]["status"]
            if status == "skipped":
                raise WorkflowExpressionError(
                    f"{self.source!r} reads the output of node {producer!r}, which was skipped",
                    node=node, skipped_producer=producer, code="skipped-producer",
                )
            if status != "complete":
                return Wait(producer)
        nodes = {name: views[name] for name in self.reads_nodes}
        activation: dict[str, Any] = {
            "input": json_to_cel(scope["input"]),
            "defaults": json_to_cel(scope["defaults"]),
            "nodes": json_to_cel(nodes),
        }
        # a bare name for each node an id can name (``ask_name``); ``nodes['ask-name']`` reads the rest
        activation.update({name: json_to_cel(dict(view)) for name, view in nodes.items() if _IDENT.fullmatch(name)})
        try:
            value = self._program.evaluate(activation)
        except CELEvalError as exc:
            raise _eval_error(self.source, exc, node) from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError) as exc:
            raise WorkflowExpressionError(f"{self.source!r} failed: {exc}", node=node) from None
        if isinstance(value, CELEvalError):
            raise _eval_error(self.source, value, node)
        return from_cel(value)


def _eval_error(source: str, exc: CELEvalError, node: str | None) -> WorkflowExpressionError:
    detail = exc.args[0] if exc.args else str(exc)
    return WorkflowExpressionError(f"{source!r} failed: {detail}", node=node)


def _string_literal(tree: Tree[Any]) -> str | None:
    """The text of ``tree`` when it is nothing but a single-quoted or double-quoted literal."""
    tokens = [t for t in tree.scan_values(lambda v: isinstance(v, Token))]
    subtrees = [s.data for s in tree.iter_subtrees()]
    if len(tokens) != 1 or tokens[0].type != "STRING_LIT" or any(d in CALLS for d in subtrees):
        return None
    text = str(tokens[0])
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" and "\\" not in text:
        return text[1:-1]
    return None


def compile_expression(source: str, node_ids: frozenset[str] | set[str]) -> Expression:
    """Parse and bound-check ``source``; ``node_ids`` are the workflow's node ids.

    Raises :class:`ValueError` naming what is refused.
    """
    tree = bounded_tree(source)
    reads: set[str] = set()
    roots: set[str] = set()
    indexed_nodes: set[int] = set()
    for sub in tree.iter_subtrees():
        if sub.data in ("member_dot", "member_index") and primary_name(sub.children[0]) == "nodes":
            indexed_nodes.add(id(sub.children[0]))
            key = str(sub.children[1]) if sub.data == "member_dot" else _string_literal(sub.children[1])
            if key is None:
                raise ValueError(f"{source!r}: nodes[...] takes a string literal node id")
            if key not in node_ids:
                raise ValueError(f"{source!r}: unknown node {key!r}")
            reads.add(key)
        if sub.data == "member" and (name := primary_name(sub)) is not None:
            roots.add(name)
    for sub in tree.iter_subtrees():
        if sub.data == "member" and primary_name(sub) == "nodes" and id(sub) not in indexed_nodes:
            raise ValueError(f"{source!r}: 'nodes' must be indexed with a node id")
    for name in roots:
        if name in _ROOT_NAMES:
            continue
        if name not in node_ids:
            raise ValueError(
                f"{source!r}: unknown name {name!r} (expressions read input, defaults, nodes and node ids)"
            )
        reads.add(name)
    return Expression(
        source=source,
        reads_nodes=frozenset(reads),
        reads_input="input" in roots,
        reads_defaults="defaults" in roots,
        _program=cel_env().program(tree),
    )


@dataclass(frozen=True)
class Template:
    """A bound value: a literal, or ``${expr}`` (typed value), or text with ``${expr}`` inside."""

    literal: Any
    parts: tuple[str | Expression, ...] | None

    @property
    def expressions(self) -> tuple[Expression, ...]:
        """The expressions the template evaluates."""
        return tuple(p for p in self.parts or () if isinstance(p, Expression))

    def resolve(self, scope: Mapping[str, Any], *, node: str | None = None,
                text: Callable[[Any], str] = stringify_value) -> Any:
        """The bound value, or a :class:`Wait` when a producer has not completed. ``text`` turns a
        value inside text into text: a command's environment keeps seed 001's canonical form;
        text a person or a model reads passes :func:`tether.spoken.spoken`."""
        if self.parts is None:
            return self.literal
        if len(self.parts) == 1 and isinstance(self.parts[0], Expression):
            return self.parts[0].evaluate(scope, node=node)
        pieces: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = part.evaluate(scope, node=node)
            if isinstance(value, Wait):
                return value
            pieces.append(text(value))
        return "".join(pieces)


def compile_template(value: Any, node_ids: frozenset[str] | set[str]) -> Template:
    """Compile a bound value; non-strings and strings without ``${`` are literals. The syntax is
    :mod:`tether.templating` (``$$`` is a literal ``$``)."""
    if not isinstance(value, str) or "${" not in value:
        return Template(literal=value, parts=None)
    parts: list[str | Expression] = []
    for piece in parse(value):
        if isinstance(piece, Slot):
            parts.append(compile_expression(piece.path, node_ids))
        elif parts and isinstance(parts[-1], str):
            parts[-1] += piece
        else:
            parts.append(piece)
    if any(isinstance(p, str) and "${" in p for p in parts):
        raise ValueError(f"unterminated ${{...}} in {value!r}")
    return Template(literal=None, parts=tuple(parts))
