"""Dispatch one node by kind: what runs, and what comes back (a transition, a static target, or a
pause)."""

from __future__ import annotations

import inspect
from datetime import timedelta
from typing import Any

from pydantic import ValidationError

from tether.engine.core.pauses import ASKING, Pause, Static
from tether.engine.core.session import Claim, Run, WaitingOn
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.actions import run_action
from tether.engine.graph.batching import segment_for, take_held
from tether.engine.graph.choices import constrained_schema, decide_by_choice, unmatched_choice
from tether.engine.graph.collect import dispatch_collect, question_first
from tether.engine.graph.conditions import holds
from tether.engine.graph.corrections import (
    apply_corrections,
    correctable,
    marked_as_correction,
    resolver_corrections,
)
from tether.engine.graph.identity import identity
from tether.engine.graph.moves import silenced
from tether.engine.graph.prompt_parts import without_default_titles
from tether.engine.graph.reply_check import check_reply, describe_dropped
from tether.engine.step.agent_step import dispatch_agent, leave_step
from tether.errors import FlowRuntimeError, ModelError
from tether.flow.durations import parse_duration
from tether.flow.flow import Flow
from tether.flow.nodes import Action, Collect, Decide, Node, Reply, Router, Wait
from tether.flow.results import ReplyTurn
from tether.flow.steps import AgentNode
from tether.flow.transitions import NEXT, Goto, Next, is_code, stay
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ModelRequest, ResponseFormat

__all__ = ["INLINE_WAIT", "dispatch", "reply_next"]

INLINE_WAIT = timedelta(seconds=10)
"""A timer wait this short, followed by a message step, rides on that message as ``after_ms``."""
DECIDE_RECENT = 4
"""A decision reads the last four messages of its run's view (the latest exchange and the one
before, as an extraction does), not the whole window: the same cost on every turn. What it decides
on beyond them comes in its instructions (``{field}`` templates)."""
DECIDE_ORDERS = (
    "You make one decision for a flow engine from the conversation; you never reply to the customer. "
    "Reply with one JSON object that matches the schema."
)


async def dispatch(ts: TurnState, run: Run, flow: Flow, node: Node) -> Any:
    """Run ``node``; returns what the loop acts on."""
    held = take_held(ts, run, node)
    if held is not None:
        assert isinstance(node, Reply)
        return _batched_member(ts, run, node, held)
    if isinstance(node, Action):
        return await run_action(ts, run, flow, node)
    if isinstance(node, Collect):
        run.last_talk = node.id
        return await dispatch_collect(ts, run, flow, node)
    if isinstance(node, Reply):
        if node.response is None:
            run.last_talk = node.id
        return _dispatch_reply(ts, run, flow, node)
    if isinstance(node, Decide):
        return await _dispatch_decide(ts, run, flow, node)
    if isinstance(node, Router):
        taken = holds(ts, node.when, run)
        ts.outcome(run, kind="if", node_id=node.id, next="then" if taken else "else")
        return Static(node.then if taken else node.else_)
    if isinstance(node, Wait):
        return _dispatch_wait(ts, run, flow, node)
    if isinstance(node, AgentNode):
        if (back := _agent_step_correction(ts, run, flow, node)) is not None:
            await leave_step(ts, run, flow, node, back.target)
            return back
        run.last_talk = node.id
        return await dispatch_agent(ts, run, flow, node)
    raise FlowRuntimeError(f"flow {flow.id!r}: node {node.id!r} has an unknown kind {node.kind!r}")


def reply_next(ts: TurnState, run: Run, node: Reply, turn: ReplyTurn) -> Any:
    """The transition after a reply: ``next(turn, state)``, a static target, or ``stay``."""
    if node.next is None:
        return stay
    if is_code(node.next) and not isinstance(node.next, Node):
        return node.next(turn, ts.state_view(run))
    return Static(node.next)


def _batched_member(ts: TurnState, run: Run, node: Reply, turn: ReplyTurn) -> Any:
    """A member of a batched segment after the first: the one model turn already said its part."""
    run.last_talk = node.id
    ts.outcome(run, kind="talk", node_id=node.id, llm_calls=0, detail="batched: spoken by the segment's one call")
    return reply_next(ts, run, node, turn)


