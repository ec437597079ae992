"""The node kinds a flow is built from (their constructors are in :mod:`tether.flow.nodes`).

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
- ``router``: a CEL condition or a code predicate picks ``then`` or ``else_``; no model call.
- ``wait``: parks the run on a timer or until an event.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from tether.flow.choices import Choice
from tether.flow.options import callable_name, is_model_class
from tether.flow.resolvers import Pattern, Resolver
from tether.flow.transitions import NEXT, End, Transition, stay

__all__ = [
    "CONTEXT_STRATEGIES",
    "Action",
    "Branch",
    "Collect",
    "ContextStrategy",
    "Decide",
    "Node",
    "Reply",
    "Router",
    "Target",
    "Tier",
    "Verify",
    "Wait",
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
    call judges true/false) or ``if_`` (a CEL condition or a code predicate). The first true
    branch takes ``then``."""

    then: Any
    when: str | None = None
    if_: Any = None



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

    @functools.cached_property
    def early_patterns(self) -> tuple[Pattern, ...]:
        """The ``pattern`` resolvers that also read what was said before the step was reached
        (``early=True``)."""
        return tuple(r for r in self.resolvers if isinstance(r, Pattern) and r.early)

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
