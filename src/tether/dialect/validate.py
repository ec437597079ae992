"""Validating a flow file: every issue, each with a path, a code, a repair hint and (on a node or
a value read from the run) a structured repair action. Never raises.

After strict parsing (:mod:`tether.dialect.parse`) the checks are:

- structure: duplicate and reserved ids, the start, transition targets (``did you mean``), a reply
  that renders and generates (or neither), an action with no (or two) things to run, a collect
  that collects nothing, a wait with no (or two) things to wait for, durations, a router that
  jumps back with no ``else``; warnings for unreachable nodes, a backward jump over a collect
  with no ``clear``, a collect with no question, a flow ``collect`` field that no node asks;
- references, against the agent and its registry: fields, tools (and each argument's name and
  literal type), registered actions, conditions, events, flows (``did you mean``);
- data flow (:mod:`tether.dialect.dataflow`): what each predicate, template and mapping reads
  must be set on some path from the start (hint and repair: the legal sources there);
- templates: ``${`` never closed, an unknown root, a bare ``{name}`` (write ``${state.name}``);
- finally, whatever the flow's own Python validation finds.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from tether.dialect.build import build_flow
from tether.dialect.checker import Checker, Surface
from tether.dialect.dataflow import (
    Scope,
    check_mapping,
    check_predicate,
    check_template,
    known_state,
    produced,
    refs,
    target,
)
from tether.dialect.models import UnsupportedSchema, model_from_schema, schema_properties
from tether.dialect.parse import did_you_mean, parse_document
from tether.dialect.registry import Registry
from tether.dialect.spec import (
    ActionSpec,
    AgentSpec,
    BranchSpec,
    CollectSpec,
    DecideSpec,
    FlowSpec,
    GotoRef,
    NodeSpec,
    PatternResolver,
    ReplySpec,
    RouterSpec,
    StartFlowRef,
    TransitionRef,
    ValueSource,
    VerifySpec,
    WaitSpec,
)
from tether.dialect.values import RESULTS_KEY, split_path
from tether.errors import DefinitionIssue, FlowDefinitionError, RepairAction
from tether.flow.durations import parse_duration
from tether.flow.resolvers import pattern

__all__ = ["Surface", "validate", "validate_flow", "validate_spec"]

RESERVED = frozenset({"end", "stay", "next"})


# --------------------------------------------------------------------------- per node


def _check_ref(check: Checker, ref: TransitionRef, where: str, node: str, scope: Scope, static: bool) -> None:
    goes = target(ref)
    if goes is not None and goes not in check.ids:
        hint = "write {end: reason}" if goes == "end" else did_you_mean(goes, check.ids)
        check.add("unresolved-transition", f"target {goes!r} is not a node of the flow", where, node=node,
                  hint=hint or f"nodes: {', '.join(check.ids)}", repair="set-transition")
    if isinstance(ref, GotoRef):
        check_mapping(check, ref.data, f"{where}.data", scope, node)
        for key in ref.data or {}:
            _reserved_key(check, key, f"{where}.data.{key}", node)
        for position, name in enumerate(ref.clear or []):
            check.unknown("unknown-field", "field", name, _clearable(check), f"{where}.clear.{position}", node)
        if static and any(not isinstance(s, ValueSource) for s in (ref.data or {}).values()):
            check.add("dynamic-data", "a router or wait target carries only literal data", f"{where}.data",
                      node=node, hint="use {value: ...} sources, or route from an action", repair="set-transition")
    if isinstance(ref, StartFlowRef):
        check_mapping(check, ref.input, f"{where}.input", scope, node)
        if "${" not in ref.start_flow:
            check.unknown("unknown-flow", "flow", ref.start_flow, check.surface.flows, f"{where}.start_flow", node)
        else:
            check_template(check, ref.start_flow, f"{where}.start_flow", scope, node)


def _clearable(check: Checker) -> set[str] | None:
    """What a goto may ``clear``: agent fields and whatever the flow's nodes put in the state."""
    if check.surface.fields is None:
        return None
    return set(check.surface.fields).union(*(produced(n) for n in check.spec.nodes))


def _reserved_key(check: Checker, key: str, where: str, node: str | None) -> None:
    if split_path(key)[-1] == RESULTS_KEY:
        check.add("reserved-state-key", f"{RESULTS_KEY!r} is where nodes record their results, not a state key",
                  where, node=node, hint="choose another name; read a node's result as results.<node id>")


