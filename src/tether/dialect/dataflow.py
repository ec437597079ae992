"""The state typing pass of flow-file validation: what each node may read.

The state is typed from the start node forward, breadth first over the declared transitions: a
collect adds its fields (and its ``assign`` targets), an action its ``bind``, a decide its
schema's properties, a goto its ``data``. A node's ``results.<id>`` root may name any node that
runs before it on some path from the start and records a result (reply, collect, action,
decide). A registered action (``do``) may set anything, so the state after one is open.

A predicate, template or mapping that reads what no path can have set is an error whose hint, and
whose repair action, list the legal sources at that node.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from tether.cel import compile_condition
from tether.dialect.checker import Checker
from tether.dialect.models import schema_properties
from tether.dialect.parse import did_you_mean
from tether.dialect.spec import (
    ActionSpec,
    And,
    CollectSpec,
    Compare,
    ConditionCall,
    DecideSpec,
    Exists,
    FlowSpec,
    GotoRef,
    Literal_,
    Membership,
    NodeSpec,
    Not,
    Or,
    Path,
    PathSource,
    Predicate,
    RouterSpec,
    TemplateSource,
    TransitionRef,
    Truth,
    WaitSpec,
)
from tether.dialect.values import CONDITION_ROOTS, RECORDING_KINDS, ROOTS, split_path
from tether.errors import RepairOperation
from tether.flow.placeholders import BUILT_IN
from tether.templating import Slot, parse

__all__ = ["Scope", "check_mapping", "check_path", "check_predicate", "check_template", "edges", "falls_through",
           "known_state", "produced", "refs", "target"]

Read = Literal["mapping", "predicate", "template"]
_OPERATION: dict[str, RepairOperation] = {"mapping": "set-mapping-source", "predicate": "set-predicate",
                                          "template": "set-template"}
_BARE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")


# --------------------------------------------------------------------------- graph


def refs(node: NodeSpec) -> Iterator[tuple[str, TransitionRef]]:
    """The node's transition refs, as ``(option path, ref)``."""
    for index, route in enumerate(getattr(node, "routes", [])):
        yield f"routes.{index}.to", route.to
    for index, branch in enumerate(getattr(node, "branches", [])):
        yield f"branches.{index}.then", branch.then
    for option in ("next", "otherwise", "then", "else_", "on_fail"):
        ref = getattr(node, option, None)
        if ref is not None:
            yield option.rstrip("_"), ref


def falls_through(node: NodeSpec) -> bool:
    """Whether the node goes on to the next node in order when its ``next``/``then`` is absent."""
    if isinstance(node, CollectSpec | ActionSpec):
        return node.next is None
    if isinstance(node, RouterSpec | WaitSpec):
        return node.then is None
    return False


def target(ref: TransitionRef) -> str | None:
    """The node id ``ref`` goes to (None: it leaves the node list, or stays)."""
    if isinstance(ref, str):
        return None if ref in ("stay", "next") else ref
    return ref.goto if isinstance(ref, GotoRef) else None


def edges(spec: FlowSpec) -> dict[str, set[str]]:
    """Every node's successors by its declared transitions (and falling through in order)."""
    ids = [n.id for n in spec.nodes]
    out: dict[str, set[str]] = {i: set() for i in ids}
    for index, node in enumerate(spec.nodes):
        follows = index + 1 < len(ids)
        for _, ref in refs(node):
            goes = target(ref)
            if goes in out:
                out[node.id].add(goes)
            if ref == "next" and follows:
                out[node.id].add(ids[index + 1])
        if falls_through(node) and follows:
            out[node.id].add(ids[index + 1])
    return out


def produced(node: NodeSpec) -> set[str]:
    """State keys the node writes when it moves on."""
    keys: set[str] = set()
    if isinstance(node, CollectSpec):
        keys |= set(schema_properties(node.schema_ or {})) | set(node.fields)
        keys |= {split_path(dest)[-1] for dest in node.assign or {}}
    elif isinstance(node, DecideSpec):
        keys |= set(schema_properties(node.schema_ or {})) | ({"choice"} if node.choices else set())
    elif isinstance(node, ActionSpec):
        if isinstance(node.bind, str):
            keys.add(split_path(node.bind)[-1])
        elif node.bind is not None:
            keys |= set(node.bind)
    for _, ref in refs(node):
        if isinstance(ref, GotoRef) and ref.data:
            keys |= set(ref.data)
    return keys


@dataclass
class Known:
    """Per node: the state keys some path from the start may have set, whether code may have set
    anything, and the nodes that may have run before it."""

    keys: dict[str, set[str]]
    open: dict[str, bool]
    before: dict[str, set[str]]


