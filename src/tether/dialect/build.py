"""Building a parsed flow file into the same ``Flow`` and ``Agent`` objects Python authoring makes.

Node text (``response.template``, ``instructions``, ``ask``, ``fallback``, ...) is a ``${root.path}``
template, the engine's own syntax (:mod:`tether.templating`), rendered per turn (a missing value
is a loud :class:`~tether.errors.TemplatePlaceholderError`, as in Python authoring). What decides
at run time (routes, predicates, tool calls, registered actions) becomes a small callable object
that keeps its spec, so :func:`tether.dialect.to_spec` can give the file back.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

from tether.dialect.models import model_from_schema
from tether.dialect.predicate_text import predicate_text
from tether.dialect.registry import Registry
from tether.dialect.segments import find_segments
from tether.dialect.spec import (
    ActionSpec,
    AgentSpec,
    BranchSpec,
    ChoiceSpec,
    CollectSpec,
    DecideSpec,
    EndRef,
    EnumResolver,
    EscalateRef,
    EventTriggerSpec,
    FlowSpec,
    GateSpec,
    GotoRef,
    HandoffRef,
    JsonPathResolver,
    JudgeGateSpec,
    MentionTriggerSpec,
    MessageTriggerSpec,
    NodeSpec,
    PathSource,
    PatternResolver,
    Predicate,
    RangeResolver,
    ReplySpec,
    ResolverSpec,
    RouterSpec,
    RouteSpec,
    SilenceTriggerSpec,
    TemplateSource,
    TransitionRef,
    TriggerSpec,
    ValueSource,
    VerifySpec,
    WaitSpec,
)
from tether.dialect.values import RESULTS_KEY, evaluate, read_results, resolve_mapping, split_path
from tether.flow import (
    NEXT,
    Choice,
    Field,
    Flow,
    action,
    collect,
    decide,
    enum_check,
    jsonpath,
    on_event,
    on_mention,
    on_message,
    on_silence,
    pattern,
    range_,
    reply,
    router,
    wait,
    whole_message,
)
from tether.flow.agent_def import Compaction, Idle
from tether.flow.choices import ChoiceReply
from tether.flow.gates import Gate, GateScope, judge_gate, predicate_gate
from tether.flow.nodes import Branch, Node, Verify, branch
from tether.flow.resolvers import Resolver
from tether.flow.results import ActionResult, ReplyTurn, failed
from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Transition, stay
from tether.templating import Slot, rewrite

__all__ = ["ToolCall", "RegisteredAction", "Routes", "SpecCheck", "SpecGate", "SpecPredicate", "agent_options",
           "build_flow", "engine_template"]


def engine_template(text: str | None) -> str | None:
    """A node text for the engine: the same ``${...}`` placeholders (:mod:`tether.templating`),
    with ``${requestContext.x}`` read as ``${context.x}``."""
    if text is None:
        return None

    def convert(slot: Slot) -> str:
        parts = split_path(slot.path)
        if parts and parts[0] == "requestContext":
            parts[0] = "context"
        return "${" + ".".join(parts) + "}"

    return rewrite(text, convert)


def _engine_data(text: str) -> str:
    """A template inside a route's data or a started flow's id, for the engine: written
    ``{root.path}``, the form the digests of flows already deployed were computed from (the engine
    renders both; only node texts are read for the older form)."""

    def convert(slot: Slot) -> str:
        parts = split_path(slot.path)
        if parts and parts[0] == "requestContext":
            parts[0] = "context"
        return "{" + ".".join(parts) + "}"

    return rewrite(text, convert)


def _root(state: Mapping[str, Any], input: Any = None, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"state": dict(state), "input": input, "context": dict(context or {}),
            "results": dict(state.get(RESULTS_KEY) or {})}


def _recorded(state: Mapping[str, Any], node: str | None, result: Any) -> dict[str, Any]:
    """The state data recording ``result`` as ``results.<node>`` (nothing when ``node`` is None)."""
    if node is None:
        return {}
    if isinstance(result, ReplyTurn):
        result = result.text
    elif isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    return {RESULTS_KEY: {**dict(state.get(RESULTS_KEY) or {}), node: result}}


def _transition(ref: TransitionRef | None, root: Mapping[str, Any] | None = None) -> Any:
    """The engine target of ``ref``; a goto's ``data`` is resolved against ``root`` when given."""
    if ref is None:
        return None
    if isinstance(ref, str):
        return stay if ref == "stay" else NEXT if ref == "next" else ref
    if isinstance(ref, GotoRef):
        data = None
        if ref.data is not None:
            data = resolve_mapping(ref.data, root) if root is not None else _static_mapping(ref.data)
        return Goto(ref.goto, data, tuple(ref.clear or ()))
    if isinstance(ref, EndRef):
        return End(ref.end)
    if isinstance(ref, HandoffRef):
        return Handoff(ref.handoff, ref.reason)
    if isinstance(ref, EscalateRef):
        return Escalate(ref.escalate)
    flow_input = None
    if ref.input is not None:
        flow_input = resolve_mapping(ref.input, root) if root is not None else _static_mapping(ref.input)
    return StartFlow(_engine_data(ref.start_flow), flow_input)


