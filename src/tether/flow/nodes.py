"""The node kinds a flow is built from, and their constructors.

Every node has an ``id`` and optionally ``output_schema`` / ``verify`` (checked before a ``goto``
out of the node commits). What each kind does when the engine dispatches it:

- ``reply``: a model turn with ``instructions``, or an authored ``response`` rendered by the
  engine with no model call. ``next(turn, state)`` (or a static target) picks the transition;
  ``stay`` when absent.
- ``collect``: gathers fields (a pydantic ``schema`` kept in the run's state, and/or agent
  ``fields`` kept session-wide) with tier-0 resolvers and one non-speaking extraction call, asks
  deterministically (``ask``) or lets the model phrase the question (``prompt``), then calls
  ``on_complete(data, state)``.
- ``action``: your ``run(state, ctx)``; no model call. Returns a transition, an action result
  (``ok``/``skipped``/``failed``/``defer``) or ``None`` (take ``then``).
- ``decide``: one structured model call against ``schema``; ``decide(data, state)`` branches.
- ``router``: a code predicate or JSON condition picks ``then`` or ``else_``; no model call.
- ``wait``: parks the run on a timer or until an event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, overload

from pydantic import BaseModel

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.choices import Choice, ChoiceReply, as_choices
from tether.flow.options import callable_name, is_model_class, listed, tool_names
from tether.flow.resolvers import Resolver
from tether.flow.transitions import NEXT, End, Next, Transition, stay

__all__ = [
    "Action",
    "Branch",
    "Collect",
    "ContextStrategy",
    "Decide",
    "Node",
    "Reply",
    "Router",
    "Target",
    "Verify",
    "Wait",
    "action",
    "branch",
    "collect",
    "decide",
    "reply",
    "router",
    "wait",
]

ContextStrategy = Literal["append", "reset", "reset_with_summary"]
CONTEXT_STRATEGIES: tuple[str, ...] = ("append", "reset", "reset_with_summary")

Target = Any
"""A static transition target: a node id, a registered node, ``"end"``, or a transition object."""

Tier = Literal["default", "small", "deep"]


@dataclass(frozen=True)
class Verify:
    """Checks a node's output before a ``goto`` out of it commits.

    ``output_schema`` validates the merged ``{**state, **data}``; ``check(state, data)`` is a
    predicate over the same, and ``check(state, data, steps)`` also reads the durable step log of
    the dispatch it checks (``steps``: the journal entries of the node's visit, in order: a tool
    call's request and result, an approval...). On failure the run holds its position and awaits
    the user.
    """

    output_schema: type[BaseModel] | None = None
    check: Callable[..., bool] | None = None


@dataclass(frozen=True)
class Branch:
    """A branch of a talk node, judged while the node is asking: ``when`` (text the understand
    call judges true/false) or ``if_`` (a code predicate or JSON condition). The first true
    branch takes ``then``."""

    then: Any
    when: str | None = None
    if_: Any = None


def branch(then: Any, *, when: str | None = None, if_: Any = None) -> Branch:
    """A branch of a reply/collect node: ``when`` judged by the model, or ``if_`` by code."""
    return Branch(then, when, if_)


@dataclass(eq=False, kw_only=True)
class Node:
    """Base of every node kind."""

    kind: ClassVar[str] = "node"

    id: str
    output_schema: type[BaseModel] | None = None
    verify: Verify | None = None
    label: str | None = None
    targets: tuple[Target, ...] = ()  # where a transition made in code may go (checked, drawn dashed)

    def static_targets(self) -> list[tuple[str, Target]]:
        """The statically known targets, as ``(option, target)`` pairs."""
        return []

    def is_opaque(self) -> bool:
        """True when code decides the next node (it could go anywhere)."""
        return False

    def describe(self) -> dict[str, Any]:
        """A stable, JSON-able description of the node's definition (for the flow digest)."""
        verify = None
        if self.verify is not None:
            verify = {"output_schema": _schema_name(self.verify.output_schema),
                      "check": callable_name(self.verify.check)}
        described = {"id": self.id, "kind": self.kind, "output_schema": _schema_name(self.output_schema),
                     "verify": verify, "model": getattr(self, "model", None)}
        return described | ({"targets": [_target_repr(t) for t in self.targets]} if self.targets else {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"


def _schema_name(schema: type[BaseModel] | None) -> Any:
    return None if schema is None else schema.model_json_schema()


def _target_repr(target: Target) -> Any:
    if target is None or isinstance(target, str):
        return target
    if isinstance(target, Node):
        return {"node": target.id}
    if callable(target) and not isinstance(target, Transition):
        return {"callable": callable_name(target)}
    return repr(target)


@dataclass(eq=False, kw_only=True)
class Reply(Node):
    """A model turn (``instructions``) or an engine-rendered ``response``."""

    kind: ClassVar[str] = "reply"

    instructions: str | Callable[[Mapping[str, Any]], str] | None = None
    response: str | Callable[[Mapping[str, Any]], str] | None = None
    context: ContextStrategy | None = None
    next: Any = None
    once: bool = False
    tools: tuple[str, ...] | None = None
    model: Tier | None = None
    branches: tuple[Branch, ...] = ()
    fallback: str | Callable[[Mapping[str, Any]], str] | None = None

    def static_targets(self) -> list[tuple[str, Target]]:
        targets = _branch_targets(self.branches)
        if self.next is None:
            return [("next", stay), *targets]
        if _is_static(self.next):
            return [("next", self.next), *targets]
        return targets

    def is_opaque(self) -> bool:
        return self.next is not None and not _is_static(self.next)

    @property
    def rendered_by_engine(self) -> bool:
        return self.response is not None

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "instructions": self.instructions if isinstance(self.instructions, str | None) else
            callable_name(self.instructions),
            "response": self.response if isinstance(self.response, str | None) else callable_name(self.response),
            "context": self.context,
            "next": _target_repr(self.next),
            "once": self.once,
            "tools": list(self.tools) if self.tools is not None else None,
            "branches": _describe_branches(self.branches),
            "fallback": self.fallback if isinstance(self.fallback, str | None) else callable_name(self.fallback),
        }


@dataclass(eq=False, kw_only=True)
class Collect(Node):
    """Gathers fields: see :func:`collect`."""

    kind: ClassVar[str] = "collect"

    schema: type[BaseModel] | None = None
    fields: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    ask: str | Mapping[str, str] | Callable[[list[str], Mapping[str, Any]], str] | None = None
    question: str | None = None
    prompt: str | None = None
    instructions: str | Callable[[list[str], Mapping[str, Any]], str] | None = None
    max_turns: int = 10
    max_asks: int = 3
    resolvers: tuple[Resolver, ...] = ()
    verbatim_fields: tuple[str, ...] = ()
    on_complete: Any = None
    model: Tier | None = None
    branches: tuple[Branch, ...] = ()
    choices: tuple[Any, ...] = ()

    @property
    def phrased_by_model(self) -> bool:
        """True when the model phrases the question (``prompt``/``question``): the fields are
        then read by the speak call's envelope. False when the engine asks deterministically."""
        return self.ask is None and (self.prompt is not None or self.question is not None)

    @property
    def slots(self) -> tuple[str, ...]:
        """Every field this node gathers: the schema's fields, then the agent fields."""
        names = tuple(self.schema.model_fields) if is_model_class(self.schema) else ()
        return names + tuple(f for f in self.fields if f not in names)

    def static_targets(self) -> list[tuple[str, Target]]:
        targets = _branch_targets(self.branches)
        if self.on_complete is None:
            return [("on_complete", NEXT), *targets]
        if _is_static(self.on_complete):
            return [("on_complete", self.on_complete), *targets]
        return targets

    def is_opaque(self) -> bool:
        return self.on_complete is not None and not _is_static(self.on_complete)

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "schema": _schema_name(self.schema),
            "fields": list(self.fields),
            "required": list(self.required),
            "ask": self.ask if isinstance(self.ask, str | None) else
            (dict(self.ask) if isinstance(self.ask, Mapping) else callable_name(self.ask)),
            "question": self.question,
            "prompt": self.prompt,
            "instructions": self.instructions if isinstance(self.instructions, str | None) else
            callable_name(self.instructions),
            "max_turns": self.max_turns,
            "max_asks": self.max_asks,
            "resolvers": [r.describe() for r in self.resolvers],
            "verbatim_fields": list(self.verbatim_fields),
            "on_complete": _target_repr(self.on_complete),
            "branches": _describe_branches(self.branches),
            "choices": _describe_choices(self.choices),
        }


@dataclass(eq=False, kw_only=True)
class Action(Node):
    """Runs code: see :func:`action`."""

    kind: ClassVar[str] = "action"

    run: Callable[..., Any] | None = None
    do: str | None = None
    with_: Mapping[str, Any] | None = None
    then: Target = NEXT
    on_fail: Target = None
    uses: tuple[str, ...] = ()

    def static_targets(self) -> list[tuple[str, Target]]:
        targets: list[tuple[str, Target]] = [("then", self.then)]
        if self.on_fail is not None:
            targets.append(("on_fail", self.on_fail))
        return targets

    def is_opaque(self) -> bool:
        return self.run is not None

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "run": callable_name(self.run),
            "do": self.do,
            "with": dict(self.with_) if self.with_ is not None else None,
            "then": _target_repr(self.then),
            "on_fail": _target_repr(self.on_fail),
        } | ({"uses": list(self.uses)} if self.uses else {})


