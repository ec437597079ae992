"""Validating a flow file: every issue, each with a path, a code and a repair hint. Never raises.

After strict parsing (:mod:`tether.dialect.parse`) the checks are:

- structure: duplicate and reserved ids, the start, transition targets (``did you mean``), a reply
  that renders and generates (or neither), an action with no (or two) things to run, a collect
  that collects nothing, a wait with no (or two) things to wait for, durations, unreachable nodes
  (a warning);
- references, against the agent and its registry: fields, tools, registered actions,
  conditions, events, flows (``did you mean``);
- data flow: the state is typed from the start node forward (a collect adds its fields, an
  action its ``bind``, a decide its schema's properties, a goto its ``data``). A predicate, template
  or mapping reading ``state.x`` where no path from the start can have set ``x`` is an error whose
  hint lists the legal sources at that node. A registered action can set anything, so nodes after
  one are not checked;
- templates: ``${`` never closed, an unknown root, a bare ``{name}`` (write ``${state.name}``);
- finally, whatever the flow's own Python validation finds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tether.dialect.build import build_flow
from tether.dialect.models import UnsupportedSchema, model_from_schema, schema_properties
from tether.dialect.parse import did_you_mean, parse_document
from tether.dialect.registry import Registry
from tether.dialect.spec import (
    ActionSpec,
    AgentSpec,
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
    ReplySpec,
    RouterSpec,
    StartFlowRef,
    TemplateSource,
    TransitionRef,
    Truth,
    ValueSource,
    WaitSpec,
)
from tether.dialect.values import ROOTS, TEMPLATE, split_path
from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.durations import parse_duration

__all__ = ["Surface", "validate", "validate_flow", "validate_spec"]

RESERVED = frozenset({"end", "stay", "next"})
_BARE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")


@dataclass(frozen=True)
class Surface:
    """What a flow may name. ``None`` for a kind means "not known here": not checked."""

    fields: dict[str, Any] | None = None
    tools: frozenset[str] | None = None
    actions: frozenset[str] | None = None
    conditions: frozenset[str] | None = None
    events: frozenset[str] | None = None
    flows: frozenset[str] | None = None
    tool_inputs: dict[str, Any] | None = None
    """Each tool's input model (pydantic), to check an action's ``args`` against."""

    @classmethod
    def of(cls, registry: Registry | None, agent: AgentSpec | None = None) -> Surface:
        """The surface of ``registry`` (and of ``agent``: its fields, flows and tools)."""
        tools = frozenset(t.name for t in registry.tools) if registry is not None else None
        if agent is not None and agent.tools is not None and tools is not None:
            tools = tools & frozenset(agent.tools)
        return cls(fields=dict(agent.fields) if agent is not None else None, tools=tools,
                   actions=frozenset(registry.actions) if registry is not None else None,
                   conditions=frozenset(registry.conditions) if registry is not None else None,
                   events=frozenset(registry.events) if registry is not None and registry.events else None,
                   flows=frozenset(f.id for f in agent.flows) if agent is not None else None,
                   tool_inputs={t.name: t.input_model for t in registry.tools} if registry is not None else None)


@dataclass
class _Checker:
    spec: FlowSpec
    surface: Surface
    base: str
    issues: list[DefinitionIssue] = field(default_factory=list)

    def add(self, code: str, message: str, path: str, *, node: str | None = None, hint: str | None = None,
            severity: str = "error") -> None:
        self.issues.append(DefinitionIssue(code, message, flow=self.spec.id, node=node, path=f"{self.base}.{path}",
                                           hint=hint, severity="warning" if severity == "warning" else "error"))

    @property
    def ids(self) -> list[str]:
        return [n.id for n in self.spec.nodes]

    def unknown(self, code: str, what: str, name: str, known: Any, path: str, node: str | None = None) -> None:
        if known is None or name in known:
            return
        listed = ", ".join(sorted(known)) or "none"
        self.add(code, f"unknown {what} {name!r}", path, node=node,
                 hint=did_you_mean(name, known) or f"known {what}s: {listed}")


# --------------------------------------------------------------------------- graph


def _refs(node: NodeSpec) -> Iterator[tuple[str, TransitionRef]]:
    """The node's transition refs, as ``(option path, ref)``."""
    for index, route in enumerate(getattr(node, "routes", [])):
        yield f"routes.{index}.to", route.to
    for option in ("next", "otherwise", "then", "else_", "on_fail"):
        ref = getattr(node, option, None)
        if ref is not None:
            yield option.rstrip("_"), ref