def known_state(spec: FlowSpec) -> Known:
    """The breadth-first fold from the start (see the module notes)."""
    succ = edges(spec)
    by_id = {n.id: n for n in spec.nodes}
    start = spec.start if spec.start in by_id else spec.nodes[0].id
    known = Known({start: set()}, {start: False}, {start: set()})
    queue = [start]
    while queue:
        current = queue.pop(0)
        node = by_id[current]
        out = known.keys[current] | produced(node)
        opened = known.open[current] or (isinstance(node, ActionSpec) and node.do is not None)
        ran = known.before[current] | {current}
        for goes in succ[current]:
            snapshot = (set(known.keys.get(goes, set())), known.open.get(goes), set(known.before.get(goes, set())))
            known.keys[goes] = known.keys.get(goes, set()) | out
            known.open[goes] = bool(known.open.get(goes)) or opened
            known.before[goes] = known.before.get(goes, set()) | ran
            if (known.keys[goes], known.open[goes], known.before[goes]) != snapshot:
                queue.append(goes)
    return known


# --------------------------------------------------------------------------- reads


@dataclass
class Scope:
    """What a node may read: ``keys`` in the state and the nodes whose ``results`` it may read
    (None: anything, code may have set it)."""

    keys: set[str] | None
    agent_fields: set[str]
    results: set[str] | None = None
    nodes: dict[str, NodeSpec] | None = None

    def legal(self) -> list[str]:
        keys = sorted((self.keys or set()) | self.agent_fields)
        results = sorted(self.results or set())
        return [f"state.{k}" for k in keys] + [f"results.{r}" for r in results] + ["input.*", "context.*"]


