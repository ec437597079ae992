"""No message is ever dropped: a property of the turn pipeline.

Hypothesis generates agents (flows of collect, reply, decide, action, wait and if nodes under
message, mention and event triggers) and sequences of messages, events and wakes. The model is a
:class:`reader.Reader` giving plausible envelopes (random scores, field values, true branches,
questions). On an agent that can speak (it has an idle speaker), every message turn must produce a
reply, hand the conversation off, or carry an outcome code that says why it stays quiet; a
silenced message turn sends nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from harness import Conversation
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from reader import Reader

from tether import (
    NEXT,
    Agent,
    Field,
    Flow,
    action,
    collect,
    decide,
    end,
    on_event,
    on_mention,
    on_message,
    reply,
    router,
    wait,
)
from tether.engine.core.results import TurnResult
from tether.flow.nodes import Node, branch
from tether.flow.triggers import MessageTrigger

FIELDS = {
    "a": Field("string", description="Field a"),
    "b": Field("string", description="Field b"),
    "c": Field("integer", description="Field c"),
    "ok": Field("boolean", description="Whether the customer agreed"),
}
STATEMENTS = ("the customer wants an upgrade", "the customer is unhappy")
QUIET_REASONS = {"silenced", "another-reply", "handed-off"}
"""Outcome codes that explain a message turn with no reply."""


class Choice(BaseModel):
    choice: str | None = None


def _node(kind: str, index: int, fields: list[str], flag: bool) -> Node:
    nid = f"n{index}"
    if kind == "collect_prompt":
        return collect(nid, fields=fields, prompt="Ask for what is missing.")
    if kind == "collect_question":
        return collect(nid, fields=fields, question=f"Question {nid}?")
    if kind == "collect_ask":
        return collect(nid, fields=fields, ask=f"Deterministic {nid}?", max_turns=2)
    if kind == "talk":
        return reply(nid, instructions=f"Talk at {nid}.", next=NEXT if flag else None)  # None: stays
    if kind == "say":
        return reply(nid, response=f"Said {nid}.", next=NEXT)
    if kind == "confirm":
        return reply(nid, response=f"Upgrade at {nid}?",
                     branches=[branch(NEXT, when=STATEMENTS[0]), branch(end("unhappy"), when=STATEMENTS[1])])
    if kind == "action":
        return action(nid, (lambda state, ctx: ctx.set(a="set")) if flag else (lambda state, ctx: None))
    if kind == "wait_timer":
        return wait(nid, timer="1h", else_=NEXT if flag else end("replied"))
    if kind == "wait_event":
        return wait(nid, event="ping", up_to="1d")
    if kind == "decide":
        return decide(nid, schema=Choice, decide=lambda choice, state: NEXT, instructions="Pick.")
    return router(nid, when="'a' in data && data.a == 'set'", then=NEXT, else_=NEXT if flag else end("no-a"))


KINDS = ("collect_prompt", "collect_question", "collect_ask", "talk", "say", "confirm", "action", "wait_timer",
         "wait_event", "decide", "router")


@st.composite
def flows(draw: st.DrawFn, index: int, catch_all_taken: bool) -> Flow:
    count = draw(st.integers(1, 4))
    nodes = []
    for i in range(count):
        kind = draw(st.sampled_from(KINDS))
        names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True))
        if kind == "collect_ask" and draw(st.booleans()):
            names = ["ok"]
        flag = draw(st.booleans()) or (kind == "talk" and i < count - 1)  # a talk that stays ends the list
        nodes.append(_node(kind, i, names, flag))
    triggers = ["message", "always", "mention", "event"] + ([] if catch_all_taken else ["catch_all"])
    trigger = draw(st.sampled_from(triggers))
    if trigger == "event" and draw(st.booleans()):  # a follow-up: wait for the customer, or nudge them
        nodes.insert(0, wait("follow", timer="1h", else_=end("replied") if draw(st.booleans()) else NEXT))
    on = {"message": [on_message(f"topic {index}")], "always": [on_message(f"topic {index}", repeat="always")],
          "mention": [on_mention(f"mention {index}")], "event": [on_event("e")], "catch_all": [on_message()]}[trigger]
    collect_fields = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=2, unique=True))
    on_end = draw(st.sampled_from([None, None, "stay"]))
    extra: dict[str, Any] = {"on_end": on_end} if on_end else {}
    return Flow(f"f{index}", f"Flow {index}", nodes=nodes, on=on, collect=collect_fields, **extra)


class Spec:
    """A generated agent, shown by its flows when hypothesis reports a failing example."""

    def __init__(self, flows: list[Flow]) -> None:
        self.flows = flows
        self.agent = Agent("Ava", fields=FIELDS, flows=flows)

    def __repr__(self) -> str:
        return " | ".join(f"{f.id} on={[type(t).__name__ + str(getattr(t, 'phrases', '')) for t in f.on]} "
                          f"collect={list(f.collect)} on_end={f.on_end} nodes={[_show(n) for n in f.nodes]}"
                          for f in self.flows)


def _show(node: Node) -> str:
    detail = {k: v for k, v in vars(node).items() if v not in (None, (), [], {}) and k in (
        "fields", "prompt", "question", "ask", "instructions", "response", "next", "timer", "event", "else_",
        "branches", "then")}
    return f"{node.kind}:{node.id}{detail}"


@st.composite
def agents(draw: st.DrawFn) -> Spec:
    built: list[Flow] = []
    for index in range(draw(st.integers(1, 3))):
        catch_all_taken = any(isinstance(t, MessageTrigger) and not t.phrases for f in built for t in f.on)
        built.append(draw(flows(index, catch_all_taken)))
    return Spec(built)


@st.composite
def says(draw: st.DrawFn) -> dict[str, Any]:
    said: dict[str, Any] = {
        "flows": {f"f{i}": draw(st.sampled_from([0, 20, 45, 90])) for i in range(3)},
        "mentions": {f"f{i}": draw(st.booleans()) for i in range(3)},
        "true": draw(st.lists(st.sampled_from(STATEMENTS), max_size=1)),
        "asks": draw(st.booleans()),
    }
    for name, values in (("a", ["x", "set"]), ("b", ["y"]), ("c", [3, 40]), ("ok", [True, False])):
        if draw(st.booleans()):
            said[name] = draw(st.sampled_from(values))
    return said


steps = st.lists(st.one_of(says(), says(), st.tuples(st.just("silenced"), says()),
                           st.sampled_from(["event:e", "event:ping", "wake"])), min_size=1, max_size=8)


def _explain(result: TurnResult) -> str:
    lines = [f"{o.flow_id}/{o.node_id} {o.kind} {o.status} {o.code or ''} {o.detail or ''}" for o in result.outcomes]
    return "; ".join(lines)


async def _converse(agent: Agent, sequence: list[Any]) -> None:
    reader = Reader()
    convo = Conversation(agent, reader.model)
    wakes: dict[str, Any] = {}
    for step in sequence:
        if step == "wake":
            if not wakes:
                continue
            key, at = min(wakes.items(), key=lambda item: item[1])
            del wakes[key]
            if at > convo.clock.now():
                convo.clock.set(at)
            result = await convo.wake(key)
        elif isinstance(step, tuple):  # a human took over: nothing is sent, whoever would have answered
            reader.says = step[1]
            result = await convo.say("a message", silenced="a person answers")
            assert result.messages == [], f"a silenced turn spoke: {_explain(result)}"
        elif isinstance(step, str):
            result = await convo.event(step.split(":", 1)[1], key=f"k{len(convo.results)}", direction="inbound")
        else:
            reader.says = step
            result = await convo.say("a message")
            codes = {o.code for o in result.outcomes if o.code}
            assert result.messages or result.handoff is not None or codes & QUIET_REASONS, (
                f"a message was dropped: {_explain(result)}")
        for wake in result.schedule:
            if wake.replaces:
                wakes.pop(wake.replaces, None)
            wakes[wake.key] = wake.at


@pytest.mark.slow
@settings(max_examples=300)  # the follow-up-while-asking shape needs a few hundred agents to turn up
@given(agent=agents(), sequence=steps)
def test_every_message_turn_replies_or_says_why_not(agent: Spec, sequence: list[Any]) -> None:
    asyncio.run(_converse(agent.agent, sequence))