def _falls_through(node: NodeSpec) -> bool:
    """Whether the node goes on to the next node in order when its ``next``/``then`` is absent."""
    if isinstance(node, CollectSpec | ActionSpec):
        return node.next is None
    if isinstance(node, RouterSpec | WaitSpec):
        return node.then is None
    return False


def _target(ref: TransitionRef) -> str | None:
    if isinstance(ref, str):
        return None if ref in ("stay", "next") else ref
    return ref.goto if isinstance(ref, GotoRef) else None


def _edges(spec: FlowSpec) -> dict[str, set[str]]:
    ids = [n.id for n in spec.nodes]
    edges: dict[str, set[str]] = {i: set() for i in ids}
    for index, node in enumerate(spec.nodes):
        follows = index + 1 < len(ids)
        for _, ref in _refs(node):
            target = _target(ref)
            if target in edges:
                edges[node.id].add(target)
            if ref == "next" and follows:
                edges[node.id].add(ids[index + 1])
        if _falls_through(node) and follows:
            edges[node.id].add(ids[index + 1])
    return edges


def _produced(node: NodeSpec) -> set[str]:
    """State keys the node writes when it moves on."""
    keys: set[str] = set()
    if isinstance(node, CollectSpec):
        keys |= set(schema_properties(node.schema_ or {})) | set(node.fields)
    elif isinstance(node, DecideSpec):
        keys |= set(schema_properties(node.schema_ or {})) | ({"choice"} if node.choices else set())
    elif isinstance(node, ActionSpec):
        if isinstance(node.bind, str):
            keys.add(split_path(node.bind)[-1])
        elif node.bind is not None:
            keys |= set(node.bind)
    for _, ref in _refs(node):
        if isinstance(ref, GotoRef) and ref.data:
            keys |= set(ref.data)
    return keys


def _known_state(spec: FlowSpec) -> tuple[dict[str, set[str]], dict[str, bool]]:
    """Per node: the state keys some path from the start may have set, and whether code (a
    registered action) may have set anything."""
    edges = _edges(spec)
    by_id = {n.id: n for n in spec.nodes}
    start = spec.start if spec.start in by_id else spec.nodes[0].id
    known: dict[str, set[str]] = {start: set()}
    open_: dict[str, bool] = {start: False}
    queue = [start]
    while queue:
        current = queue.pop(0)
        node = by_id[current]
        out = known[current] | _produced(node)
        opened = open_[current] or (isinstance(node, ActionSpec) and node.do is not None)
        for target in edges[current]:
            before = (set(known.get(target, set())), open_.get(target))
            known[target] = known.get(target, set()) | out
            open_[target] = bool(open_.get(target)) or opened
            if (known[target], open_[target]) != before:
                queue.append(target)
    return known, open_


# --------------------------------------------------------------------------- data


@dataclass
class _Scope:
    """What a node may read: ``keys`` in the state (None: anything, code may have set it)."""

    keys: set[str] | None
    agent_fields: set[str]

    def legal(self) -> list[str]:
        keys = sorted((self.keys or set()) | self.agent_fields)
        return [f"state.{k}" for k in keys] + ["input.*", "context.*"]


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