def _duration(check: Checker, value: str | None, where: str, node: str | None = None) -> None:
    if value is None:
        return
    try:
        parse_duration(value)
    except (ValueError, TypeError) as exc:
        check.add("bad-duration", str(exc), where, node=node, hint="write a duration such as 30s, 10m, 2h or 1d")


def _schema(check: Checker, schema: dict[str, Any] | None, where: str, node: str) -> None:
    if schema is None:
        return
    try:
        model_from_schema(schema, "Probe")
    except UnsupportedSchema as exc:
        check.add("invalid-schema", str(exc), f"{where}.{exc.path}", node=node,
                  hint="properties of type string, number, integer, boolean, array or object")


def _check_arguments(check: Checker, node: ActionSpec, at: str, model: Any) -> None:
    """An action's ``args`` against its tool's parameters: none missing, none unknown, and each
    literal ``value`` of the parameter's type (strict; templates and paths are checked at run time)."""
    if model is None:
        return
    fields = {name: f for name, f in model.model_fields.items() if name != "idempotency_key"}
    for name, source in node.args.items():
        if name not in fields:
            check.add("unknown-argument", f"tool {node.tool!r} takes no argument {name!r}", f"{at}.args.{name}",
                      node=node.id, hint=did_you_mean(name, fields) or f"its arguments: {', '.join(fields) or 'none'}")
        elif isinstance(source, ValueSource):
            try:
                TypeAdapter(fields[name].annotation).validate_python(source.value, strict=True)
            except ValidationError as exc:
                check.add("wrong-argument-type", f"tool {node.tool!r} argument {name!r}: {exc.errors()[0]['msg']}",
                          f"{at}.args.{name}.value", node=node.id, repair="set-mapping-source",
                          hint=f"give a value of type {getattr(fields[name].annotation, '__name__', 'the parameter')}"
                          " (values are not coerced)")
    for name, info in fields.items():
        if info.is_required() and name not in node.args:
            check.add("missing-argument", f"tool {node.tool!r} needs the argument {name!r}", f"{at}.args", node=node.id,
                      hint=f"add {name}: {{path: state.{name}}} (or a value or template)")


def _check_collect(check: Checker, at: str, node: CollectSpec, scope: Scope) -> None:
    nid, surface = node.id, check.surface
    _schema(check, node.schema_, f"{at}.schema", nid)
    slots = list(schema_properties(node.schema_ or {})) + list(node.fields)
    if not slots:
        check.add("collect-nothing", "a collect node gathers no field", at, node=nid,
                  hint="add fields: [...] (agent fields) or a schema with properties")
    for position, name in enumerate(node.fields):
        check.unknown("unknown-field", "field", name, surface.fields, f"{at}.fields.{position}", nid)
    for name in slots:
        _reserved_key(check, name, at, nid)
    for option in ("required", "verbatim_fields"):
        for position, name in enumerate(getattr(node, option) or []):
            check.unknown("unknown-field", "field", name, slots, f"{at}.{option}.{position}", nid)
    for position, resolver in enumerate(node.resolvers):
        check.unknown("unknown-field", "field", resolver.field, slots, f"{at}.resolvers.{position}.field", nid)
        if isinstance(resolver, PatternResolver):
            try:
                pattern(resolver.field, resolver.regex, value=resolver.value, case=resolver.case)
            except ValueError as exc:
                check.add("invalid-pattern", str(exc), f"{at}.resolvers.{position}", node=nid,
                          hint="a Python regular expression; value names its groups as \\1 or \\g<name>")
    for dest, source in (node.assign or {}).items():
        parts = split_path(dest)
        if len(parts) > 2 or (len(parts) == 2 and parts[0] != "state") or not parts[-1]:
            check.add("invalid-assign", f"assign target {dest!r} is not a state key", f"{at}.assign.{dest}",
                      node=nid, hint=f"write state.{parts[-1] or 'name'}")
        _reserved_key(check, dest, f"{at}.assign.{dest}", nid)
        check.unknown("unknown-field", "field", source, slots, f"{at}.assign.{dest}", nid)
    if isinstance(node.ask, dict):
        for name, text in node.ask.items():
            check.unknown("unknown-field", "field", name, slots, f"{at}.ask.{name}", nid)
            check_template(check, text, f"{at}.ask.{name}", scope, nid)
    for option in ("question", "prompt", "instructions") + (("ask",) if isinstance(node.ask, str) else ()):
        check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
    if node.ask is None and node.question is None and node.prompt is None:
        check.add("no-question", "the collect node has no ask, question or prompt: a default question is built "
                  "from the field names", at, node=nid, hint="add ask: ...", severity="warning")


