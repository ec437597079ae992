"""``to_spec(flow)``: a flow back as flow-file data, the exact inverse of building a flow file.

A flow built from a file gives its spec back (in canonical form: defaults left out, ``start``
only when it is not the first node). A Python-authored flow converts too when it is declarative:
string templates, static targets, JSON conditions and built-in resolvers. Code cannot be
written in a file: every closure is refused, each naming its node, option and the declarative
replacement, all in one :class:`~tether.errors.FlowDefinitionError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tether.dialect.build import RegisteredAction, Routes, SpecCheck, SpecGate, SpecPredicate, ToolCall
from tether.dialect.models import SCHEMA_ATTR, source_schema
from tether.dialect.spec import FlowSpec, Predicate
from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.choices import Choice, ChoiceReply
from tether.flow.flow import Flow
from tether.flow.gates import JudgeGate
from tether.flow.nodes import Action, Collect, Decide, Node, Reply, Router, Verify, Wait
from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Stay
from tether.templating import Slot, rewrite

__all__ = ["to_spec"]

_FREE = ("state", "input", "context", "results")


def _template(text: str) -> str:
    """``"Hi ${name} {input.x}"`` -> ``"Hi ${state.name} ${input.x}"`` (escapes kept as written)."""

    def convert(slot: Slot) -> str:
        return "${" + (slot.path if slot.path.split(".")[0] in _FREE else f"state.{slot.path}") + "}"

    return rewrite(text, convert, old=True)


class _Refusals:
    def __init__(self, flow: str) -> None:
        self.flow = flow
        self.issues: list[DefinitionIssue] = []

    def refuse(self, node: str | None, option: str, what: str, replacement: str) -> None:
        self.issues.append(DefinitionIssue("not-declarative", f"{what} is code, which a flow file cannot hold",
                                           flow=self.flow, node=node, path=option, hint=replacement))

    def text(self, value: Any, node: str | None, option: str) -> str | None:
        if value is None or isinstance(value, str):
            return None if value is None else _template(value)
        self.refuse(node, option, f"{option} function {getattr(value, '__name__', value)!r}",
                    f"write {option} as a template: text with ${{state.field}} placeholders")
        return None


def _mapping(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {k: ({"template": _template(v)} if isinstance(v, str) else {"value": v}) for k, v in values.items()}


def _ref(target: Any, refusals: _Refusals, node: str, option: str) -> Any:
    if target is None or isinstance(target, str):
        return target
    if isinstance(target, Node):
        return target.id
    if isinstance(target, Stay):
        return "stay"
    if isinstance(target, Next):
        if target.data:
            refusals.refuse(node, option, "NEXT with data", "write {goto: <next node>, data: {...}}")
        return "next"
    if isinstance(target, Goto):
        if target.data is None and not target.clear:
            return target.target
        ref: dict[str, Any] = {"goto": target.target}
        if target.data is not None:
            ref["data"] = {k: {"value": v} for k, v in target.data.items()}
        if target.clear:
            ref["clear"] = list(target.clear)
        return ref
    if isinstance(target, End):
        return {"end": target.reason}
    if isinstance(target, Handoff):
        return {"handoff": target.agent, **({"reason": target.reason} if target.reason is not None else {})}
    if isinstance(target, Escalate):
        return {"escalate": target.reason}
    if isinstance(target, StartFlow):
        flow_input = target.input
        if flow_input is not None and not isinstance(flow_input, Mapping):
            refusals.refuse(node, option, "a start_flow input that is not a mapping", "pass a mapping")
            flow_input = None
        return {"start_flow": _template(target.flow), **({"input": _mapping(flow_input)} if flow_input else {})}
    if isinstance(target, Mapping):
        return dict(target)
    refusals.refuse(node, option, f"{option} function {getattr(target, '__name__', target)!r}",
                    f"write routes: [{{when: <predicate>, to: <node>}}] and {option.replace('on_complete', 'next')}: "
                    "<node> (predicates over state.*)")
    return None


def _routed(value: Any, refusals: _Refusals, node: str, option: str, default_key: str) -> dict[str, Any]:
    if isinstance(value, Routes):
        out: dict[str, Any] = {"routes": [r.model_dump(by_alias=True) for r in value.routes]}
        if value.assign:
            out["assign"] = dict(value.assign)
        if value.default is not None:
            out[default_key] = value.default
        return out
    ref = _ref(value, refusals, node, option)
    return {default_key: ref} if ref is not None else {}


def _spec(predicate: Predicate) -> Any:
    """A flow file's predicate as data: a CEL string as it is, an object as its mapping."""
    return predicate if isinstance(predicate, str) else predicate.model_dump(by_alias=True)