def _static_mapping(mapping: Mapping[str, ValueSource | TemplateSource | PathSource]) -> dict[str, Any]:
    """A mapping the engine renders itself: values kept, templates and paths as ``{...}`` text."""
    out: dict[str, Any] = {}
    for key, source in mapping.items():
        if isinstance(source, ValueSource):
            out[key] = source.value
        elif isinstance(source, TemplateSource):
            out[key] = _engine_data(source.template)
        else:
            out[key] = _engine_data("${" + source.path + "}")
    return out


def _drawable(target: Any) -> bool:
    return not (isinstance(target, StartFlow) and "{" in target.flow)


def _with_data(target: Any, data: Mapping[str, Any] | None) -> Any:
    """``target`` carrying ``data`` into the state (where the engine can carry it)."""
    if not data:
        return target
    if target is None or isinstance(target, Next):
        return Next(dict(data))
    if isinstance(target, str) and target not in ("stay",):
        return Goto(target, dict(data))
    if isinstance(target, Goto):
        return Goto(target.target, {**dict(target.data or {}), **data}, target.clear)
    return target


def _dumps(value: Any) -> str:
    """Canonical JSON of spec objects (for the flow digest)."""
    return json.dumps(TypeAdapter(Any).dump_python(value, mode="json", by_alias=True), sort_keys=True,
                      separators=(",", ":"))


@dataclass(frozen=True)
class SpecPredicate:
    """A dialect predicate as the engine's code predicate (router ``when``, trigger ``if``)."""

    spec: Predicate
    registry: Registry

    def digest_key(self) -> str:
        return _dumps(self.spec)

    def __call__(self, ctx: Any) -> bool:
        root = _root(ctx.state, ctx.input, ctx.context)
        return evaluate(self.spec, root, self.registry.conditions)


@dataclass(frozen=True)
class SpecCheck:
    """A verify ``check``: the predicate over the state merged with the node's data."""

    spec: Predicate
    registry: Registry

    def digest_key(self) -> str:
        return _dumps(self.spec)

    def __call__(self, state: Mapping[str, Any], data: Mapping[str, Any]) -> bool:
        return evaluate(self.spec, _root({**state, **data}), self.registry.conditions)


@dataclass(frozen=True)
class SpecGate:
    """A predicate gate's ``when`` over the run record (``results`` as the flow's nodes recorded them)."""

    spec: Predicate
    registry: Registry

    def digest_key(self) -> str:
        return _dumps(self.spec)

    def __call__(self, scope: GateScope) -> bool:
        root = _root(scope.state, scope.input, scope.request_context)
        root["results"] = {**root["results"], **dict(scope.results)}
        return evaluate(self.spec, root, self.registry.conditions)