@dataclass(eq=False, kw_only=True)
class Decide(Node):
    """One structured model call, then code branches: see :func:`decide`."""

    kind: ClassVar[str] = "decide"

    schema: type[BaseModel]
    decide: Callable[[Any, Mapping[str, Any]], Any]
    instructions: str | Callable[[Mapping[str, Any]], str] | None = None
    model: Tier | None = None
    choices: tuple[Any, ...] = ()
    prompt: str | None = None

    def is_opaque(self) -> bool:
        return True

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "schema": _schema_name(self.schema),
            "decide": callable_name(self.decide),
            "instructions": self.instructions if isinstance(self.instructions, str | None) else
            callable_name(self.instructions),
            "choices": _describe_choices(self.choices),
            "prompt": self.prompt,
        }


@dataclass(eq=False, kw_only=True)
class Router(Node):
    """Branches on a predicate with no model call: see :func:`router`."""

    kind: ClassVar[str] = "router"

    when: Any
    then: Target = NEXT
    else_: Target = field(default_factory=lambda: End("end"))

    def static_targets(self) -> list[tuple[str, Target]]:
        return [("then", self.then), ("else", self.else_)]

    def describe(self) -> dict[str, Any]:
        when = self.when if not callable(self.when) else callable_name(self.when)
        return super().describe() | {"when": when, "then": _target_repr(self.then),
                                     "else": _target_repr(self.else_)}


