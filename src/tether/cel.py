"""CEL, the one expression language for data: conditions of Python flows and flow files, and
workflow guards, bindings and routes.

Expressions are parsed and evaluated by ``cel-python`` (``celpy``), never Python ``eval``, and are
*bounded* when compiled: no function or macro calls (``size(x)``, ``x.exists(...)``), no
leading-dot names, no attribute escapes (names starting with ``__``, ``constructor``,
``prototype``), and only the top-level names the caller allows. The same checks give the same
messages wherever an expression is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # celpy (and its Lark) are imported at the first expression, not with tether
    import celpy
    from lark import Tree

__all__ = ["MAX_EXPRESSION_LENGTH", "CALLS", "Condition", "bounded_tree", "cel_env", "compile_condition", "from_cel",
           "primary_name", "to_cel"]

MAX_EXPRESSION_LENGTH = 2000
CALLS = frozenset({"ident_arg", "member_dot_arg", "dot_ident_arg"})
"""Parse-tree nodes of a function or macro call."""
_ESCAPES = frozenset({"constructor", "prototype"})


def to_cel(value: Any) -> Any:
    """A JSON-like value as the CEL value an expression reads."""
    from celpy.adapter import json_to_cel

    return json_to_cel(value)


@lru_cache(maxsize=1)
def cel_env() -> celpy.Environment:
    """The one CEL environment, made at the first expression: building its parser takes a few
    hundred milliseconds, which ``import tether`` (and every CLI command) need not pay; importing
    celpy itself takes tens more, so that waits too."""
    import celpy

    return celpy.Environment()


def bounded_tree(source: str) -> Tree[Any]:
    """The parse tree of ``source``, checked to be bounded; raises :class:`ValueError` naming what
    is refused."""
    from celpy import celparser
    from lark import Token

    if len(source) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree: Tree[Any] = cel_env().compile(source)
    except celparser.CELParseError as exc:
        raise ValueError(f"invalid expression {source!r}: {str(exc).splitlines()[0]}") from None
    for sub in tree.iter_subtrees():
        if sub.data in CALLS:
            raise ValueError(f"{source!r}: function calls are not allowed in expressions")
        if sub.data == "dot_ident":
            raise ValueError(f"{source!r}: leading-dot names are not allowed")
        for child in sub.children:
            if isinstance(child, Token) and child.type == "IDENT" and (
                child.startswith("__") or str(child) in _ESCAPES
            ):
                raise ValueError(f"{source!r}: attribute {str(child)!r} is not allowed")
    return tree


def primary_name(member: Any) -> str | None:
    """The identifier of ``member`` when it is a bare name (``member -> primary -> ident``)."""
    from lark import Tree

    if not isinstance(member, Tree) or member.data != "member" or len(member.children) != 1:
        return None
    primary = member.children[0]
    if not isinstance(primary, Tree) or primary.data != "primary" or len(primary.children) != 1:
        return None
    ident = primary.children[0]
    if isinstance(ident, Tree) and ident.data == "ident":
        return str(ident.children[0])
    return None


def from_cel(value: Any) -> Any:
    """A CEL value as plain JSON-compatible Python."""
    from celpy import celtypes

    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.MapType):
        return {str(from_cel(k)): from_cel(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [from_cel(v) for v in value]
    if value is None or isinstance(value, celtypes.NullType):
        return None
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


@dataclass(frozen=True)
class Condition:
    """A compiled condition: a bounded CEL expression over the names the caller allows."""

    source: str
    roots: frozenset[str]
    _program: Any

    def holds(self, names: Mapping[str, Any]) -> bool:
        """Whether the condition is true over ``names`` (plain JSON-like values). A missing key,
        a type mismatch or a non-boolean result raises :class:`ValueError` saying so."""
        from celpy.adapter import json_to_cel
        from celpy.evaluation import CELEvalError

        activation = {name: json_to_cel(value) for name, value in names.items() if name in self.roots}
        try:
            value = self._program.evaluate(activation)
        except CELEvalError as exc:
            raise ValueError(f"{self.source!r} failed: {exc.args[0] if exc.args else exc}") from None
        except (TypeError, KeyError, ZeroDivisionError) as exc:
            raise ValueError(f"{self.source!r} failed: {exc}") from None
        if isinstance(value, CELEvalError):
            raise ValueError(f"{self.source!r} failed: {value.args[0] if value.args else value}")
        result = from_cel(value)
        if not isinstance(result, bool):
            raise ValueError(f"{self.source!r} is not a condition: it gives {result!r}, not true or false")
        return result


@lru_cache(maxsize=1024)
def _compiled(source: str, allowed: frozenset[str]) -> Condition:
    tree = bounded_tree(source)
    roots = {name for sub in tree.iter_subtrees() if sub.data == "member" and (name := primary_name(sub))}
    unknown = sorted(roots - allowed)
    if unknown:
        raise ValueError(f"{source!r}: unknown name {unknown[0]!r} (a condition reads {', '.join(sorted(allowed))})")
    return Condition(source=source, roots=frozenset(roots), _program=cel_env().program(tree))


def compile_condition(source: str, allowed: Iterable[str]) -> Condition:
    """Compile ``source`` as a condition reading only the top-level names ``allowed``; raises
    :class:`ValueError` naming what is wrong. Compiled conditions are cached by source."""
    return _compiled(source, frozenset(allowed))