@dataclass(frozen=True)
class Routes:
    """A node's routes, tried in order, then ``default``: a reply's ``next(turn, state)``, a
    collect's ``on_complete(data, state)`` or a decide's ``decide(data, state)``.

    ``merge`` (collect, decide): the node's data joins the state the predicates read, and a
    decide's reply is carried into the state by the transition. ``record``: the node whose result
    (the reply's text, the collected values, the decision) is recorded as ``results.<node>``;
    ``assign`` (collect): ``(destination, field)`` pairs copied into the state.
    """

    routes: tuple[RouteSpec, ...]
    default: TransitionRef | None
    registry: Registry
    merge: bool = False
    carry: bool = False
    fallback: Any = None
    record: str | None = None
    assign: tuple[tuple[str, str], ...] = ()

    def digest_key(self) -> str:
        return _dumps([list(self.routes), self.default, self.merge, self.carry, repr(self.fallback), self.record,
                       [list(pair) for pair in self.assign]])

    def __call__(self, data: Any, state: Mapping[str, Any]) -> Any:
        values: dict[str, Any] = {}
        if self.merge:
            values = data.model_dump() if isinstance(data, BaseModel) else dict(data or {})
        seen = {**state, **values}
        extra = {split_path(dest)[-1]: seen.get(field) for dest, field in self.assign}
        extra |= _recorded(state, self.record, data)
        chosen = self.pick(_root({**seen, **extra}))
        return _with_data(chosen, {**values, **extra} if self.carry else extra)

    def drawn_routes(self) -> tuple[list[tuple[str, Any]], Any]:
        """For a drawn graph: each route as ``(its condition as text, its target)`` and the target
        taken when none holds (None: the node's own ``next``). A target built from the run's
        values (a ``${...}`` flow id) is left out: it is known only when the route is taken."""
        routes = [(predicate_text(route.when), _transition(route.to)) for route in self.routes]
        default = _transition(self.default)
        default = self.fallback if default is None else default
        return [(label, target) for label, target in routes if _drawable(target)], default

    def pick(self, root: Mapping[str, Any]) -> Any:
        for route in self.routes:
            if evaluate(route.when, root, self.registry.conditions):
                chosen = _transition(route.to, root)
                return Goto(chosen) if isinstance(chosen, str) else chosen
        target = _transition(self.default, root)
        target = self.fallback if target is None else target
        return Goto(target) if isinstance(target, str) else target  # code returns transitions, not ids


@dataclass(frozen=True)
class ToolCall:
    """An action node calling agent tool ``spec.tool`` with ``spec.args``; ``bind`` carries the
    result into the state; then ``routes``, else ``next``. ``approval`` asks a person first."""

    spec: ActionSpec
    routes: Routes

    def digest_key(self) -> str:
        return _dumps(self.spec)

    def drawn_routes(self) -> tuple[list[tuple[str, Any]], Any]:
        """The routes a drawn graph shows (see :meth:`Routes.drawn_routes`): a tool call goes
        nowhere else."""
        return self.routes.drawn_routes()

    async def __call__(self, state: Mapping[str, Any], ctx: Any) -> Any:
        root = _root(state, ctx.input, ctx.context)
        args = resolve_mapping(self.spec.args, root)
        if self.spec.approval:
            decision = await ctx.approve(f"call {self.spec.tool}", payload={"tool": self.spec.tool, "args": args})
            if not getattr(decision, "approved", False):
                return failed(f"{self.spec.tool} was not approved")
        result = await ctx.tool(self.spec.tool, **args)
        return _after(self.spec, self.routes, root, result)


@dataclass(frozen=True)
class RegisteredAction:
    """An action node running the registered action ``spec.do`` with ``args`` (merged over the
    state); a transition it returns wins, else ``bind``, ``routes`` and ``next`` as for a tool."""

    spec: ActionSpec
    routes: Routes
    runs_author_code = True  # the handler may return a transition of its own: drawn as "code ?" too

    def digest_key(self) -> str:
        return _dumps(self.spec)

    def drawn_routes(self) -> tuple[list[tuple[str, Any]], Any]:
        """The routes a drawn graph shows (see :meth:`Routes.drawn_routes`)."""
        return self.routes.drawn_routes()

    async def __call__(self, state: Mapping[str, Any], ctx: Any) -> Any:
        root = _root(state, ctx.input, ctx.context)
        handler = self.routes.registry.actions[self.spec.do or ""]
        result = handler({**state, **resolve_mapping(self.spec.args, root)}, ctx)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, Transition | ActionResult | Node):
            return result
        return _after(self.spec, self.routes, root, result)


def _after(spec: ActionSpec, routes: Routes, root: dict[str, Any], result: Any) -> Any:
    bound: dict[str, Any] = {}
    if isinstance(spec.bind, str):
        bound = {split_path(spec.bind)[-1]: result}
    elif spec.bind is not None:
        bound = resolve_mapping(spec.bind, {**root, "result": result})
    bound |= _recorded(root["state"], routes.record, result)
    state = {**root["state"], **bound}
    target = routes.pick({**root, "state": state, "results": dict(state.get(RESULTS_KEY) or {})})
    return _with_data(target, bound)


# --------------------------------------------------------------------------- nodes


def _choices(choices: list[ChoiceSpec | str]) -> list[Any]:
    return [c if isinstance(c, str) else Choice(c.id, c.label, c.description) for c in choices]