def _check_action(check: Checker, at: str, node: ActionSpec, scope: Scope) -> None:
    nid, surface = node.id, check.surface
    if (node.tool is None) == (node.do is None):
        check.add("action-needs-one", "an action names exactly one of tool and do", at, node=nid,
                  hint="tool: an agent tool; do: a registered action")
    if node.tool is not None:
        check.unknown("unknown-tool", "tool", node.tool, surface.tools, f"{at}.tool", nid)
        _check_arguments(check, node, at, (surface.tool_inputs or {}).get(node.tool))
    if node.do is not None:
        check.unknown("unknown-action", "action", node.do, surface.actions, f"{at}.do", nid)
    check_mapping(check, node.args, f"{at}.args", scope, nid)
    if isinstance(node.bind, str):
        parts = split_path(node.bind)
        if len(parts) > 2 or (len(parts) == 2 and parts[0] != "state"):
            check.add("invalid-bind", f"bind {node.bind!r} is not a state key", f"{at}.bind", node=nid,
                      hint=f"write state.{parts[-1]}")
        _reserved_key(check, node.bind, f"{at}.bind", nid)
    elif node.bind is not None:
        check_mapping(check, node.bind, f"{at}.bind", scope, nid, extra_roots=("result",))
        for key in node.bind:
            _reserved_key(check, key, f"{at}.bind.{key}", nid)


def _check_verify(check: Checker, verify: VerifySpec | None, at: str, node: str, own: Scope) -> None:
    if verify is None:
        return
    if verify.output_schema is None and verify.check is None:
        check.add("verify-needs-one", "a verify checks nothing", f"{at}.verify", node=node,
                  hint="add output_schema: {...} or check: <predicate>")
    _schema(check, verify.output_schema, f"{at}.verify.output_schema", node)
    if verify.check is not None:
        check_predicate(check, verify.check, f"{at}.verify.check", own, node)


def _check_branches(check: Checker, branches: list[BranchSpec], at: str, node: str, scope: Scope) -> None:
    for index, branch in enumerate(branches):
        where = f"{at}.branches.{index}"
        if (branch.when is None) == (branch.if_ is None):
            check.add("branch-needs-one", "a branch is judged by exactly one of when (the model) and if (a "
                      "predicate)" + (", not both" if branch.when is not None else ""), where, node=node,
                      hint="when: <text the model judges true or false>, or if: <predicate>")
        if branch.if_ is not None:
            check_predicate(check, branch.if_, f"{where}.if", scope, node)


def _check_gates(check: Checker, everything: Scope) -> None:
    seen: set[str] = set()
    roots = ("input", "state", "results", "request_context")
    for index, gate in enumerate(check.spec.gates):
        where = f"gates.{index}"
        if gate.id in seen:
            check.add("invalid-gate", f"gate id {gate.id!r} is used twice", f"{where}.id",
                      hint="give every gate its own id")
        seen.add(gate.id)
        if gate.kind == "predicate":
            check_predicate(check, gate.when, f"{where}.when", everything, None)
            continue
        for position, path in enumerate(gate.inputs):
            root = split_path(path)[0]
            if root not in roots:
                check.add("unknown-root", f"judge input {path!r} starts with {root!r}, not a root",
                          f"{where}.inputs.{position}", hint=did_you_mean(root, roots) or f"roots: {', '.join(roots)}")


