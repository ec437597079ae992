"""Transitions: the only thing that moves a flow's graph.

A node's return value (or its static ``then``) is normalised into one of these moves:

==========================  =========================================================
you return                   move
==========================  =========================================================
a node registered in flow   ``Goto(node.id)``
``goto("id", data=...)``     ``Goto``; ``data`` is merged into the run's state
``end("reason")``            the flow finishes
``handoff("agent", ...)``    hand the conversation to another agent
``escalate("reason")``       hand the conversation to a human
``stay``                     stay on this node for another user turn
``start_flow("id", ...)``    end this run and chain into another flow (hop + 1)
``NEXT``                     the next node in declaration order (``end`` after the last)
==========================  =========================================================

Anything else raises :class:`~tether.errors.TransitionError` naming the flow, the node and what was
returned. Inline node definitions and thunks (``lambda: node``) are not transitions: a parked run
could not resume into a node with no registered identity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from tether.errors import TransitionError

if TYPE_CHECKING:
    from tether.flow.moves import StepMove

__all__ = [
    "NEXT",
    "End",
    "Escalate",
    "Goto",
    "Handoff",
    "Next",
    "StartFlow",
    "Stay",
    "Transition",
    "end",
    "escalate",
    "goto",
    "handoff",
    "is_code",
    "start_flow",
    "stay",
]


class NamedNode(Protocol):
    """What a transition needs of a node: its id (every :class:`tether.flow.nodes.Node` is one)."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Goto:
    """Move to node ``target``, merging ``data`` into the run's state and deleting ``clear``
    fields (their ask counts reset too)."""

    target: str
    data: Mapping[str, Any] | None = None
    clear: tuple[str, ...] = ()
    node: Any = field(default=None, compare=False, repr=False)
    """The node object when ``goto`` was given one: it must be the node registered under ``target``
    (checked when the flow is built for a static target, and when the goto is returned)."""


@dataclass(frozen=True, slots=True)
class End:
    """Finish the flow with ``reason``."""

    reason: str = "end"


@dataclass(frozen=True, slots=True)
class Handoff:
    """Hand the conversation to another agent."""

    agent: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Escalate:
    """Hand the conversation to a human, with ``reason``."""

    reason: str


@dataclass(frozen=True, slots=True)
class StartFlow:
    """End this run and start flow ``flow`` (one hop further) with ``input``."""

    flow: str
    input: Any = None


@dataclass(frozen=True, slots=True)
class Stay:
    """Stay on this node for another user turn.

    In an agent step's tool handler, ``stay("feedback")`` (or ``stay()``) is the move that keeps
    the executing step and tells the model ``feedback`` (default ``"input validated"``)."""

    def __repr__(self) -> str:
        return "stay"

    def __call__(self, feedback: str | None = None) -> StepMove:
        from tether.flow.moves import stay_move

        return stay_move(feedback)


@dataclass(frozen=True, slots=True)
class Next:
    """The next node in declaration order; ``end`` after the last node."""

    data: Mapping[str, Any] | None = field(default=None)

    def __repr__(self) -> str:
        return "NEXT"


Transition = Goto | End | Handoff | Escalate | StartFlow | Stay | Next

stay = Stay()
"""Stay on this node for another user turn."""

NEXT = Next()
"""The next node in declaration order (``end`` after the last)."""


def is_code(value: Any) -> TypeGuard[Callable[..., Any]]:
    """True for a function the engine calls (``next``, ``on_complete``...): callable, and not the
    transition ``stay`` (callable only to build an agent step's feedback move)."""
    return callable(value) and not isinstance(value, Stay)