def _check_path(check: _Checker, raw: str, where: str, scope: _Scope, node: str | None,
                extra_roots: tuple[str, ...] = ()) -> None:
    parts = split_path(raw)
    root = parts[0] if parts else ""
    roots = [r for r in ROOTS if r != "result"] + list(extra_roots)
    if root not in roots:
        check.add("unknown-root", f"path {raw!r} starts with {root!r}, not a root", where, node=node,
                  hint=did_you_mean(root, roots) or f"roots: {', '.join(roots)}")
        return
    if root != "state" or scope.keys is None:
        return
    if len(parts) < 2 or not parts[1]:
        check.add("unknown-source", f"path {raw!r} names no state key", where, node=node,
                  hint=f"legal sources here: {', '.join(scope.legal())}")
        return
    key = parts[1]
    if key not in scope.keys and key not in scope.agent_fields:
        legal = scope.legal()
        near = did_you_mean(key, (scope.keys or set()) | scope.agent_fields)
        check.add("unknown-source", f"state.{key} is not set on any path from the start to this node", where,
                  node=node, hint=f"{near + ' ' if near else ''}legal sources here: {', '.join(legal)}")


def _check_template(check: _Checker, text: str | None, where: str, scope: _Scope, node: str | None,
                    extra_roots: tuple[str, ...] = ()) -> None:
    if text is None:
        return
    if text.count("${") != len(TEMPLATE.findall(text)):
        check.add("template-syntax", "a '${' is never closed with '}'", where, node=node,
                  hint="write ${state.name}")
    for match in _BARE.finditer(text):
        check.add("bare-placeholder", f"{{{match.group(1)}}} is not a placeholder in a flow file", where, node=node,
                  hint=f"write ${{state.{match.group(1)}}}")
    for match in TEMPLATE.finditer(text):
        _check_path(check, match.group(1), where, scope, node, extra_roots)


def _check_mapping(check: _Checker, mapping: Any, where: str, scope: _Scope, node: str | None,
                   extra_roots: tuple[str, ...] = ()) -> None:
    for key, source in (mapping or {}).items():
        if isinstance(source, PathSource):
            _check_path(check, source.path, f"{where}.{key}.path", scope, node, extra_roots)
        elif isinstance(source, TemplateSource):
            _check_template(check, source.template, f"{where}.{key}.template", scope, node, extra_roots)


def _check_predicate(check: _Checker, predicate: Predicate, where: str, scope: _Scope, node: str | None) -> None:
    for path, raw in _predicate_paths(predicate, where):
        _check_path(check, raw, path, scope, node)
    for path, name in _conditions(predicate, where):
        check.unknown("unknown-condition", "condition", name, check.surface.conditions, path, node)
    _check_enum_literal(check, predicate, where, node)


def _check_enum_literal(check: _Checker, predicate: Predicate, where: str, node: str | None) -> None:
    """``eq``/``ne`` of an agent enum field with a literal off its enum (no coercion)."""
    fields = check.surface.fields or {}
    if not isinstance(predicate, Compare) or predicate.op not in ("eq", "ne"):
        return
    sides = (predicate.left, predicate.right)
    for path, literal in (sides, sides[::-1]):
        if isinstance(path, Path) and isinstance(literal, Literal_):
            parts = split_path(path.path)
            spec = fields.get(parts[1]) if len(parts) == 2 and parts[0] == "state" else None
            enum = getattr(spec, "enum", None)
            if enum and literal.literal not in enum:
                check.add("off-enum", f"{literal.literal!r} is not a value of field {parts[1]!r}", where, node=node,
                          hint=did_you_mean(str(literal.literal), [str(v) for v in enum])
                          or f"values: {', '.join(map(str, enum))}")


# --------------------------------------------------------------------------- per node