def _resolver(spec: ResolverSpec) -> Resolver:
    if isinstance(spec, PatternResolver):
        return pattern(spec.field, spec.regex, value=spec.value, case=spec.case, early=spec.early)
    if isinstance(spec, EnumResolver):
        return enum_check(spec.field, spec.values)
    if isinstance(spec, RangeResolver):
        return range_(spec.field, min=spec.min, max=spec.max)
    if isinstance(spec, JsonPathResolver):
        return jsonpath(spec.field, spec.path)
    return whole_message(spec.field, min_length=spec.min_length, questions=spec.questions,
                         keep_intro=spec.keep_intro)


def _model(schema: dict[str, Any] | None, flow: str, node: str, what: str) -> type[BaseModel] | None:
    if schema is None:
        return None
    name = "".join(part.capitalize() for part in f"{flow}_{node}_{what}".replace("-", "_").split("_"))
    return model_from_schema(schema, name)


def _routes(spec: Any, default: TransitionRef | None, registry: Registry, **options: Any) -> Routes:
    return Routes(tuple(spec.routes), default, registry, **options)


def _verify(spec: VerifySpec | None, flow: str, node: str, registry: Registry) -> Verify | None:
    if spec is None:
        return None
    return Verify(_model(spec.output_schema, flow, node, "verify"),
                  SpecCheck(spec.check, registry) if spec.check is not None else None)


def _branches(specs: list[BranchSpec], registry: Registry) -> list[Branch]:
    return [branch(_transition(b.then), when=b.when, if_=SpecPredicate(b.if_, registry) if b.if_ is not None else None)
            for b in specs]


def _ask(ask: str | dict[str, str] | None) -> str | dict[str, str] | None:
    if isinstance(ask, dict):
        return {name: engine_template(text) or text for name, text in ask.items()}
    return engine_template(ask)


def _gate(spec: GateSpec, registry: Registry) -> Gate:
    if isinstance(spec, JudgeGateSpec):
        return judge_gate(spec.id, inputs=spec.inputs, rubric=spec.rubric, severity=spec.severity)
    return predicate_gate(spec.id, SpecGate(spec.when, registry), severity=spec.severity)


def build_node(spec: NodeSpec, flow: str, registry: Registry, recorded: frozenset[str] = frozenset()) -> Node:
    """The node ``spec`` describes; a node in ``recorded`` (read by the flow as ``results.<id>``)
    records its result."""
    output = _model(spec.output_schema, flow, spec.id, "output")
    record = spec.id if spec.id in recorded else None
    if isinstance(spec, ReplySpec):
        next_: Any = (_routes(spec, spec.next, registry, fallback=stay, record=record) if spec.routes or record
                      else _transition(spec.next))
        return reply(spec.id, instructions=engine_template(spec.instructions),
                     response=engine_template(spec.response.template) if spec.response else None,
                     context=spec.context, next=next_, once=spec.once, tools=spec.tools, model=spec.model,
                     fallback=engine_template(spec.fallback), output_schema=output, label=spec.label,
                     verify=_verify(spec.verify, flow, spec.id, registry), branches=_branches(spec.branches, registry))
    if isinstance(spec, CollectSpec):
        assign = tuple((spec.assign or {}).items())
        on_complete: Any = (_routes(spec, spec.next, registry, merge=True, fallback=NEXT, record=record, assign=assign)
                            if spec.routes or record or assign else _transition(spec.next))
        return collect(spec.id, schema=_model(spec.schema_, flow, spec.id, "schema"), fields=spec.fields,
                       required=spec.required, ask=_ask(spec.ask), question=engine_template(spec.question),
                       prompt=engine_template(spec.prompt), instructions=engine_template(spec.instructions),
                       max_turns=spec.max_turns, max_asks=spec.max_asks,
                       resolvers=[_resolver(r) for r in spec.resolvers], verbatim_fields=spec.verbatim_fields,
                       on_complete=on_complete, model=spec.model, choices=_choices(spec.choices),
                       output_schema=output, label=spec.label, verify=_verify(spec.verify, flow, spec.id, registry),
                       branches=_branches(spec.branches, registry))
    if isinstance(spec, ActionSpec):
        routes = _routes(spec, spec.next, registry, record=record)
        run: Any = ToolCall(spec, routes) if spec.tool is not None else RegisteredAction(spec, routes)
        built: Node = action(spec.id, run, on_fail=_transition(spec.on_fail),
                             uses=[spec.tool] if spec.tool is not None else [], output_schema=output, label=spec.label,
                             verify=_verify(spec.verify, flow, spec.id, registry))
        return built
    if isinstance(spec, DecideSpec):
        schema = _model(spec.schema_, flow, spec.id, "schema")
        if schema is None:
            schema = ChoiceReply if spec.choices else model_from_schema({"type": "object", "properties": {}},
                                                                        f"{flow}_{spec.id}_decision")
        decider = _routes(spec, spec.otherwise, registry, merge=True, carry=True, fallback=stay, record=record)
        return decide(spec.id, schema=schema, decide=decider, instructions=engine_template(spec.instructions),
                      model=spec.model, choices=_choices(spec.choices), prompt=engine_template(spec.prompt),
                      output_schema=output, label=spec.label, verify=_verify(spec.verify, flow, spec.id, registry))
    if isinstance(spec, RouterSpec):
        return router(spec.id, when=SpecPredicate(spec.when, registry),
                      then=_transition(spec.then) if spec.then is not None else NEXT,
                      else_=_transition(spec.else_), label=spec.label)
    assert isinstance(spec, WaitSpec)
    return wait(spec.id, timer=spec.timer, event=spec.event, up_to=spec.up_to, business_hours=spec.business_hours,
                then=_transition(spec.then) if spec.then is not None else NEXT, else_=_transition(spec.else_),
                label=spec.label)