def goto(target: str | NamedNode, data: Mapping[str, Any] | None = None, *,
         clear: tuple[str, ...] | list[str] = ()) -> Goto:
    """Move to ``target`` (a node id, or a node registered in the flow), merging ``data``.

    A node object is kept with the goto: if it is not the very node the flow registers under its
    id, the flow refuses it (``inline-transition-target``) instead of running the registered one.
    """
    node_id = target if isinstance(target, str) else getattr(target, "id", None)
    if not isinstance(node_id, str) or not node_id:
        raise TypeError(f"goto() needs a node id or a node, got {target!r}")
    if data is not None and not isinstance(data, Mapping):
        raise TypeError(f"goto(data=...) must be a mapping, got {type(data).__name__}")
    node = None if isinstance(target, str) else target
    return Goto(node_id, dict(data) if data is not None else None, tuple(clear), node)


def end(reason: str = "end") -> End:
    """Finish the flow."""
    return End(reason)


def handoff(agent: str, reason: str | None = None) -> Handoff:
    """Hand the conversation to another agent."""
    return Handoff(agent, reason)


def escalate(reason: str) -> Escalate:
    """Hand the conversation to a human."""
    return Escalate(reason)


def start_flow(flow: str, input: Any = None) -> StartFlow:
    """End this run and chain into flow ``flow`` with ``input`` (default: this run's input)."""
    return StartFlow(flow, input)


def describe(value: Any) -> str:
    """A short description of a returned value, for error messages."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def normalize(value: Any, *, flow: str, node: str, nodes: Mapping[str, NamedNode]) -> Transition:
    """Normalise what a node returned into a transition.

    Accepts the transition objects above, a node registered in the flow (by identity), the
    string ``"stay"``, and the seed's object forms (``{"goto": id, "data": ...}``,
    ``{"end": reason}``, ``{"handoff": agent, "reason": ...}``, ``{"escalate": reason}``).

    Raises:
        TransitionError: anything else, naming the flow, the node and the value.
    """
    if isinstance(value, Goto | End | Handoff | Escalate | StartFlow | Stay | Next):
        if isinstance(value, Goto) and value.target not in nodes:
            hint = f"; use {value.target}() instead" if value.target in ("end", "stay") else ""
            raise TransitionError(
                f"flow {flow!r}, node {node!r}: goto target {value.target!r} is not a node of the flow{hint}"
            )
        if isinstance(value, Goto) and value.node is not None and nodes.get(value.target) is not value.node:
            raise TransitionError(
                f"flow {flow!r}, node {node!r}: goto names node {value.target!r} by a node object that is not "
                "the one registered in the flow's nodes (inline-transition-target)",
                code="inline-transition-target",
            )
        return value
    if value == "stay":
        return stay
    kind = getattr(value, "kind", None)
    node_id = getattr(value, "id", None)
    if isinstance(kind, str) and isinstance(node_id, str):
        if nodes.get(node_id) is value:
            return Goto(node_id)
        raise TransitionError(
            f"flow {flow!r}, node {node!r}: returned node {node_id!r} is not a member of the flow's nodes "
            "(inline-transition-target)",
            code="inline-transition-target",
        )
    if isinstance(value, Mapping):
        if "end" in value:
            return End(str(value["end"]))
        if "handoff" in value:
            return Handoff(str(value["handoff"]), value.get("reason"))
        if "escalate" in value:
            return Escalate(str(value["escalate"]))
        if "goto" in value and isinstance(value["goto"], str):
            data = value.get("data")
            if data is not None and not isinstance(data, Mapping):
                raise TransitionError(
                    f"flow {flow!r}, node {node!r}: goto data must be a mapping, got {describe(data)}")
            return normalize(Goto(value["goto"], data), flow=flow, node=node, nodes=nodes)
    if callable(value):
        raise TransitionError(
            f"flow {flow!r}, node {node!r}: returned a callable {describe(value)}; thunks are not transitions "
            "(inline-transition-target)",
            code="inline-transition-target",
        )
    raise TransitionError(
        f"flow {flow!r}, node {node!r}: returned {describe(value)}, which is not a transition "
        "(return a node, goto(...), end(...), handoff(...), escalate(...), start_flow(...) or stay)"
    )