def _predicate(value: Any, refusals: _Refusals, node: str | None, option: str) -> Any:
    if isinstance(value, SpecPredicate):
        return _spec(value.spec)
    if isinstance(value, str):
        return value  # a CEL condition is data already
    if isinstance(value, Mapping) and set(value) <= {"equals", "known"}:
        args = [{"op": "eq", "left": {"path": f"state.{k}"}, "right": {"literal": v}}
                for k, v in dict(value.get("equals") or {}).items()]
        args += [{"op": "exists", "path": f"state.{k}"} for k in value.get("known") or []]
        return args[0] if len(args) == 1 else {"op": "and", "args": args}
    refusals.refuse(node, option, f"the predicate {value!r}",
                    "write a JSON predicate ({op: eq, left: {path: state.x}, right: {literal: ...}}), or register "
                    "a condition and write {op: condition, name: <name>}")
    return None


def _schema(model: type[BaseModel] | None) -> dict[str, Any] | None:
    return source_schema(model)


def _choices(choices: tuple[Any, ...]) -> list[Any]:
    return [c.id if isinstance(c, Choice) and c.id == c.label and c.description is None
            else c.as_dict() if isinstance(c, Choice) else c for c in choices]


def _resolver(resolver: Any) -> dict[str, Any]:
    described = resolver.describe()
    kind = {"enum_check": "enum"}.get(described.pop("kind"), resolver.kind)
    described.pop("flags", None)
    return {"kind": kind, **{k: v for k, v in described.items() if v is not None}}


def _verify(verify: Verify, refusals: _Refusals, node: str) -> dict[str, Any]:
    check = verify.check
    if check is not None and not isinstance(check, SpecCheck):
        refusals.refuse(node, "verify.check", f"the verify check {getattr(check, '__name__', check)!r}",
                        "write check: a predicate over state.* (a check registered in code is "
                        "{op: condition, name: <name>})")
    return {"output_schema": _schema(verify.output_schema),
            "check": _spec(check.spec) if isinstance(check, SpecCheck) else None}


def _branches(node: Reply | Collect, refusals: _Refusals) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, branch in enumerate(node.branches):
        option = f"branches.{index}"
        when = branch.if_
        out.append({"then": _ref(branch.then, refusals, node.id, f"{option}.then"), "when": branch.when,
                    "if": _predicate(when, refusals, node.id, f"{option}.if") if when is not None else None})
    return out


def _gate(gate: Any, refusals: _Refusals, index: int) -> dict[str, Any]:
    if isinstance(gate, JudgeGate):
        return {"id": gate.id, "kind": "judge", "inputs": list(gate.inputs), "rubric": gate.rubric,
                "severity": gate.severity}
    if not isinstance(gate.when, SpecGate):
        refusals.refuse(None, f"gates.{index}.when", f"the gate function {getattr(gate.when, '__name__', gate.when)!r}",
                        "write when: a predicate over state.*, input.*, context.* and results.*")
        return {"id": gate.id, "kind": "predicate", "when": {"op": "truthy", "value": {"literal": True}}}
    return {"id": gate.id, "kind": "predicate", "when": _spec(gate.when.spec),
            "severity": gate.severity}


def _node(node: Node, refusals: _Refusals) -> dict[str, Any]:
    out: dict[str, Any] = {"id": node.id, "kind": node.kind, "label": node.label,
                           "output_schema": _schema(node.output_schema)}
    if node.verify is not None:
        if isinstance(node, Reply | Collect | Action | Decide):
            out["verify"] = _verify(node.verify, refusals, node.id)
        else:
            refusals.refuse(node.id, "verify", f"verify on a {node.kind} node", "verify a reply, collect, action "
                            "or decide node")
    nid = node.id
    if isinstance(node, Reply | Collect) and node.branches:
        out["branches"] = _branches(node, refusals)
    if isinstance(node, Reply):
        out |= {"instructions": refusals.text(node.instructions, nid, "instructions"),
                "fallback": refusals.text(node.fallback, nid, "fallback"), "context": node.context,
                "once": node.once, "tools": list(node.tools) if node.tools is not None else None, "model": node.model}
        if node.response is not None:
            out["response"] = {"template": refusals.text(node.response, nid, "response")}
        else:
            out["generate"] = True
        out |= _routed(node.next, refusals, nid, "next", "next")
    elif isinstance(node, Collect):
        slots = list(node.slots)
        ask: Any = node.ask
        if isinstance(ask, Mapping):
            ask = {name: refusals.text(text, nid, f"ask.{name}") for name, text in ask.items()}
        else:
            ask = refusals.text(ask, nid, "ask")
        out |= {"schema": _schema(node.schema), "fields": list(node.fields),
                "required": list(node.required) if list(node.required) != slots else None,
                "ask": ask, "question": refusals.text(node.question, nid, "question"),
                "prompt": refusals.text(node.prompt, nid, "prompt"),
                "instructions": refusals.text(node.instructions, nid, "instructions"),
                "max_turns": node.max_turns, "max_asks": node.max_asks,
                "resolvers": [_resolver(r) for r in node.resolvers], "verbatim_fields": list(node.verbatim_fields),
                "choices": _choices(node.choices), "model": node.model}
        out |= _routed(node.on_complete, refusals, nid, "on_complete", "next")
    elif isinstance(node, Action):
        out["on_fail"] = _ref(node.on_fail, refusals, nid, "on_fail")
        if isinstance(node.run, ToolCall | RegisteredAction):
            out |= node.run.spec.model_dump(by_alias=True, exclude={"id", "kind", "label", "output_schema",
                                                                     "on_fail"})
        elif node.run is None and node.do is not None:
            out |= {"do": node.do, "args": _mapping(node.with_) or {}}
            if not isinstance(node.then, Next) or node.then.data:
                out["next"] = _ref(node.then, refusals, nid, "then")
        else:
            refusals.refuse(nid, "run", f"the action function {getattr(node.run, '__name__', node.run)!r}",
                            "call an agent tool (tool: <name>, args, bind) or register the function and write "
                            "do: <name>")
    elif isinstance(node, Decide):
        schema = node.schema
        generated = getattr(schema, SCHEMA_ATTR, None) == {"type": "object", "properties": {}}
        keep = not ((schema is ChoiceReply and node.choices) or generated)
        out |= {"schema": _schema(schema) if keep else None,
                "instructions": refusals.text(node.instructions, nid, "instructions"),
                "prompt": refusals.text(node.prompt, nid, "prompt"), "choices": _choices(node.choices),
                "model": node.model}
        out |= _routed(node.decide, refusals, nid, "decide", "otherwise")
    elif isinstance(node, Router):
        out |= {"when": _predicate(node.when, refusals, nid, "when"),
                "then": None if isinstance(node.then, Next) and not node.then.data
                else _ref(node.then, refusals, nid, "then"),
                "else": None if node.else_ == End("end") else _ref(node.else_, refusals, nid, "else")}
    elif not isinstance(node, Wait):
        refusals.refuse(nid, "kind", f"a {node.kind!r} node",
                        "use reply, collect, action, decide, router or wait nodes")
    else:
        out |= {"timer": node.timer, "event": node.event, "up_to": node.up_to, "business_hours": node.business_hours,
                "then": None if isinstance(node.then, Next) and not node.then.data
                else _ref(node.then, refusals, nid, "then"),
                "else": _ref(node.else_, refusals, nid, "else")}
    return out