def _trigger(spec: TriggerSpec, registry: Registry) -> Any:
    if_ = SpecPredicate(spec.if_, registry) if spec.if_ is not None else None
    repeat: Any = spec.repeat
    if isinstance(spec, MessageTriggerSpec):
        return on_message(*spec.phrases, repeat=repeat, if_=if_)
    if isinstance(spec, MentionTriggerSpec):
        return on_mention(*spec.phrases, extract=dict(spec.extract) if spec.extract else None, repeat=repeat,
                          if_=if_)
    if isinstance(spec, SilenceTriggerSpec):
        return on_silence(spec.after, repeat=repeat, if_=if_, business_hours=spec.business_hours)
    assert isinstance(spec, EventTriggerSpec)
    return on_event(spec.name, after=spec.after, repeat=repeat, if_=if_, business_hours=spec.business_hours)


def build_flow(spec: FlowSpec, registry: Registry | None = None) -> Flow:
    """The ``Flow`` a parsed flow spec describes (validate it first: see :func:`tether.dialect.validate`).

    Raises:
        FlowDefinitionError: what the flow's own validation finds.
    """
    registry = registry or Registry()
    recorded = read_results(spec.model_dump(by_alias=True, mode="json"))
    nodes = [build_node(node, spec.id, registry, recorded) for node in spec.nodes]
    by_id = {node.id: node for node in nodes}
    start = by_id.get(spec.start, nodes[0]) if spec.start is not None else nodes[0]
    flow = Flow(spec.id, spec.description, start=start, nodes=nodes, context=spec.context,
                max_oscillations=spec.max_oscillations, on=[_trigger(t, registry) for t in spec.on],
                clear_on_start=spec.clear_on_start, on_end=spec.on_end, on_drift=spec.on_drift,
                instructions=[engine_template(i) for i in spec.instructions], tools=spec.tools,
                collect=spec.collect, version=spec.version, gates=[_gate(g, registry) for g in spec.gates],
                on_cancel=spec.on_cancel, on_skip=spec.on_skip,
                on_escalate=spec.on_escalate)
    flow.segments = find_segments(spec)
    return flow


def agent_options(spec: AgentSpec, registry: Registry | None = None) -> dict[str, Any]:
    """The ``Agent`` keyword arguments a parsed agent spec describes (its flows built)."""
    registry = registry or Registry()
    tools = registry.tools_by_name
    fields = {name: Field(f.type, tuple(f.enum) if f.enum is not None else None, f.items, f.description, f.label,
                          f.ask, f.extract, f.reuse, f.allow_empty) for name, f in spec.fields.items()}
    compaction = Compaction(**spec.compaction.model_dump()) if spec.compaction is not None else None
    chosen = spec.tools if spec.tools is not None else list(tools)
    idle: Idle | str | None = spec.idle
    if spec.idle_tools and spec.idle != "silent":
        idle = Idle(prompt=spec.idle or "", tools=tuple(spec.idle_tools))
    return {"persona": spec.persona, "goal": spec.goal, "knowledge": spec.knowledge,
            "instructions": list(spec.instructions), "fields": fields,
            "flows": [build_flow(f, registry) for f in spec.flows],
            "tools": [tools[name] for name in chosen if name in tools], "idle": idle,
            "history_window": spec.history_window, "compaction": compaction, "failure_reply": spec.failure_reply}