def _check_ref(check: _Checker, ref: TransitionRef, where: str, node: str, scope: _Scope, static: bool) -> None:
    target = _target(ref)
    if target is not None and target not in check.ids:
        hint = "write {end: reason}" if target == "end" else did_you_mean(target, check.ids)
        check.add("unresolved-transition", f"target {target!r} is not a node of the flow", where, node=node,
                  hint=hint or f"nodes: {', '.join(check.ids)}")
    if isinstance(ref, GotoRef):
        _check_mapping(check, ref.data, f"{where}.data", scope, node)
        if static and any(not isinstance(s, ValueSource) for s in (ref.data or {}).values()):
            check.add("dynamic-data", "a router or wait target carries only literal data", f"{where}.data",
                      node=node, hint="use {value: ...} sources, or route from an action")
    if isinstance(ref, StartFlowRef):
        _check_mapping(check, ref.input, f"{where}.input", scope, node)
        if "${" not in ref.start_flow:
            check.unknown("unknown-flow", "flow", ref.start_flow, check.surface.flows, f"{where}.start_flow", node)
        else:
            _check_template(check, ref.start_flow, f"{where}.start_flow", scope, node)


def _duration(check: _Checker, value: str | None, where: str, node: str | None = None) -> None:
    if value is None:
        return
    try:
        parse_duration(value)
    except (ValueError, TypeError) as exc:
        check.add("bad-duration", str(exc), where, node=node, hint="write a duration such as 30s, 10m, 2h or 1d")


def _schema(check: _Checker, schema: dict[str, Any] | None, where: str, node: str) -> None:
    if schema is None:
        return
    try:
        model_from_schema(schema, "Probe")
    except UnsupportedSchema as exc:
        check.add("invalid-schema", str(exc), f"{where}.{exc.path}", node=node,
                  hint="properties of type string, number, integer, boolean, array or object")


def _check_arguments(check: _Checker, node: ActionSpec, at: str, model: Any) -> None:
    """An action's ``args`` against its tool's parameters: none missing, none unknown."""
    if model is None:
        return
    fields = {name: f for name, f in model.model_fields.items() if name != "idempotency_key"}
    for name in node.args:
        if name not in fields:
            check.add("unknown-argument", f"tool {node.tool!r} takes no argument {name!r}", f"{at}.args.{name}",
                      node=node.id, hint=did_you_mean(name, fields) or f"its arguments: {', '.join(fields) or 'none'}")
    for name, info in fields.items():
        if info.is_required() and name not in node.args:
            check.add("missing-argument", f"tool {node.tool!r} needs the argument {name!r}", f"{at}.args", node=node.id,
                      hint=f"add {name}: {{path: state.{name}}} (or a value or template)")


