"""The constructors of the node kinds a flow is built from (the kinds are in
:mod:`tether.flow.node_kinds`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.choices import ChoiceReply, as_choices
from tether.flow.node_kinds import CONTEXT_STRATEGIES as CONTEXT_STRATEGIES
from tether.flow.node_kinds import (
    Action,
    Branch,
    Collect,
    ContextStrategy,
    Decide,
    Node,
    Reply,
    Router,
    Target,
    Verify,
    Wait,
)
from tether.flow.node_kinds import Tier as Tier
from tether.flow.options import is_model_class, listed, tool_names
from tether.flow.resolvers import Resolver
from tether.flow.transitions import NEXT, End

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


def branch(then: Any, *, when: str | None = None, if_: Any = None) -> Branch:
    """A branch of a reply/collect node: ``when`` judged by the model, or ``if_`` by code."""
    return Branch(then, when, if_)



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
        question: a fixed first question (no model call), said when the run comes to the step to
            ask; later asks of the same visit (after small talk, an answer that gave nothing, a
            detour) say ``ask`` when it is given, else the model phrases them. An opening greeting
            goes here, so it is said once.
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
    """A router node: ``then`` when ``when`` holds (a CEL condition such as
    ``"data.size == 'large'"``, or a predicate over the run), else ``else_`` (default ``end``). No
    model call."""
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