def _predicate_paths(predicate: Predicate, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(predicate, Compare):
        for side in ("left", "right"):
            operand = getattr(predicate, side)
            if isinstance(operand, Path):
                yield f"{path}.{side}.path", operand.path
    elif isinstance(predicate, Membership):
        for side in ("value", "set"):
            operand = getattr(predicate, side)
            if isinstance(operand, Path):
                yield f"{path}.{side}.path", operand.path
    elif isinstance(predicate, Exists):
        yield f"{path}.path", predicate.path
    elif isinstance(predicate, Truth) and isinstance(predicate.value, Path):
        yield f"{path}.value.path", predicate.value.path
    elif isinstance(predicate, And | Or):
        for index, arg in enumerate(predicate.args):
            yield from _predicate_paths(arg, f"{path}.args.{index}")
    elif isinstance(predicate, Not):
        yield from _predicate_paths(predicate.arg, f"{path}.arg")


def _conditions(predicate: Predicate, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(predicate, ConditionCall):
        yield f"{path}.name", predicate.name
    elif isinstance(predicate, And | Or):
        for index, arg in enumerate(predicate.args):
            yield from _conditions(arg, f"{path}.args.{index}")
    elif isinstance(predicate, Not):
        yield from _conditions(predicate.arg, f"{path}.arg")


def _check_results(check: Checker, raw: str, parts: list[str], where: str, scope: Scope, node: str | None,
                   read: Read) -> None:
    def add(message: str, hint: str) -> None:
        check.add("unknown-source", message, where, node=node, hint=hint, repair=_OPERATION[read],
                  legal=scope.legal())

    legal = f"legal sources here: {', '.join(scope.legal())}"
    if len(parts) < 2 or not parts[1]:
        add(f"path {raw!r} names no node", f"write results.<node id>; {legal}")
        return
    nodes = scope.nodes if scope.nodes is not None else {n.id: n for n in check.spec.nodes}
    named = nodes.get(parts[1])
    if named is None:
        near = did_you_mean(parts[1], nodes)
        add(f"results.{parts[1]}: the flow has no node {parts[1]!r}", f"{near + ' ' if near else ''}{legal}")
    elif named.kind not in RECORDING_KINDS:
        add(f"results.{parts[1]}: a {named.kind} node records no result",
            f"read the state the node's predecessors set; {legal}")
    elif scope.results is not None and parts[1] not in scope.results:
        add(f"results.{parts[1]}: node {parts[1]!r} does not run before this node on any path from the start",
            legal)


def check_path(check: Checker, raw: str, where: str, scope: Scope, node: str | None, read: Read,
               extra_roots: tuple[str, ...] = ()) -> None:
    """``raw`` (``state.x``, ``results.n.y``, ...) is readable here."""
    parts = split_path(raw)
    root = parts[0] if parts else ""
    roots = [r for r in ROOTS if r != "result"] + list(extra_roots)
    operation = _OPERATION[read]
    if root not in roots:
        check.add("unknown-root", f"path {raw!r} starts with {root!r}, not a root", where, node=node,
                  hint=did_you_mean(root, roots) or f"roots: {', '.join(roots)}", repair=operation,
                  legal=scope.legal())
        return
    if root == "results":
        _check_results(check, raw, parts, where, scope, node, read)
        return
    if root != "state" or scope.keys is None:
        return
    if len(parts) < 2 or not parts[1]:
        check.add("unknown-source", f"path {raw!r} names no state key", where, node=node,
                  hint=f"legal sources here: {', '.join(scope.legal())}", repair=operation, legal=scope.legal())
        return
    key = parts[1]
    if key not in scope.keys and key not in scope.agent_fields:
        near = did_you_mean(key, (scope.keys or set()) | scope.agent_fields)
        check.add("unknown-source", f"state.{key} is not set on any path from the start to this node", where,
                  node=node, hint=f"{near + ' ' if near else ''}legal sources here: {', '.join(scope.legal())}",
                  repair=operation, legal=scope.legal())


def check_template(check: Checker, text: str | None, where: str, scope: Scope, node: str | None,
                   extra_roots: tuple[str, ...] = (), *, node_text: bool = True) -> None:
    """``text``'s ``${...}`` placeholders are well formed and readable here (a ``node_text``, one
    the engine renders, may read ``${today}``: the turn's date)."""
    if text is None:
        return
    pieces = parse(text)
    if any(isinstance(piece, str) and "${" in piece for piece in pieces):
        check.add("template-syntax", "a '${' is never closed with '}'", where, node=node,
                  hint="write ${state.name}", repair="set-template", legal=scope.legal())
    for match in _BARE.finditer(text):
        check.add("bare-placeholder", f"{{{match.group(1)}}} is not a placeholder in a flow file", where, node=node,
                  hint=f"write ${{state.{match.group(1)}}}", repair="set-template", legal=scope.legal())
    for piece in pieces:
        if isinstance(piece, Slot) and not (node_text and piece.path in BUILT_IN):
            check_path(check, piece.path, where, scope, node, "template", extra_roots)


def check_mapping(check: Checker, mapping: object, where: str, scope: Scope, node: str | None,
                  extra_roots: tuple[str, ...] = ()) -> None:
    """Every ``path`` and ``template`` source of ``mapping`` is readable here."""
    for key, source in (mapping or {}).items():  # type: ignore[attr-defined]
        if isinstance(source, PathSource):
            check_path(check, source.path, f"{where}.{key}.path", scope, node, "mapping", extra_roots)
        elif isinstance(source, TemplateSource):
            check_template(check, source.template, f"{where}.{key}.template", scope, node, extra_roots,
                           node_text=False)


def check_predicate(check: Checker, predicate: Predicate, where: str, scope: Scope, node: str | None) -> None:
    """``predicate`` reads what is readable here, names known conditions, and compares fields
    with literals of their type (``off-enum``, ``wrong-type``); a CEL string compiles (bounded,
    reading only state, input, context and results)."""
    if isinstance(predicate, str):
        try:
            compile_condition(predicate, CONDITION_ROOTS)
        except ValueError as exc:
            check.add("invalid-condition", str(exc), where, node=node,
                      hint="write a CEL condition such as \"state.size == 'large'\"")
        return
    for path, raw in _predicate_paths(predicate, where):
        check_path(check, raw, path, scope, node, "predicate")
    for path, name in _conditions(predicate, where):
        check.unknown("unknown-condition", "condition", name, check.surface.conditions, path, node)
    _check_literals(check, predicate, where, node, scope)


_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "date": (str,), "enum": (str, int, float, bool),
                                       "number": (int, float), "integer": (int,), "boolean": (bool,),
                                       "list": (list,)}


def _check_literals(check: Checker, predicate: Predicate, where: str, node: str | None, scope: Scope) -> None:
    """``eq``/``ne`` of an agent field with a literal off its enum, or of another type (no coercion)."""
    if isinstance(predicate, And | Or):
        for index, arg in enumerate(predicate.args):
            _check_literals(check, arg, f"{where}.args.{index}", node, scope)
        return
    if isinstance(predicate, Not):
        _check_literals(check, predicate.arg, f"{where}.arg", node, scope)
        return
    fields = check.surface.fields or {}
    if not isinstance(predicate, Compare) or predicate.op not in ("eq", "ne"):
        return
    sides = (predicate.left, predicate.right)
    for path, literal in (sides, sides[::-1]):
        if not (isinstance(path, Path) and isinstance(literal, Literal_)) or literal.literal is None:
            continue
        parts = split_path(path.path)
        spec = fields.get(parts[1]) if len(parts) == 2 and parts[0] == "state" else None
        if spec is None:
            continue
        value, enum = literal.literal, getattr(spec, "enum", None)
        if enum and value not in enum:
            check.add("off-enum", f"{value!r} is not a value of field {parts[1]!r}", where, node=node,
                      hint=did_you_mean(str(value), [str(v) for v in enum]) or f"values: {', '.join(map(str, enum))}",
                      repair="set-predicate", legal=scope.legal())
            continue
        allowed = _TYPES.get(spec.type, (object,))
        bad_bool = isinstance(value, bool) and spec.type in ("number", "integer")
        if not isinstance(value, allowed) or bad_bool:
            check.add("wrong-type", f"field {parts[1]!r} is a {spec.type}, compared with {value!r}", where,
                      node=node, hint=f"write a {spec.type} literal (values are not coerced)", repair="set-predicate",
                      legal=scope.legal())