def _trigger(trigger: Any, refusals: _Refusals, index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": trigger.kind, "repeat": trigger.repeat}
    if trigger.kind in ("message", "mention"):
        out["phrases"] = list(trigger.phrases)
        if trigger.kind == "mention" and trigger.extract:
            out["extract"] = dict(trigger.extract)
    if trigger.kind in ("silence", "event"):
        out |= {"after": trigger.after, "business_hours": trigger.business_hours}
    if trigger.kind == "event":
        out["name"] = trigger.name
    if trigger.if_ is not None:
        out["if"] = _predicate(trigger.if_, refusals, None, f"on.{index}.if")
    return out


def to_spec(flow: Flow) -> dict[str, Any]:
    """``flow`` as flow-file data (the value of a file's ``flow:`` key), canonical: defaults left out.

    Raises:
        FlowDefinitionError: ``not-declarative`` for every piece of code in the flow, each naming
            the node, the option and the declarative replacement.
    """
    refusals = _Refusals(flow.id)
    for option, value, default in (("while_", flow.while_, None), ("anchor", flow.anchor, "session")):
        if value != default:
            refusals.refuse(None, option, option, f"{option} is not part of the flow-file dialect")
    if callable(flow.on_drift):
        refusals.refuse(None, "on_drift", "the on_drift migration function",
                        "write on_drift: error or restart (a migration function is Python only)")
    data: dict[str, Any] = {
        "id": flow.id, "version": flow.version, "description": flow.description, "context": flow.context,
        "max_oscillations": flow.max_oscillations, "on": [_trigger(t, refusals, i) for i, t in enumerate(flow.on)],
        "clear_on_start": list(flow.clear_on_start), "on_end": flow.on_end,
        "on_drift": flow.on_drift if not callable(flow.on_drift) else "error",
        "instructions": [refusals.text(i, None, f"instructions.{n}") for n, i in enumerate(flow.instructions)],
        "tools": list(flow.tools) if flow.tools is not None else None, "collect": list(flow.collect),
        "gates": [_gate(g, refusals, i) for i, g in enumerate(flow.gates)],
        "nodes": [_node(node, refusals) for node in flow.nodes],
    }
    if flow.start_node is not None and flow.nodes and flow.start_node is not flow.nodes[0]:
        data["start"] = flow.start_node.id
    for option in ("on_cancel", "on_skip", "on_escalate"):
        if getattr(flow, option) is not None:
            data[option] = getattr(flow, option)
    if refusals.issues:
        raise FlowDefinitionError(refusals.issues, title=f"flow {flow.id!r} cannot be written as a flow file")
    return canonical(data)


def canonical(data: Mapping[str, Any]) -> dict[str, Any]:
    """Flow-file data in canonical form (validated, defaults left out): what :func:`to_spec` gives."""
    spec = FlowSpec.model_validate(dict(data))
    return spec.model_dump(by_alias=True, exclude_defaults=True, mode="json")