@dataclass(eq=False, kw_only=True)
class Wait(Node):
    """Parks the run on a timer or until an event: see :func:`wait`."""

    kind: ClassVar[str] = "wait"

    timer: str | None = None
    event: str | None = None
    up_to: str = "30d"
    business_hours: bool = False
    then: Target = NEXT
    else_: Target = None

    def static_targets(self) -> list[tuple[str, Target]]:
        targets: list[tuple[str, Target]] = [("then", self.then)]
        if self.else_ is not None:
            targets.append(("else", self.else_))
        return targets

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"timer": self.timer, "event": self.event, "up_to": self.up_to,
                                     "business_hours": self.business_hours, "then": _target_repr(self.then),
                                     "else": _target_repr(self.else_)}


def _describe_choices(choices: tuple[Any, ...]) -> list[Any]:
    return [c.as_dict() if isinstance(c, Choice) else repr(c) for c in choices]


def _describe_branches(branches: tuple[Branch, ...]) -> list[dict[str, Any]]:
    return [{"then": _target_repr(b.then), "when": b.when,
             "if": callable_name(b.if_) if callable(b.if_) else b.if_} for b in branches]


def _branch_targets(branches: tuple[Branch, ...]) -> list[tuple[str, Target]]:
    return [(f"branches.{i}.then", b.then) for i, b in enumerate(branches) if isinstance(b, Branch)]


