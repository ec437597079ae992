"""Dispatch of an ``agent`` step (seed 004): the hooks of arriving at (or resuming) a step, then
its model-and-tools loop (:mod:`tether.engine.step.loop`).

Arrival at a step runs its hooks: the first step of a new session runs ``on_start`` (by default
``on_enter`` then ``on_crossing(None, None)``) and the session is saved; a step entered by a move
runs ``on_enter`` while the move is applied and ``on_crossing(message, prior)`` after the engine
saved the move (the mid-turn checkpoint), right before the step's first model call. A step that
resumes on a later turn's message runs ``on_restore``. Leaving runs ``on_exit``.
"""

from __future__ import annotations

from typing import Any

from tether.engine.core.pauses import ASKING
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.step.context import StepContext
from tether.engine.step.loop import book, converse
from tether.engine.step.memory import append, space
from tether.engine.step.view import call_hook
from tether.flow.flow import Flow
from tether.flow.steps import CLOSING_MESSAGE, AgentNode

__all__ = ["START_MESSAGE", "dispatch_agent", "leave_step"]

START_MESSAGE = "Start"
"""The message a step's arrival puts in its memory when nothing else starts it (no customer
message this turn, no ``on_crossing`` text)."""


async def dispatch_agent(ts: TurnState, run: Run, flow: Flow, node: AgentNode) -> Any:
    """Run the step: hooks on arrival or restore, then the model loop. Returns a transition for
    the engine loop, or the pause ``asking`` after a reply."""
    bk = book(run)
    ctx = StepContext(ts, run, flow, node)
    if bk["at"] == node.id and bk["entered"] != node.id:  # the step resumes on a later turn
        if not ts.message_available(run):
            unfinished = bk.get("open")
            if isinstance(unfinished, dict) and ts.consumed_by.get(run.id) == node.id:
                # this turn's model loop was cut short (the worker died after a write): its
                # memory goes back to where the loop began, and the loop runs again, reading
                # what the journal recorded
                memory = space(ts, node.namespace)
                del memory.messages[int(unfinished["memory"]):]
                return await converse(ts, run, flow, node, ctx)
            run.status = "asking"
            return ASKING
        await call_hook(node.on_restore, ctx)
    else:
        await _arrive(ts, run, flow, node, ctx)
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
        append(ts, node.namespace, "user", ts.message_text, step=node.id)
    return await converse(ts, run, flow, node, ctx)


async def leave_step(ts: TurnState, run: Run, flow: Flow, node: AgentNode, target: str) -> None:
    """The engine moves the run from the step to ``target`` (a correction going back to the step
    that collected the value): ``on_exit`` runs and the bookkeeping says where the run is, as a
    tool's ``go(target)`` would."""
    await call_hook(node.on_exit, StepContext(ts, run, flow, node))
    book(run).update(at=target, entered=None, prior=node.id)


async def _arrive(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepContext) -> None:
    bk = book(run)
    by_move = bk["entered"] == node.id  # a move into this step already ran its on_enter
    prior = bk["prior"] if by_move else bk["at"]
    new_session = ts.session.saved_at is None and run.node == flow.start and bk["at"] is None
    bk.update(at=node.id, entered=None, prior=None)
    if node.end:
        ts.session.status = "completed"  # a terminal step: arriving completes the session
    if new_session and node.on_start is not None:
        crossing = await call_hook(node.on_start, ctx)
    else:
        if not by_move:
            await call_hook(node.on_enter, ctx)
        crossing = await _crossing(ts, run, node, ctx, None, prior)
    _remember_crossing(ts, node, crossing)
    if new_session:
        await ts.checkpoint()  # seed 004: a new session is saved once before the turn runs


async def _crossing(ts: TurnState, run: Run, node: AgentNode, ctx: StepContext, message: str | None,
                    prior: str | None) -> Any:
    """What the arrival puts in the step's memory (None: nothing). By default: the closing message
    on a terminal step; nothing when this turn's customer message is about to start the step (it
    goes in next, so the step's first request holds it alone); else ``Start`` when the memory does
    not end with this step's own message."""
    if node.on_crossing is not None:
        return await call_hook(node.on_crossing, message, prior, ctx)
    if node.end:
        return CLOSING_MESSAGE
    if message is not None:
        return message
    if ts.message_available(run):
        return None
    history = space(ts, node.namespace).messages
    if not history or history[-1].get("step") != node.id:
        return START_MESSAGE
    return None


def _remember_crossing(ts: TurnState, node: AgentNode, crossing: Any) -> None:
    if isinstance(crossing, str) and crossing:
        append(ts, node.namespace, "user", crossing, step=node.id)