def _dispatch_reply(ts: TurnState, run: Run, flow: Flow, node: Reply) -> Any:
    quiet = silenced(ts, run, flow, node, then=Static(node.next if node.next is not None and not is_code(node.next)
                                                      else NEXT))
    if quiet is not None:
        return quiet
    if node.response is not None:
        if node.once:
            claim = f"{flow.id}:{node.id}:{ts.session.id}"
            if claim in ts.session.claims:
                ts.outcome(run, code="already-sent", status="skipped", kind="say", node_id=node.id)
                return reply_next(ts, run, node, ReplyTurn("", "engine", {}))
            ts.session.claims[claim] = Claim(at=ts.now)
        state = ts.state_view(run)
        text = node.response(state) if callable(node.response) else ts.render(node.response, run,
                                                                                where="response", state=state)
        if text.strip() and question_first(ts, run, node):
            # the customer asked something instead of answering this fixed question: answer it, then
            # Settle asks the question again
            ts.consumed_by[run.id] = node.id
            ts.speaker = SpeakRequest(run.id, node.id, then_ask=text)
            return Pause("speak")
        if text.strip():
            ts.say(text, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        ts.outcome(run, kind="say", node_id=node.id)
        return reply_next(ts, run, node, ReplyTurn(text, "engine", {}))
    run.status = "asking"
    if ts.speaker is None and not ts.spoke:
        ts.speaker = SpeakRequest(run.id, node.id, batch=segment_for(run, flow, node))
        if ts.message_available(run):
            ts.consumed_by[run.id] = node.id
        return Pause("speak")
    return ASKING


def _agent_step_correction(ts: TurnState, run: Run, flow: Flow, node: AgentNode) -> Goto | None:
    """A message to an agent step that says it corrects a value an earlier collect step gathered
    ("actually, make it medium"), read by that step's resolvers: the value is corrected and the run
    goes back there, with no call (the step's model hears any other message)."""
    if not (ts.message_available(run) and ts.asking_at.get(run.id) == node.id and marked_as_correction(ts)):
        return None
    fixes = resolver_corrections(ts, run, flow, node, correctable(ts, run, flow, node))
    if fixes and (back := apply_corrections(ts, run, flow, node, fixes, source="deterministic").back) is not None:
        ts.consumed_by[run.id] = node.id
        return Goto(back)
    return None


async def _dispatch_decide(ts: TurnState, run: Run, flow: Flow, node: Decide) -> Any:
    if node.choices:
        picked = await decide_by_choice(ts, run, node)
        if picked is not None:
            return picked
        if ts.message_available(run) and ts.asking_at.get(run.id) == node.id:
            # "actually make it medium" at the confirmation: an earlier step's resolvers read it, no call
            fixes = resolver_corrections(ts, run, flow, node, correctable(ts, run, flow, node))
            back = apply_corrections(ts, run, flow, node, fixes, source="deterministic").back if fixes else None
            if back is not None:
                ts.consumed_by[run.id] = node.id
                return Goto(back)
        if (unmatched := unmatched_choice(ts, run, node)) is not None:
            return unmatched
    model = ts.model(node.model, needed_for=f"decide node {node.id!r} of flow {flow.id!r}")
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
    state = ts.state_view(run)
    instructions = node.instructions(state) if callable(node.instructions) else node.instructions
    if isinstance(node.instructions, str):
        instructions = ts.render(node.instructions, run, where="instructions", state=state)
    schema = constrained_schema(node, without_default_titles(node.schema.model_json_schema(),
                                                             node.schema.__name__))
    request = ModelRequest(call="decide", system=f"{identity(ts)}\n\n{DECIDE_ORDERS}",
                           instructions=instructions or f"Decide for step {node.id!r}.",
                           messages=tuple(ts.history(run, recent=DECIDE_RECENT)),
                           response_format=ResponseFormat(node.id, schema), tier=node.model or "default")
    response = await ts.call(model, request)
    data = response.data
    try:
        if data is None:
            data = extract_json(response.text)
        # a decision is one value: held to the schema that was sent, or refused whole
        kept, dropped = check_reply(data, schema, entry_depth=0)
        if dropped:
            raise ReplyParseError("schema", describe_dropped(dropped))
        decided = node.schema.model_validate(kept)
    except (ReplyParseError, ValidationError) as exc:
        raise ModelError(f"decide node {node.id!r} of flow {flow.id!r}: the model's reply does not match its "
                         f"schema: {exc}", kind="invalid") from None
    result = node.decide(decided, state)
    if inspect.isawaitable(result):
        result = await result
    ts.outcome(run, kind="decide", node_id=node.id, llm_calls=1)
    return result


def _followed_by_message_step(flow: Flow, node: Wait) -> bool:
    move = flow.resolve_static(node.id, node.then) if not isinstance(node.then, Next) else None
    if isinstance(node.then, Next):
        following = flow.next_after(node.id)
        move = Goto(following) if following else None
    if not isinstance(move, Goto):
        return False
    target = flow.by_id[move.target]
    return isinstance(target, Reply | Collect)


def _dispatch_wait(ts: TurnState, run: Run, flow: Flow, node: Wait) -> Any:
    if node.timer is not None:
        delay = parse_duration(node.timer)
        if delay <= INLINE_WAIT and _followed_by_message_step(flow, node):
            ms = int(delay.total_seconds() * 1000)
            ts.after_ms += ms
            ts.outcome(run, code="inline-delay", kind="wait", node_id=node.id, detail=f"{ms}ms")
            return Static(node.then)
        until = ts.now + delay
        if node.business_hours and ts.agent.business_hours is not None:
            until = ts.agent.business_hours(until, {"context": ts.options.context})
        key = f"{run.id}:{node.id}:{int(until.timestamp() * 1000)}"
        run.waiting = WaitingOn(kind="timer", key=key, until=until, set_at=ts.now)
        ts.outcome(run, status="waiting", kind="wait", node_id=node.id, until=until)
    else:
        until = ts.now + parse_duration(node.up_to)
        key = f"{run.id}:{node.id}:{int(until.timestamp() * 1000)}"
        run.waiting = WaitingOn(kind="event", key=key, until=until, set_at=ts.now, event=node.event)
        ts.outcome(run, code="awaiting-event", status="waiting", kind="wait", node_id=node.id, detail=node.event,
                   until=until)
    run.status = "waiting"
    ts.schedule_wake(key, until)
    return Pause("waiting")