def _is_static(target: Any) -> bool:
    """True for targets known without running code: ids, nodes, transition objects and the seed's
    mapping forms (``{"goto": id}``, ``{"end": reason}``, ...)."""
    return isinstance(target, str | Node | Transition | Mapping)


# --------------------------------------------------------------------------- constructors


def reply(
    id: str,
    *,
    instructions: str | Callable[[Mapping[str, Any]], str] | None = None,
    response: str | Callable[[Mapping[str, Any]], str] | None = None,
    context: ContextStrategy | None = None,
    next: Any = None,
    once: bool = False,
    tools: list[str] | tuple[str, ...] | None = None,
    model: Tier | None = None,
    branches: list[Branch] | tuple[Branch, ...] = (),
    fallback: str | Callable[[Mapping[str, Any]], str] | None = None,
    output_schema: type[BaseModel] | None = None,
    verify: Verify | None = None,
    label: str | None = None,
    targets: Sequence[Target] = (),
) -> Reply:
    """A reply node.

    Args:
        id: the node id, unique in its flow.
        instructions: what the model should say (a model turn, one ``speak`` call).
        response: text (``{field}`` placeholders filled from the state) or ``response(state)``,
            emitted verbatim by the engine with no model call (tagged ``rendered: "engine"``).
        context: context strategy applied when this node is entered: ``append``, ``reset`` or
            ``reset_with_summary`` (falls back to the flow's, then ``append``).
        next: ``next(turn, state)`` returning a transition, or a static target; ``stay`` if absent.
        once: an engine-rendered reply sent at most once per session.
        tools: names of agent tools the model may call in this reply (default: the flow's ``tools``, else
            none: a reply is offered only the tools it declares).
        model: the model tier that speaks (``default``, ``small``, ``deep``).
        branches: judged while the node is asking; the first true one takes its ``then``.
        fallback: text (or ``fallback(state)``) the engine sends instead of the model turn when no
            model is configured, so a deterministic-first agent stays useful without one.
        targets: where a ``next`` function may go (drawn as dashed edges, checked when built).
    """
    return Reply(id=id, instructions=instructions, response=response, context=context, next=next, once=once,
                 tools=listed(id, "tools", tools) if tools is not None else None, model=model,
                 branches=listed(id, "branches", branches),
                 fallback=fallback, output_schema=output_schema, verify=verify, label=label,
                 targets=listed(id, "targets", targets))