def _check_node(check: _Checker, index: int, node: NodeSpec, scope: _Scope, own: _Scope) -> None:
    at, nid, surface = f"nodes.{index}", node.id, check.surface
    if node.id in RESERVED:
        check.add("reserved-node-id", f"{node.id!r} is reserved", f"{at}.id", node=nid,
                  hint="choose another id; end a flow with {end: reason}")
    _schema(check, node.output_schema, f"{at}.output_schema", nid)
    static = isinstance(node, RouterSpec | WaitSpec)
    for option, ref in _refs(node):
        _check_ref(check, ref, f"{at}.{option}", nid, own if not static else scope, static)
    for route_index, route in enumerate(getattr(node, "routes", [])):
        _check_predicate(check, route.when, f"{at}.routes.{route_index}.when", own, nid)
    if isinstance(node, ReplySpec):
        if (node.response is None) == (not node.generate):
            both = node.response is not None
            check.add("reply-needs-one", "a reply either renders response.template or has generate: true"
                      + (", not both" if both else ""), at, node=nid,
                      hint="remove generate" if both else "add response: {template: ...} or generate: true")
        for name in node.tools or []:
            check.unknown("unknown-tool", "tool", name, surface.tools, f"{at}.tools", nid)
        for option in ("instructions", "fallback"):
            _check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
        if node.response is not None:
            _check_template(check, node.response.template, f"{at}.response.template", scope, nid)
    elif isinstance(node, CollectSpec):
        _schema(check, node.schema_, f"{at}.schema", nid)
        slots = list(schema_properties(node.schema_ or {})) + list(node.fields)
        if not slots:
            check.add("collect-nothing", "a collect node gathers no field", at, node=nid,
                      hint="add fields: [...] (agent fields) or a schema with properties")
        for position, name in enumerate(node.fields):
            check.unknown("unknown-field", "field", name, surface.fields, f"{at}.fields.{position}", nid)
        for option in ("required", "verbatim_fields"):
            for position, name in enumerate(getattr(node, option) or []):
                check.unknown("unknown-field", "field", name, slots, f"{at}.{option}.{position}", nid)
        for position, resolver in enumerate(node.resolvers):
            check.unknown("unknown-field", "field", resolver.field, slots, f"{at}.resolvers.{position}.field", nid)
        for option in ("ask", "question", "prompt", "instructions"):
            _check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
        if node.ask is None and node.question is None and node.prompt is None:
            check.add("no-question", "the collect node has no ask, question or prompt: a default question is built "
                      "from the field names", at, node=nid, hint="add ask: ...", severity="warning")
    elif isinstance(node, ActionSpec):
        if (node.tool is None) == (node.do is None):
            check.add("action-needs-one", "an action names exactly one of tool and do", at, node=nid,
                      hint="tool: an agent tool; do: a registered action")
        if node.tool is not None:
            check.unknown("unknown-tool", "tool", node.tool, surface.tools, f"{at}.tool", nid)
            _check_arguments(check, node, at, (surface.tool_inputs or {}).get(node.tool))
        if node.do is not None:
            check.unknown("unknown-action", "action", node.do, surface.actions, f"{at}.do", nid)
        _check_mapping(check, node.args, f"{at}.args", scope, nid)
        if isinstance(node.bind, str):
            parts = split_path(node.bind)
            if len(parts) > 2 or (len(parts) == 2 and parts[0] != "state"):
                check.add("invalid-bind", f"bind {node.bind!r} is not a state key", f"{at}.bind", node=nid,
                          hint=f"write state.{parts[-1]}")
        elif node.bind is not None:
            _check_mapping(check, node.bind, f"{at}.bind", scope, nid, extra_roots=("result",))
    elif isinstance(node, DecideSpec):
        _schema(check, node.schema_, f"{at}.schema", nid)
        for option in ("instructions", "prompt"):
            _check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
    elif isinstance(node, RouterSpec):
        _check_predicate(check, node.when, f"{at}.when", scope, nid)
    else:
        if (node.timer is None) == (node.event is None):
            check.add("wait-needs-one", "a wait node waits for exactly one of timer and event", at, node=nid,
                      hint="timer: 10m, or event: <name>")
        _duration(check, node.timer, f"{at}.timer", nid)
        _duration(check, node.up_to, f"{at}.up_to", nid)
        if node.event is not None:
            check.unknown("unknown-event", "event", node.event, surface.events, f"{at}.event", nid)