def _check_node(check: Checker, index: int, node: NodeSpec, scope: Scope, own: Scope) -> None:
    at, nid, surface = f"nodes.{index}", node.id, check.surface
    if node.id in RESERVED:
        check.add("reserved-node-id", f"{node.id!r} is reserved", f"{at}.id", node=nid,
                  hint="choose another id; end a flow with {end: reason}")
    _schema(check, node.output_schema, f"{at}.output_schema", nid)
    static = isinstance(node, RouterSpec | WaitSpec)
    for option, ref in refs(node):
        _check_ref(check, ref, f"{at}.{option}", nid, own if not static else scope, static)
    for route_index, route in enumerate(getattr(node, "routes", [])):
        check_predicate(check, route.when, f"{at}.routes.{route_index}.when", own, nid)
    _check_verify(check, getattr(node, "verify", None), at, nid, own)
    _check_branches(check, getattr(node, "branches", []), at, nid, scope)
    if isinstance(node, ReplySpec):
        if (node.response is None) == (not node.generate):
            both = node.response is not None
            check.add("reply-needs-one", "a reply either renders response.template or has generate: true"
                      + (", not both" if both else ""), at, node=nid,
                      hint="remove generate" if both else "add response: {template: ...} or generate: true")
        for name in node.tools or []:
            check.unknown("unknown-tool", "tool", name, surface.tools, f"{at}.tools", nid)
        for option in ("instructions", "fallback"):
            check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
        if node.response is not None:
            check_template(check, node.response.template, f"{at}.response.template", scope, nid)
    elif isinstance(node, CollectSpec):
        _check_collect(check, at, node, scope)
    elif isinstance(node, ActionSpec):
        _check_action(check, at, node, scope)
    elif isinstance(node, DecideSpec):
        _schema(check, node.schema_, f"{at}.schema", nid)
        for option in ("instructions", "prompt"):
            check_template(check, getattr(node, option), f"{at}.{option}", scope, nid)
    elif isinstance(node, RouterSpec):
        check_predicate(check, node.when, f"{at}.when", scope, nid)
        goes = target(node.then) if node.then is not None else None
        if node.else_ is None and goes in check.ids[:index + 1]:
            check.add("backward-router-without-else", f"the router jumps back to {goes!r} and has no else",
                      at, node=nid, hint="add else: <node> (or {end: reason}) to say how the loop is left")
    else:
        if (node.timer is None) == (node.event is None):
            check.add("wait-needs-one", "a wait node waits for exactly one of timer and event", at, node=nid,
                      hint="timer: 10m, or event: <name>")
        _duration(check, node.timer, f"{at}.timer", nid)
        _duration(check, node.up_to, f"{at}.up_to", nid)
        if node.event is not None:
            check.unknown("unknown-event", "event", node.event, surface.events, f"{at}.event", nid)


def _backward_jumps(check: Checker) -> None:
    """A jump back over a collect with no ``clear``: what it collected is still known, so it is
    not asked again (a warning)."""
    ids = check.ids
    for index, node in enumerate(check.spec.nodes):
        for option, ref in refs(node):
            goes = target(ref)
            if goes not in ids[:index + 1] or (isinstance(ref, GotoRef) and ref.clear):
                continue
            loop = check.spec.nodes[ids.index(goes):index + 1]
            asked = sorted({name for n in loop if isinstance(n, CollectSpec) for name in produced(n)})
            if asked:
                check.add("backward-jump-without-clear", f"jumps back to {goes!r} without clearing "
                          f"{', '.join(asked)}, so they are not asked again", f"nodes.{index}.{option}", node=node.id,
                          hint=f"write {{goto: {goes}, clear: [{', '.join(asked)}]}} to ask again",
                          severity="warning", repair="set-transition")


def _never_asked(check: Checker) -> None:
    """A flow ``collect`` field that is only extracted when asked, which no node asks (a warning)."""
    fields = check.surface.fields or {}
    asked = {name for n in check.spec.nodes if isinstance(n, CollectSpec) for name in produced(n)}
    for position, name in enumerate(check.spec.collect):
        spec = fields.get(name)
        mode = getattr(spec, "extract", None) or ("asked" if getattr(spec, "type", None) == "boolean" else "anywhere")
        if spec is not None and mode == "asked" and name not in asked:
            check.add("field-never-asked", f"field {name!r} is extracted only when asked, and no node asks it",
                      f"collect.{position}", hint=f"collect it in a node (fields: [{name}]), or give the field "
                      "extract: anywhere", severity="warning")