def collect(
    id: str,
    *,
    schema: type[BaseModel] | None = None,
    fields: list[str] | tuple[str, ...] = (),
    required: list[str] | tuple[str, ...] | None = None,
    ask: str | Mapping[str, str] | Callable[[list[str], Mapping[str, Any]], str] | None = None,
    question: str | None = None,
    prompt: str | None = None,
    instructions: str | Callable[[list[str], Mapping[str, Any]], str] | None = None,
    max_turns: int = 10,
    max_asks: int = 3,
    resolvers: list[Resolver] | tuple[Resolver, ...] = (),
    verbatim_fields: list[str] | tuple[str, ...] = (),
    on_complete: Any = None,
    model: Tier | None = None,
    branches: list[Branch] | tuple[Branch, ...] = (),
    output_schema: type[BaseModel] | None = None,
    verify: Verify | None = None,
    label: str | None = None,
    choices: Sequence[Any] = (),
    targets: Sequence[Target] = (),
) -> Collect:
    """A collect node.

    Args:
        schema: a pydantic model whose fields are gathered into the run's state (namespaced under
            ``__collect_<id>`` while gathering, promoted into the state on completion).
        fields: names of agent fields gathered session-wide (known fields are never asked again).
        required: the fields that must be present to complete (default: all of them).
        ask: the deterministic question: ``ask(missing, state)``, a string, or a mapping of field
            to question. Without ``ask``/``prompt``/``question`` a safe default is built from the
            field names.
        question: a fixed first question (no model call); later asks are phrased by the model.
        prompt: the model phrases the question in a ``speak`` call whose envelope extracts the
            fields.
        instructions: steers the non-speaking extraction call.
        max_turns: extraction passes before giving up (default 10): then the node completes only
            if truly satisfied, else escalates naming the missing fields. With the cannot-handle
            repair pattern on, answers in a row that give nothing escalate sooner
            (``Repair.cannot_handle_limit``, default 3).
        max_asks: how many times a model-phrased question asks one field (default 3).
        resolvers: tier-0 resolvers run on the user's text before any model call.
        verbatim_fields: fields whose values must appear in the user's message (never guessed).
        on_complete: ``on_complete(data, state)`` or a static target; the next node if absent.
        choices: options for a node that gathers one field (labels, ``(id, label)`` pairs or
            :class:`~tether.flow.choices.Choice`): entering the node emits an ``interactive``
            event, and a message that is exactly a choice's label fills the field with its id.
        targets: where an ``on_complete`` function may go (drawn as dashed edges, checked when built).
    """
    fields = listed(id, "fields", fields)
    slots = tuple(schema.model_fields) if is_model_class(schema) else ()
    all_fields = slots + tuple(f for f in fields if f not in slots)
    return Collect(id=id, schema=schema, fields=fields,
                   required=listed(id, "required", required) if required is not None else all_fields,
                   ask=ask, question=question, prompt=prompt, instructions=instructions, max_turns=max_turns,
                   max_asks=max_asks, resolvers=listed(id, "resolvers", resolvers),
                   verbatim_fields=listed(id, "verbatim_fields", verbatim_fields), on_complete=on_complete,
                   model=model, branches=listed(id, "branches", branches), output_schema=output_schema,
                   verify=verify, label=label, choices=as_choices(listed(id, "choices", choices)),
                   targets=listed(id, "targets", targets))


F = TypeVar("F", bound=Callable[..., Any])


@overload
def action(id: str, run: Callable[..., Any], *, then: Target = ..., on_fail: Target = ...,
           uses: list[str] | tuple[str, ...] = ..., output_schema: type[BaseModel] | None = ...,
           verify: Verify | None = ..., label: str | None = ..., targets: Sequence[Target] = ...) -> Action: ...


@overload
def action(id: str, run: None = None, *, then: Target = ..., on_fail: Target = ...,
           uses: list[str] | tuple[str, ...] = ..., output_schema: type[BaseModel] | None = ...,
           verify: Verify | None = ..., label: str | None = ...,
           targets: Sequence[Target] = ...) -> Callable[[Callable[..., Any]], Action]: ...


def action(
    id: str,
    run: Callable[..., Any] | None = None,
    *,
    then: Target = NEXT,
    on_fail: Target = None,
    uses: list[str] | tuple[str, ...] = (),
    output_schema: type[BaseModel] | None = None,
    verify: Verify | None = None,
    label: str | None = None,
    targets: Sequence[Target] = (),
) -> Action | Callable[[Callable[..., Any]], Action]:
    """An action node running ``run(state, ctx)`` (sync or async); usable as a decorator::

        @action("book", uses=["book_shipment"], output_schema=Booked)
        async def book(state, ctx): ...

    ``run`` returns a transition, an action result (``ok()``, ``skipped()``, ``failed()``,
    ``defer()``) or ``None`` (take ``then``, the next node by default). A returned ``failed()``
    takes ``on_fail`` (or ``then``) with ``action-failed``. A raised exception (also an unknown
    tool in ``ctx.tool``) takes ``on_fail`` when given; without it the run fails loudly and
    degrades (see :mod:`tether.engine.graph.degrade`). ``uses`` names the agent tools the action calls:
    building the agent (and ``tether check``) refuses one that is not registered, and ``ctx.tool``
    refuses a tool the list does not name (an empty list declares nothing and checks nothing).
    ``targets`` lists where a transition ``run`` returns may go (checked, drawn dashed).
    """
    names = tool_names(id, uses)
    declared = listed(id, "targets", targets)

    def build(fn: Callable[..., Any]) -> Action:
        return Action(id=id, run=fn, then=then, on_fail=on_fail, uses=names, output_schema=output_schema,
                      verify=verify, label=label, targets=declared)

    return build(run) if run is not None else build


