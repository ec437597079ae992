"""Batched segments: one speak call for a chain of ``generate`` replies (seed 000, flow files only).

A flow file's segments (:mod:`tether.dialect.segments`) say which replies always follow each
other. When a run reaches the first node of a segment and it speaks, the call's task is every
member's instructions, in order, joined by blank lines, and the customer gets the one reply. Then
the engine walks the segment with that one turn: the loop acts on the first member's ``next``
(verify, the oscillation guard, the transition events, a checkpoint), and each following member,
when it is dispatched, takes the held turn instead of speaking and evaluates its own ``next``
against it. The walk stops where a ``next`` is not a goto to the following member (or a verify
blocks, or the segment ends): the node it reaches is dispatched as usual.

A segment is spoken for one node at a time instead (no batch) when a member has a
``response``, its own ``tools`` or code for its ``instructions``, or the run is staying on its
last talk node. End, handoff and escalate apply as the member whose ``next`` returns them says;
an interrupted turn is not walked (the first member runs again on the next message).
"""

from __future__ import annotations

from tether.engine.core.session import Run
from tether.engine.core.state import HeldTurn, TurnState
from tether.flow.flow import Flow
from tether.flow.nodes import Node, Reply
from tether.flow.results import ReplyTurn

__all__ = ["hold", "segment_for", "take_held"]


def segment_for(run: Run, flow: Flow, node: Reply) -> tuple[str, ...]:
    """The ids of the segment one speak call covers from ``node`` (``node`` first), or ``()``."""
    members = flow.segments.get(node.id, ())
    if len(members) < 2 or run.staying:
        return ()
    for member_id in members:
        member = flow.by_id.get(member_id)
        if not isinstance(member, Reply) or member.response is not None or member.tools \
                or not isinstance(member.instructions, str | None):
            return ()
    return members


def hold(ts: TurnState, run: Run, members: tuple[str, ...], turn: ReplyTurn) -> None:
    """Keep the batched ``turn`` for the segment's members after the first."""
    if len(members) > 1:
        ts.held[run.id] = HeldTurn(members[1:], turn)


def take_held(ts: TurnState, run: Run, node: Node) -> ReplyTurn | None:
    """The batched turn ``node`` takes, when it is the member the walk expects next; any other
    dispatch of the run ends the walk."""
    held = ts.held.pop(run.id, None)
    if held is None or held.members[0] != node.id or not isinstance(node, Reply):
        return None
    if len(held.members) > 1:
        ts.held[run.id] = HeldTurn(held.members[1:], held.turn)
    return held.turn