def _check_flow(spec: FlowSpec, surface: Surface, base: str) -> list[DefinitionIssue]:
    check = Checker(spec, surface, base)
    seen: set[str] = set()
    for index, node in enumerate(spec.nodes):
        if node.id in seen:
            check.add("duplicate-node-id", f"node id {node.id!r} is used twice", f"nodes.{index}.id", node=node.id,
                      hint="give every node its own id")
        seen.add(node.id)
    if spec.start is not None and spec.start not in seen:
        check.add("missing-start", f"start {spec.start!r} is not a node of the flow", "start",
                  hint=did_you_mean(spec.start, seen) or f"nodes: {', '.join(check.ids)}", repair="set-transition")
    for option in ("on_cancel", "on_skip", "on_escalate"):
        target = getattr(spec, option)
        if target is not None and target not in seen:
            check.add("unresolved-transition", f"{option} {target!r} is not a node of the flow", option,
                      hint=did_you_mean(target, seen) or f"nodes: {', '.join(check.ids)}", repair="set-transition")
    known = known_state(spec)
    agent_fields = set(surface.fields or {})
    by_id = {n.id: n for n in spec.nodes}
    code_decides = any(isinstance(n, ActionSpec) and n.do is not None for n in spec.nodes)
    for index, node in enumerate(spec.nodes):
        if node.id not in known.keys and not code_decides:  # a registered action may go anywhere
            check.add("unreachable-node", f"no path from the start reaches {node.id!r}", f"nodes.{index}", node=node.id,
                      hint="route to it, or remove it", severity="warning", repair="remove-node")
        reached = node.id in known.keys
        keys = None if known.open.get(node.id) or not reached else known.keys[node.id]
        before = None if not reached else known.before[node.id]
        own_open = keys is None or (isinstance(node, ActionSpec) and node.do is not None)
        scope = Scope(keys, agent_fields, before, by_id)
        own = Scope(None if own_open or keys is None else keys | produced(node), agent_fields,
                    None if before is None else before | {node.id}, by_id)
        _check_node(check, index, node, scope, own)
    _backward_jumps(check)
    _never_asked(check)
    for position, name in enumerate(spec.clear_on_start):
        check.unknown("unknown-field", "field", name, surface.fields, f"clear_on_start.{position}")
    for position, name in enumerate(spec.collect):
        check.unknown("unknown-field", "field", name, surface.fields, f"collect.{position}")
    for position, name in enumerate(spec.tools or []):
        check.unknown("unknown-tool", "tool", name, surface.tools, f"tools.{position}")
    everything = Scope(None, agent_fields, None, by_id)
    for position, trigger in enumerate(spec.on):
        where = f"on.{position}"
        _duration(check, getattr(trigger, "after", None), f"{where}.after")
        if isinstance(trigger.repeat, dict):
            _duration(check, trigger.repeat.get("cooldown"), f"{where}.repeat.cooldown")
        if trigger.kind == "event":
            check.unknown("unknown-event", "event", trigger.name, surface.events, f"{where}.name")
        real = [p for p in getattr(trigger, "phrases", []) if p.strip() not in ("", "!")]
        if real and all(p.startswith("!") for p in real):
            check.add("all-exclusions", "every phrase is an exclusion ('!...'), so the trigger never matches",
                      f"{where}.phrases", hint="add a phrase the trigger matches; a '!' phrase only rules a "
                      "message out")
        if trigger.if_ is not None:
            check_predicate(check, trigger.if_, f"{where}.if", everything, None)
    for position, text in enumerate(spec.instructions):
        check_template(check, text, f"instructions.{position}", everything, None)
    _check_gates(check, everything)
    return check.issues


def _python_issues(spec: FlowSpec, registry: Registry | None, base: str) -> list[DefinitionIssue]:
    try:
        build_flow(spec, registry)
    except FlowDefinitionError as exc:
        return [DefinitionIssue(i.code, i.message, flow=i.flow or spec.id, node=i.node, path=f"{base}.{i.path}"
                                if i.path else base, hint=i.hint, severity=i.severity,
                                repair=RepairAction("update-node", node_id=i.node) if i.node else None)
                for i in exc.issues]
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
        for index, name in enumerate(spec.idle_tools):
            if spec.idle == "silent":
                issues.append(DefinitionIssue("invalid-idle", "idle_tools names tools for a silent idle speaker",
                                              path=f"agent.idle_tools.{index}",
                                              hint="remove idle: silent or idle_tools"))
            elif spec.tools is not None and name not in spec.tools:
                issues.append(DefinitionIssue("unknown-tool", f"idle_tools names tool {name!r}, which the agent does "
                                              "not have", path=f"agent.idle_tools.{index}",
                                              hint=did_you_mean(name, spec.tools) or "add it to tools"))
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
