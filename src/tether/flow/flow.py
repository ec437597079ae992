"""``Flow``: a validated graph of typed nodes.

The graph is data: it is validated when the flow is built (a malformed flow fails at definition,
never mid-conversation), it has a stable digest that parked runs are pinned to, and the same data
draws the mermaid diagram.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from tether.errors import DefinitionIssue, FlowDefinitionError, TransitionError
from tether.flow.choices import choice_problems
from tether.flow.durations import parse_duration
from tether.flow.gates import GATE_ROOTS, Gate, JudgeGate, PredicateGate
from tether.flow.hints import did_you_mean
from tether.flow.mermaid import flow_to_mermaid
from tether.flow.nodes import (
    CONTEXT_STRATEGIES,
    Action,
    Branch,
    Collect,
    ContextStrategy,
    Decide,
    Node,
    Reply,
    Verify,
    Wait,
)
from tether.flow.old_forms import mixed_templates, warn_old_forms
from tether.flow.options import callable_name, is_model_class
from tether.flow.resolvers import Resolver
from tether.flow.steps import step_problems
from tether.flow.transitions import (
    End,
    Escalate,
    Goto,
    Handoff,
    Next,
    StartFlow,
    Stay,
    Transition,
    is_code,
    normalize,
)
from tether.flow.triggers import Trigger, trigger_problems
from tether.templating import normal_form

__all__ = ["DriftMigration", "Flow", "OnDrift", "OnEnd"]

OnEnd = Literal["end", "stay", "reset"]

DriftMigration = Callable[[str | None, dict[str, Any]], str]
"""``migrate(node_id, state) -> node_id``: where a run pinned to an older definition of the flow
goes on in the new one (``state`` is the run's own state, which it may change in place)."""

OnDrift = Literal["error", "restart"] | DriftMigration
"""What a run pinned to another definition of its flow does when it cannot continue at its node
(the node is gone, its kind changed, or an unfinished action's journal no longer matches; a run
that can, continues: ``flow-drift-continued``): ``error`` (raise ``FlowDriftError``, the default),
``restart`` (the run starts over at the flow's start), or a :data:`DriftMigration`."""

RESERVED_IDS = frozenset({"end", "stay"})


class Flow:
    """A flow: a directed graph of typed nodes.

    Args:
        id: the flow id, unique in its agent.
        description: what the flow is for (the understand call reads it when routing).
        start: the entry node (default: the first node); must be a registered node.
        nodes: every node of the flow, in order (order gives ``NEXT`` its meaning).
        context: the flow's context strategy (``append``, ``reset``, ``reset_with_summary``).
        max_oscillations: how many times one ``from -> to`` edge may be traversed in one turn; one
            more degrades the run (an ``error`` event, the failure reply, ``escalate`` or
            ``error_degraded``).
        gates: post-run verification gates.
        on: triggers (see ``tether.flow.triggers``); none means manual start only.
        while_: the premise re-checked before the run moves (default: the trigger's ``if_``).
        clear_on_start: agent fields deleted when a run starts.
        on_end: ``end`` (default), ``stay`` (keep answering from the last talk node) or
            ``reset`` (start over, one hop further).
        on_drift: what a run pinned to another definition of this flow does when it cannot
            continue at its node (see :data:`OnDrift`; default ``error``: ``FlowDriftError`` naming
            both digests and why). A run whose node still exists with the same kind continues.
        instructions: flow-level instructions for the speak call.
        tools: names of agent tools this flow's model steps may call when a reply declares none
            (default: none).
        collect: agent fields the flow needs (the understand call may harvest them).
        anchor: ``session`` or a host anchor name that keys runs and claims.
        version: the author's version label (``flow@version``; flow files set it). Runs are
            pinned to the digest, not to this label.
        on_cancel: the node a cancel by the customer goes to (the flow's own cancel step);
            default: the built-in cancel (see :class:`tether.flow.repair.Repair`).
        cancellable: ``False``: the customer cannot cancel this flow's run.
        on_skip: the node a step goes to when the customer cannot answer it ("I don't know my
            order number"); default: a hand-off to a person, saying so.
        on_escalate: the node a step goes to instead of handing the conversation to a person when
            it escalates (``max_turns`` spent, ``Repair.cannot_handle_limit`` answers not
            understood, ``escalate(...)``): for an agent with nobody to hand over to; default: the
            hand-off.

    Attributes:
        digest: ``sha256:...`` of the flow's structure (nodes with their kinds and options,
            static transitions, fields, schemas, tools, gates); a function counts by its qualified
            name, never by the module or file it was imported from. Runs are pinned to it.
        segments: node id -> the chain of ``generate`` replies (that node first) one model call
            speaks for when a run reaches it. Filled by :mod:`tether.dialect` for flow files
            (see :mod:`tether.dialect.segments`); always empty for Python flows, whose ``next``
            cannot be proven unconditional. Derived from the nodes, so not part of the digest.

    Raises:
        FlowDefinitionError: with every problem found, each with a stable code.
    """

    def __init__(
        self,
        id: str,
        description: str = "",
        start: Node | None = None,
        nodes: Sequence[Node] = (),
        *,
        context: ContextStrategy | None = None,
        max_oscillations: int = 2,
        gates: Sequence[Gate] = (),
        on: Sequence[Trigger] = (),
        while_: Any = None,
        clear_on_start: Sequence[str] = (),
        on_end: OnEnd = "end",
        instructions: Sequence[Any] | str = (),
        tools: Sequence[str] | None = None,
        collect: Sequence[str] = (),
        anchor: str = "session",
        name: str | None = None,
        on_drift: OnDrift = "error",
        version: str | None = None,
        on_cancel: str | None = None,
        cancellable: bool = True,
        on_skip: str | None = None,
        on_escalate: str | None = None,
    ) -> None:
        self.id = id
        self.name = name or id
        self.description = description
        listed = isinstance(nodes, Iterable) and not isinstance(nodes, str | bytes | Mapping | Node)
        self._nodes_given = None if listed else (nodes,)
        self.nodes: tuple[Node, ...] = tuple(nodes) if listed else ()
        self.start_node = start if start is not None else (self.nodes[0] if self.nodes else None)
        self.context = context
        self.max_oscillations = max_oscillations
        self.gates: tuple[Gate, ...] = tuple(gates)
        self.on: tuple[Trigger, ...] = tuple(on)
        self.while_ = while_
        self.clear_on_start = tuple(clear_on_start)
        self.on_end: OnEnd = on_end
        self.instructions: tuple[Any, ...] = (instructions,) if isinstance(instructions, str) else tuple(instructions)
        self.tools = tuple(tools) if tools is not None else None
        self.collect = tuple(collect)
        self.anchor = anchor
        self.by_id: dict[str, Node] = {}
        for node in self.nodes:
            self.by_id.setdefault(getattr(node, "id", ""), node)
        self.on_drift: OnDrift = on_drift
        self.version = version
        self.on_cancel = on_cancel
        """The node a cancel goes to (the author's own cancel step), instead of the built-in cancel."""
        self.cancellable = cancellable
        """Whether the customer may cancel this flow's run (the cancel repair pattern)."""
        self.on_skip = on_skip
        """The node a step goes to when the customer cannot answer it ("I don't know"), instead of
        a hand-off to a person."""
        self.on_escalate = on_escalate
        """The node an escalating step goes to, instead of a hand-off to a person."""
        self.segments: Mapping[str, tuple[str, ...]] = {}
        issues = self._validate(start)
        if on_drift not in ("error", "restart") and not callable(on_drift):
            issues.append(DefinitionIssue("invalid-on-drift", f"flow {id!r}: on_drift must be 'error', 'restart' or "
                                                              f"a migration function, not {on_drift!r}"))
        if issues:
            raise FlowDefinitionError(issues, title=f"Flow {id!r} failed validation with {len(issues)} issue(s)")
        self.digest = self._digest()
        warn_old_forms(self)

    # ------------------------------------------------------------------ queries

    @property
    def start(self) -> str:
        """The id of the entry node."""
        assert self.start_node is not None
        return self.start_node.id

    def node(self, node_id: str) -> Node:
        """The node with this id (KeyError if none)."""
        return self.by_id[node_id]

    def next_after(self, node_id: str) -> str | None:
        """The id of the node declared after ``node_id``, or None after the last."""
        ids = [n.id for n in self.nodes]
        index = ids.index(node_id)
        return ids[index + 1] if index + 1 < len(ids) else None

    def resolve_static(self, node_id: str, target: Any) -> Transition:
        """Turn a static target of node ``node_id`` into a transition (``NEXT`` resolved)."""
        if isinstance(target, Next):
            following = self.next_after(node_id)
            return Goto(following, target.data) if following is not None else End("end")
        if isinstance(target, str):
            if target == "end":
                return End("end")
            if target == "stay":
                return Stay()
            return Goto(target)
        if isinstance(target, Node):
            return Goto(target.id)
        if isinstance(target, Mapping):
            return normalize(target, flow=self.id, node=node_id, nodes=self.by_id)
        assert isinstance(target, Goto | End | Handoff | Escalate | StartFlow | Stay)
        return target

    def to_mermaid(self) -> str:
        """The flow's graph as a mermaid ``flowchart``."""
        return flow_to_mermaid(self)

    def __repr__(self) -> str:
        return f"Flow({self.id!r}, nodes={[n.id for n in self.nodes]})"

    # ------------------------------------------------------------------ validation

    def _validate(self, start_arg: Any) -> list[DefinitionIssue]:
        issues: list[DefinitionIssue] = []

        def issue(code: str, message: str, *, node: str | None = None, path: str | None = None,
                  hint: str | None = None) -> None:
            issues.append(DefinitionIssue(code, message, flow=self.id, node=node, path=path, hint=hint))

        if not isinstance(self.id, str) or not self.id.strip():
            issue("invalid-flow-id", "a flow needs a non-empty string id", path="id")
        if not isinstance(self.max_oscillations, int) or self.max_oscillations < 1:
            issue("invalid-option", f"max_oscillations must be a positive integer, got {self.max_oscillations!r}",
                  path="max_oscillations")
        if self.context is not None and self.context not in CONTEXT_STRATEGIES:
            issue("invalid-option", f"context must be one of {', '.join(CONTEXT_STRATEGIES)}, got {self.context!r}",
                  path="context", hint=did_you_mean(self.context, CONTEXT_STRATEGIES))
        if self.on_end not in ("end", "stay", "reset"):
            issue("invalid-option", f"on_end must be 'end', 'stay' or 'reset', got {self.on_end!r}", path="on_end",
                  hint=did_you_mean(self.on_end, ("end", "stay", "reset")))
        if self._nodes_given is not None:
            issue("invalid-node", f"nodes must be a list of nodes, got {_describe(self._nodes_given[0])}", path="nodes")
            return issues
        if not self.nodes:
            issue("missing-start", "a flow needs at least one node", path="nodes")
            return issues

        seen: set[str] = set()
        for i, node in enumerate(self.nodes):
            if not isinstance(node, Node):
                issue("invalid-node", f"nodes[{i}] is {node!r}, not a node (use reply, collect, action, ...)",
                      path=f"nodes.{i}")
                continue
            if node.id in seen:
                issue("duplicate-node-id", f"node id {node.id!r} is used more than once", node=node.id,
                      path=f"nodes.{i}.id")
            seen.add(node.id)
            if not isinstance(node.id, str) or not node.id.strip():
                issue("invalid-node-id", "a node needs a non-empty string id", path=f"nodes.{i}.id")
            elif node.id in RESERVED_IDS:
                issue("reserved-node-id", f"{node.id!r} is reserved and cannot be a node id", node=node.id,
                      path=f"nodes.{i}.id")
            for problem_path, message in _node_problems(node):
                issue("invalid-option", message, node=node.id, path=f"nodes.{i}.{problem_path}")
            for option, target in node.static_targets():
                self._check_target(node, i, option, target, issue)
            for k, target in enumerate(node.targets):
                self._check_target(node, i, f"targets.{k}", target, issue)
            if node.targets and not node.is_opaque():
                issue("invalid-option", "targets lists where a transition made in code may go, and this node makes "
                      "none (its next node is static)", node=node.id, path=f"nodes.{i}.targets")
            for option in ("next", "on_complete", "decide"):
                fn = getattr(node, option, None)
                static = isinstance(fn, str | Node | Transition | Mapping) and option != "decide"
                if fn is not None and not is_code(fn) and not static:
                    expected = "a function" if option == "decide" else "a function or a transition target"
                    issue("unresolved-transition", f"{option} is {_describe(fn)}, not {expected}", node=node.id,
                          path=f"nodes.{i}.{option}")
                if is_code(fn) and not isinstance(fn, Node) and _is_thunk(fn):
                    issue("inline-transition-target",
                          f"{option} is a zero-argument callable (a thunk); return a registered node or goto(id) "
                          "from a function of the turn and state instead", node=node.id, path=f"nodes.{i}.{option}")

        if callable(start_arg) and not isinstance(start_arg, Node):
            issue("inline-transition-target", "start is a thunk; pass the registered start node itself", path="start")
        elif self.start_node is None or self.by_id.get(getattr(self.start_node, "id", "")) is not self.start_node:
            issue("missing-start", f"start node {getattr(self.start_node, 'id', self.start_node)!r} is not one of "
                  "the flow's nodes", path="start")

        gate_ids: set[str] = set()
        for i, gate in enumerate(self.gates):
            if not isinstance(gate, PredicateGate | JudgeGate):
                issue("invalid-gate", f"gates[{i}] is not a gate", path=f"gates.{i}")
                continue
            if gate.id in gate_ids:
                issue("invalid-gate", f"gate id {gate.id!r} is used more than once", path=f"gates.{i}.id")
            gate_ids.add(gate.id)
            if gate.severity not in ("blocking", "advisory"):
                issue("invalid-gate", f"severity must be 'blocking' or 'advisory', got {gate.severity!r}",
                      path=f"gates.{i}.severity")
            if isinstance(gate, JudgeGate):
                for path in gate.inputs:
                    if path.split(".")[0] not in GATE_ROOTS:
                        issue("invalid-predicate-reference", f"judge input {path!r} must start with one of "
                              f"{', '.join(GATE_ROOTS)}", path=f"gates.{i}.inputs")
        for i, trig in enumerate(self.on):
            for message in trigger_problems(trig):
                issue("invalid-trigger", message, path=f"on.{i}")
        for node_id, path, message in step_problems(self.nodes):
            issue("invalid-option", message, node=node_id, path=path)
        for node_id, option, message in mixed_templates(self.nodes):
            issue("ambiguous-template", message, node=node_id, path=option)

        for option in ("on_cancel", "on_skip", "on_escalate"):
            target = getattr(self, option)
            if target is not None and target not in self.by_id:
                issue("unresolved-transition", f"{option} names {target!r}, which is not a node of this flow",
                      path=option)
        if not isinstance(self.cancellable, bool):
            issue("invalid-option", f"cancellable must be True or False, got {self.cancellable!r}", path="cancellable")
        if not issues:
            for node_id in self._unreachable():
                issue("unreachable-node", f"node {node_id!r} cannot be reached from start {self.start!r}",
                      node=node_id, path=f"nodes.{[n.id for n in self.nodes].index(node_id)}")
        return issues

    def _check_target(self, node: Node, index: int, option: str, target: Any,
                      issue: Callable[..., None]) -> None:
        path = f"nodes.{index}.{option}"
        if isinstance(target, Mapping):  # the seed's forms: {"goto": id, "data": ...}, {"end": reason}, ...
            try:
                target = normalize(target, flow=self.id, node=node.id, nodes=self.by_id)
            except TransitionError as exc:
                issue(exc.code if exc.code == "inline-transition-target" else "unresolved-transition",
                      f"{option} is {_describe(target)}, which is not a transition of this flow", node=node.id,
                      path=path)
                return
        if isinstance(target, StartFlow) and (not isinstance(target.flow, str) or not target.flow.strip()):
            issue("unresolved-transition", f"{option} starts flow {_describe(target.flow)}; start_flow needs a flow "
                  "id (or a template such as '{input.topic}')", node=node.id, path=path)
            return
        if isinstance(target, Next | End | Handoff | Escalate | StartFlow | Stay):
            return
        if isinstance(target, Goto):
            if target.data is not None and not isinstance(target.data, Mapping):
                issue("unresolved-transition", f"{option} merges data {_describe(target.data)}, which is not a "
                      "mapping", node=node.id, path=path)
                return
            if target.node is not None:
                target = target.node  # goto(node): the node object itself must be the registered one
            elif not isinstance(target.target, str) or target.target in RESERVED_IDS:
                reserved = target.target in RESERVED_IDS
                hint = f"; {target.target!r} is reserved: use {target.target}() instead" if reserved else ""
                issue("unresolved-transition", f"{option} is goto({_describe(target.target)}), which names no "
                      f"node{hint}", node=node.id, path=path)
                return
            else:
                target = target.target
        if isinstance(target, str):
            if target not in self.by_id and target not in RESERVED_IDS:
                issue("unresolved-transition", f"{option} names {target!r}, which is not a node of the flow",
                      node=node.id, path=path, hint=did_you_mean(target, self.by_id))
            return
        if isinstance(target, Node):
            if self.by_id.get(target.id) is not target:
                issue("inline-transition-target", f"{option} targets node {target.id!r}, which is not registered in "
                      "the flow's nodes (define it once and list it in nodes)", node=node.id, path=path)
            return
        if is_code(target):
            issue("inline-transition-target", f"{option} is a callable; static targets must be a node id, a "
                  "registered node or a transition", node=node.id, path=path)
            return
        issue("unresolved-transition", f"{option} is {_describe(target)}, not a transition target", node=node.id,
              path=path)

    def _successors(self, node: Node) -> list[str]:
        found: list[str] = []
        for target in [t for _, t in node.static_targets()] + list(node.targets):
            if isinstance(target, Next):
                following = self.next_after(node.id)
                if following:
                    found.append(following)
            elif isinstance(target, str) and target in self.by_id:
                found.append(target)
            elif isinstance(target, Goto):
                found.append(target.target)
            elif isinstance(target, Node):
                found.append(target.id)
            elif isinstance(target, Mapping) and isinstance(target.get("goto"), str):
                found.append(target["goto"])
        return [node_id for node_id in found if node_id in self.by_id]

    def _unreachable(self) -> list[str]:
        reached: set[str] = set()
        todo = [self.start, *(t for t in (self.on_cancel, self.on_skip, self.on_escalate) if t)]
        while todo:
            node_id = todo.pop()
            if node_id in reached:
                continue
            reached.add(node_id)
            node = self.by_id[node_id]
            if node.is_opaque() and not node.targets:
                return []  # code decides where it goes, and did not say where: anything may be reached
            todo.extend(self._successors(node))
        return [n.id for n in self.nodes if n.id not in reached]

    def _digest(self) -> str:
        description = {
            "id": self.id,
            "start": self.start,
            "context": self.context,
            "max_oscillations": self.max_oscillations,
            "on_end": self.on_end,
            "nodes": [_normal_texts(node.describe()) for node in self.nodes],
            "gates": [_describe_gate(g) for g in self.gates],
        }
        canonical = json.dumps(description, sort_keys=True, separators=(",", ":"), default=_digest_value)
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


_TEXT_OPTIONS = ("response", "fallback", "instructions", "ask", "prompt", "question")


def _normal_texts(described: dict[str, Any]) -> dict[str, Any]:
    """A node's description with the placeholders of its texts in one form
    (:func:`tether.templating.normal_form`): ``{name}``, ``${name}`` and a flow file's
    ``${state.name}`` as they were before the one syntax, so rewriting a text in it is not a new
    version of the flow."""

    def normal(value: Any) -> Any:
        if isinstance(value, str):
            return normal_form(value)
        if isinstance(value, Mapping):
            return {key: normal(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [normal(item) for item in value]
        return value

    return {key: normal(value) if key in _TEXT_OPTIONS else value for key, value in described.items()}


def _digest_value(value: Any) -> Any:
    """A value the description holds that JSON has no form for (a transition's data, an option):
    a callable by its name (a function's repr names its module and address), anything else by repr."""
    return callable_name(value) if callable(value) else repr(value)


def _describe_gate(gate: Gate) -> dict[str, Any]:
    described: dict[str, Any] = {"id": gate.id, "kind": gate.kind, "severity": gate.severity}
    if isinstance(gate, JudgeGate):
        described |= {"inputs": list(gate.inputs), "rubric": gate.rubric}
    else:
        described["when"] = callable_name(gate.when)  # a gate built from a flow file names its predicate
    return described


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_thunk(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) and len(params) == 0


def _option_type_problems(node: Node) -> list[tuple[str, str]]:
    """Options of the wrong type, found when the flow is built rather than mid-conversation."""
    problems: list[tuple[str, str]] = []

    def expect(option: str, ok: bool, what: str) -> None:
        if not ok:
            problems.append((option, f"{option} must be {what}, got {_describe(getattr(node, option))}"))

    text_or_function = (str, type(None))
    expect("output_schema", node.output_schema is None or is_model_class(node.output_schema), "a pydantic model class")
    expect("verify", node.verify is None or isinstance(node.verify, Verify), "a Verify(...)")
    if isinstance(node, Reply):
        for option in ("instructions", "response", "fallback"):
            value = getattr(node, option)
            expect(option, isinstance(value, text_or_function) or callable(value), "text or a function of the state")
        expect("tools", node.tools is None or all(isinstance(t, str) for t in node.tools), "a list of tool names")
    if isinstance(node, Reply | Collect):
        expect("branches", all(isinstance(b, Branch) for b in node.branches), "a list of branch(...)")
    if isinstance(node, Collect | Decide):
        expect("schema", (node.schema is None and isinstance(node, Collect)) or is_model_class(node.schema),
               "a pydantic model class")
    if isinstance(node, Collect):
        expect("fields", all(isinstance(f, str) for f in node.fields), "a list of field names")
        expect("resolvers", all(isinstance(r, Resolver) for r in node.resolvers), "a list of resolvers")
        expect("ask", isinstance(node.ask, (*text_or_function, Mapping)) or callable(node.ask),
               "text, a mapping of field to text, or ask(missing, state)")
        for option in ("question", "prompt"):
            expect(option, isinstance(getattr(node, option), text_or_function), "text")
    if isinstance(node, Action):
        expect("run", node.run is None or callable(node.run), "a function run(state, ctx)")
        expect("do", isinstance(node.do, text_or_function), "the name of an agent action")
    if isinstance(node, Wait):
        expect("event", isinstance(node.event, text_or_function), "an event name")
    return problems


def _node_problems(node: Node) -> list[tuple[str, str]]:
    problems = _option_type_problems(node)
    if problems:
        return problems  # the checks below read these options
    if isinstance(node, Reply):
        if node.instructions is not None and node.response is not None:
            problems.append(("response", "a reply has either instructions (a model turn) or a response "
                             "(engine-rendered), not both"))
        if node.context is not None and node.context not in CONTEXT_STRATEGIES:
            choices = ", ".join(CONTEXT_STRATEGIES)
            problems.append(("context", f"context must be one of {choices}, got {node.context!r}"))
    if isinstance(node, Collect):
        slots = node.slots
        if not slots:
            problems.append(("schema", "a collect node needs a schema or fields to gather"))
        for name in node.required:
            if name not in slots:
                problems.append(("required", f"required field {name!r} is not gathered by this node"))
        for name in node.verbatim_fields:
            if name not in slots:
                problems.append(("verbatim_fields", f"verbatim field {name!r} is not gathered by this node"))
        for resolver in node.resolvers:
            if isinstance(resolver, Resolver) and resolver.field not in slots:
                problems.append(("resolvers", f"unknown field {resolver.field!r} (fields: {', '.join(slots)})"))
        if not isinstance(node.max_turns, int) or node.max_turns < 1:
            problems.append(("max_turns", f"max_turns must be a positive integer, got {node.max_turns!r}"))
        if not isinstance(node.max_asks, int) or node.max_asks < 1:
            problems.append(("max_asks", f"max_asks must be a positive integer, got {node.max_asks!r}"))
        if isinstance(node.ask, Mapping):
            for name in node.ask:
                if name not in slots:
                    problems.append(("ask", f"ask names field {name!r}, which this node does not gather"))
    if isinstance(node, Collect | Decide) and node.choices:
        problems.extend(("choices", message) for message in choice_problems(node.choices))
        if isinstance(node, Collect) and len(node.slots) != 1:
            problems.append(("choices", f"choices fill one field, and this node gathers {len(node.slots)}"))
        if isinstance(node, Decide) and "choice" not in getattr(node.schema, "model_fields", {}):
            problems.append(("schema", "a decide node with choices needs a schema with a 'choice' field "
                             "(leave schema out to get {choice: str})"))
    if isinstance(node, Wait):
        if (node.timer is None) == (node.event is None):
            problems.append(("timer", "a wait node needs exactly one of timer or event"))
        for option, value in (("timer", node.timer), ("up_to", node.up_to)):
            if value is not None:
                try:
                    parse_duration(value)
                except ValueError as exc:
                    problems.append((option, str(exc)))
    return problems