def _check_flow(spec: FlowSpec, surface: Surface, base: str) -> list[DefinitionIssue]:
    check = _Checker(spec, surface, base)
    seen: set[str] = set()
    for index, node in enumerate(spec.nodes):
        if node.id in seen:
            check.add("duplicate-node-id", f"node id {node.id!r} is used twice", f"nodes.{index}.id", node=node.id,
                      hint="give every node its own id")
        seen.add(node.id)
    if spec.start is not None and spec.start not in seen:
        check.add("missing-start", f"start {spec.start!r} is not a node of the flow", "start",
                  hint=did_you_mean(spec.start, seen) or f"nodes: {', '.join(check.ids)}")
    known, opened = _known_state(spec)
    agent_fields = set(surface.fields or {})
    code_decides = any(isinstance(n, ActionSpec) and n.do is not None for n in spec.nodes)
    for index, node in enumerate(spec.nodes):
        if node.id not in known and not code_decides:  # a registered action may go anywhere
            check.add("unreachable-node", f"no path from the start reaches {node.id!r}", f"nodes.{index}", node=node.id,
                      hint="route to it, or remove it", severity="warning")
        keys = None if opened.get(node.id) or node.id not in known else known[node.id]
        own_open = keys is None or (isinstance(node, ActionSpec) and node.do is not None)
        scope = _Scope(keys, agent_fields)
        own = _Scope(None if own_open or keys is None else keys | _produced(node), agent_fields)
        _check_node(check, index, node, scope, own)
    for position, name in enumerate(spec.clear_on_start):
        check.unknown("unknown-field", "field", name, surface.fields, f"clear_on_start.{position}")
    for position, name in enumerate(spec.collect):
        check.unknown("unknown-field", "field", name, surface.fields, f"collect.{position}")
    for position, name in enumerate(spec.tools or []):
        check.unknown("unknown-tool", "tool", name, surface.tools, f"tools.{position}")
    everything = _Scope(None, agent_fields)
    for position, trigger in enumerate(spec.on):
        where = f"on.{position}"
        _duration(check, getattr(trigger, "after", None), f"{where}.after")
        if isinstance(trigger.repeat, dict):
            _duration(check, trigger.repeat.get("cooldown"), f"{where}.repeat.cooldown")
        if trigger.kind == "event":
            check.unknown("unknown-event", "event", trigger.name, surface.events, f"{where}.name")
        if trigger.if_ is not None:
            _check_predicate(check, trigger.if_, f"{where}.if", everything, None)
    for position, text in enumerate(spec.instructions):
        _check_template(check, text, f"instructions.{position}", everything, None)
    return check.issues


def _python_issues(spec: FlowSpec, registry: Registry | None, base: str) -> list[DefinitionIssue]:
    try:
        build_flow(spec, registry)
    except FlowDefinitionError as exc:
        return [DefinitionIssue(i.code, i.message, flow=i.flow or spec.id, node=i.node, path=f"{base}.{i.path}"
                                if i.path else base, hint=i.hint) for i in exc.issues]
    return []


def validate_flow(spec: FlowSpec, surface: Surface, registry: Registry | None = None) -> list[DefinitionIssue]:
    """Every issue of one parsed flow against ``surface`` (paths start at ``flow``)."""
    found = _check_flow(spec, surface, "flow")
    if not any(i.severity == "error" for i in found):
        found += _python_issues(spec, registry, "flow")
    return found


def validate_spec(spec: AgentSpec | FlowSpec, registry: Registry | None = None,
                  agent: AgentSpec | None = None) -> list[DefinitionIssue]:
    """Every issue of a parsed spec (a flow checked against ``agent`` and ``registry`` when given)."""
    if isinstance(spec, AgentSpec):
        issues: list[DefinitionIssue] = []
        surface = Surface.of(registry, spec)
        seen: set[str] = set()
        for index, name in enumerate(spec.tools or []):
            if surface.tools is not None and registry is not None and name not in registry.tools_by_name:
                known = sorted(registry.tools_by_name)
                issues.append(DefinitionIssue("unknown-tool", f"unknown tool {name!r}", path=f"agent.tools.{index}",
                                              hint=did_you_mean(name, known) or f"registered: {', '.join(known)}"))
        for index, flow in enumerate(spec.flows):
            if flow.id in seen:
                issues.append(DefinitionIssue("duplicate-flow-id", f"flow id {flow.id!r} is used twice", flow=flow.id,
                                              path=f"agent.flows.{index}.id", hint="give every flow its own id"))
            seen.add(flow.id)
            base = f"agent.flows.{index}"
            found = _check_flow(flow, surface, base)
            issues += found
            if not any(i.severity == "error" for i in found):
                issues += _python_issues(flow, registry, base)
        return issues
    return validate_flow(spec, Surface.of(registry, agent), registry)


def validate(document: Any, registry: Registry | None = None, agent: AgentSpec | None = None
             ) -> list[DefinitionIssue]:
    """Every issue of a flow-file document (``{"agent": ...}`` or ``{"flow": ...}``): strict parsing
    first, then the checks above. Never raises; an empty list means it builds."""
    spec, issues = parse_document(document)
    if spec is None:
        return issues
    return validate_spec(spec, registry, agent)