def do(id: str, action_name: str, *, with_: Mapping[str, Any] | None = None, then: Target = NEXT,
       on_fail: Target = None, uses: list[str] | tuple[str, ...] = (), label: str | None = None) -> Action:
    """An action node that runs the agent's registered action ``action_name`` with ``with_``
    (``uses``: the agent tools it calls, as for :func:`action`)."""
    return Action(id=id, do=action_name, with_=with_, then=then, on_fail=on_fail, uses=tool_names(id, uses),
                  label=label)


def decide(
    id: str,
    *,
    schema: type[BaseModel] | None = None,
    decide: Callable[[Any, Mapping[str, Any]], Any],
    instructions: str | Callable[[Mapping[str, Any]], str] | None = None,
    model: Tier | None = None,
    output_schema: type[BaseModel] | None = None,
    verify: Verify | None = None,
    label: str | None = None,
    choices: Sequence[Any] = (),
    prompt: str | None = None,
    targets: Sequence[Target] = (),
) -> Decide:
    """A decide node: one structured ``decide`` model call returns data matching ``schema``;
    ``decide(data, state)`` returns the transition.

    With ``choices`` (labels, ``(id, label)`` pairs or :class:`~tether.flow.choices.Choice`), the
    schema defaults to ``{choice: str}`` and must have a ``choice`` field: entering the node
    emits an ``interactive`` event (with ``prompt``, also said when the node waits for an
    answer), a message that is exactly a choice's label is decided with no model call, and the
    model otherwise picks one of the ids or ``__none``. ``targets``: where ``decide`` may go.
    """
    choices = listed(id, "choices", choices)
    if schema is None and choices:
        schema = ChoiceReply
    if schema is None:
        raise FlowDefinitionError(DefinitionIssue("invalid-option", "a decide node needs a schema (or choices)",
                                                  node=id, path="schema"))
    return Decide(id=id, schema=schema, decide=decide, instructions=instructions, model=model,
                  output_schema=output_schema, verify=verify, label=label, choices=as_choices(choices),
                  prompt=prompt, targets=listed(id, "targets", targets))


def router(id: str, *, when: Any, then: Target = NEXT, else_: Target = None, label: str | None = None) -> Router:
    """A router node: ``then`` when ``when`` holds (a predicate over the run, or a JSON condition),
    else ``else_`` (default ``end``). No model call."""
    return Router(id=id, when=when, then=then, else_=else_ if else_ is not None else End("end"), label=label)


def wait(
    id: str,
    *,
    timer: str | None = None,
    event: str | None = None,
    up_to: str = "30d",
    business_hours: bool = False,
    then: Target = NEXT,
    else_: Target = None,
    label: str | None = None,
) -> Wait:
    """A wait node: parks the run for ``timer`` (``then`` when it passes, ``else_`` when the
    customer replies first) or until ``event`` arrives (``then``; ``else_`` after ``up_to``)."""
    return Wait(id=id, timer=timer, event=event, up_to=up_to, business_hours=business_hours, then=then,
                else_=else_, label=label)


def is_next(target: Any) -> bool:
    return isinstance(target, Next)
