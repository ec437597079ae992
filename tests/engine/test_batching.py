"""Batched segments at run time (seed 000): a chain of ``generate: true`` replies in a flow file
speaks in one model call; each member's ``next`` is then taken against that one turn, with verify,
the oscillation guard, events and a checkpoint between members."""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    Flow,
    Message,
    Session,
    TurnOptions,
    end,
    goto,
    on_message,
    reply,
    tool,
)
from tether.dialect import Registry, build_flow
from tether.dialect.spec import FlowFile
from tether.flow.nodes import Reply
from tether.models.types import ModelResponse
from tether.testing import FakeClock, ScriptedModel, SequentialIds

SPOKEN = "Hi! We have three plans. Each starts with a free trial."


def gen(node_id: str, next_: Any = None, **options: Any) -> dict[str, Any]:
    node = {"kind": "reply", "id": node_id, "generate": True, "instructions": f"Say {node_id}.", **options}
    if next_ is not None:
        node["next"] = next_
    return node


def file_agent(*nodes: dict[str, Any], model: ScriptedModel, tools: list[Any] | None = None,
               **flow_options: Any) -> Agent:
    doc = {"flow": {"id": "f", "on": [{"kind": "message"}], "nodes": list(nodes), **flow_options}}
    flow = build_flow(FlowFile.model_validate(doc).flow, Registry(actions={"noop": lambda args, ctx: None}))
    agent = Agent("Tester", flows=[flow], idle="silent", tools=tools or [])
    return agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))


async def say(agent: Agent, session: Session | None, text: str = "hi", **options: Any) -> Any:
    return await agent.turn(session, Message(text), **options)


def prompt_of(model: ScriptedModel, index: int = -1) -> str:
    return model.calls[index].request.instructions


def node_of(result: Any) -> str | None:
    return result.session.runs[0].node if result.session.runs else None


THREE = (gen("a", "b"), gen("b", {"goto": "c"}), gen("c", {"end": "done"}))


async def test_three_generate_replies_make_one_call_and_one_reply() -> None:
    model = ScriptedModel(speak=[SPOKEN])
    result = await say(file_agent(*THREE, model=model), None)
    assert [c.call for c in model.calls] == ["speak"] and result.llm_calls == 1
    assert result.text == SPOKEN and [m.text for m in result.messages] == [SPOKEN]
    assert result.ended[0].reason == "done"
    assert "Your task now: one message that does each of these, in this order:\n\nSay a.\n\nSay b.\n\nSay c." \
        in prompt_of(model)
    entered = [e.node for e in result.events if e.type == "node-enter"]
    assert entered == ["a", "b", "c"]
    talks = [(o.node_id, o.llm_calls) for o in result.outcomes if o.kind == "talk"]
    assert talks == [("a", 1), ("b", 0), ("c", 0)]


async def test_each_member_next_sees_the_one_model_turn() -> None:
    model = ScriptedModel(speak=[SPOKEN])
    doc = {"flow": {"id": "f", "on": [{"kind": "message"}], "nodes": [gen("a", "b"), gen("b", {"end": "done"})]}}
    flow = build_flow(FlowFile.model_validate(doc).flow)
    turns: list[Any] = []
    for node in flow.nodes:  # watch what the members' next receive (a file's next is never code)
        assert isinstance(node, Reply)

        def watching(turn: Any, state: Any, static: Any = node.next) -> Any:
            turns.append(turn)
            return goto(static) if isinstance(static, str) else static

        node.next = watching
    agent = Agent("Tester", flows=[flow], idle="silent").with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    result = await say(agent, None)
    assert result.ended[0].reason == "done" and len(model.calls) == 1
    assert [(t.text, t.rendered) for t in turns] == [(SPOKEN, "model"), (SPOKEN, "model")]


async def test_a_boundary_splits_the_chain_into_two_calls() -> None:
    model = ScriptedModel(speak=["First part.", "Second part."])
    agent = file_agent(gen("a", "b"), gen("b", "t"),
                       {"kind": "reply", "id": "t", "response": {"template": "Fixed text."}, "next": "c"},
                       gen("c", "d"), gen("d", {"end": "done"}), model=model)
    first = await say(agent, None)
    assert len(model.calls) == 1 and first.text == "First part.\n\nFixed text."
    assert (node_of(first), first.session.runs[0].status) == ("c", "asking")  # the turn has spoken: c waits
    second = await say(agent, first.session, "ok")
    assert len(model.calls) == 2 and second.text == "Second part." and second.ended[0].reason == "done"
    assert "Say c.\n\nSay d." in prompt_of(model) and "Say a." not in prompt_of(model)


async def test_a_failing_verify_mid_chain_stops_the_walk_there() -> None:
    model = ScriptedModel(speak=[SPOKEN, "Again."])
    needs_plan = {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}
    agent = file_agent(gen("a", "b"), gen("b", "c", output_schema=needs_plan), gen("c", {"end": "done"}),
                       model=model)
    first = await say(agent, None)
    assert len(model.calls) == 1 and first.text == SPOKEN
    assert node_of(first) == "b" and first.status == "awaiting_user"
    errors = [e.error for e in first.events if e.type == "error"]
    assert len(errors) == 1 and "Verify blocked on 'b'" in errors[0]
    assert [e.node for e in first.events if e.type == "node-enter"] == ["a", "b"]  # c never entered
    assert "verify-blocked" in first.codes()
    second = await say(agent, first.session, "go on")  # b speaks again, batched with what follows it
    assert len(model.calls) == 2 and "Say b.\n\nSay c." in prompt_of(model) and "Say a." not in prompt_of(model)
    assert node_of(second) == "b"


async def test_a_checkpoint_is_written_between_members() -> None:
    model = ScriptedModel(speak=[SPOKEN])
    positions: list[str | None] = []

    async def checkpoint(snapshot: Session, *rest: Any) -> int:
        positions.append(snapshot.runs[0].node if snapshot.runs else None)
        return snapshot.revision + 1

    await say(file_agent(*THREE, model=model), None, options=TurnOptions(checkpoint=checkpoint))
    assert positions[-2:] == ["b", "c"]


async def test_the_oscillation_guard_counts_the_walk() -> None:
    loop = ({"kind": "router", "id": "r", "when": {"op": "truthy", "value": {"literal": True}}, "then": "a"},
            gen("a", "b"), gen("b", "r"))
    # r -> a, one speak, a -> b -> r walked, r -> a again: the guard degrades the run
    once = await say(file_agent(*loop, model=ScriptedModel(speak=[SPOKEN]), max_oscillations=1), None)
    (error,) = [e for e in once.events if e.type == "error"]
    assert error.node == "r" and "edge 'r' -> 'a'" in error.error
    assert once.ended[0].reason == "error_degraded"
    twice = await say(file_agent(*loop, model=ScriptedModel(speak=[SPOKEN]), max_oscillations=2), None)
    assert node_of(twice) == "a"  # back at a after the walk; it has spoken this turn, so it waits


async def test_python_flows_are_not_batched() -> None:
    model = ScriptedModel(speak=["One.", "Two."])
    flow = Flow("f", nodes=[reply("a", instructions="Say a.", next="b"),
                            reply("b", instructions="Say b.", next=end("done"))], on=[on_message()])
    agent = Agent("Tester", flows=[flow], idle="silent").with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    first = await say(agent, None)
    assert len(model.calls) == 1 and node_of(first) == "b" and "Say b." not in prompt_of(model)
    second = await say(agent, first.session)
    assert len(model.calls) == 2 and second.ended[0].reason == "done"


async def test_a_member_with_its_own_tools_is_spoken_node_by_node() -> None:
    model = ScriptedModel(speak=["One.", "Two."])
    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return "shipped"

    agent = file_agent(gen("a", "b"), gen("b", {"end": "done"}, tools=["lookup"]), model=model, tools=[lookup])
    first = await say(agent, None)
    assert len(model.calls) == 1 and node_of(first) == "b" and "Say b." not in prompt_of(model)
    second = await say(agent, first.session)
    assert len(model.calls) == 2 and second.ended[0].reason == "done"


async def test_an_interrupted_turn_is_not_walked() -> None:
    cut = ModelResponse(text="Hi! We have", finish_reason="interrupted")
    model = ScriptedModel(speak=[cut, SPOKEN])
    agent = file_agent(*THREE, model=model)
    first = await say(agent, None)
    assert node_of(first) == "a" and [e.node for e in first.events if e.type == "node-enter"] == ["a"]
    second = await say(agent, first.session, "sorry, go on")
    assert len(model.calls) == 2 and "Say a.\n\nSay b.\n\nSay c." in prompt_of(model)
    assert second.ended[0].reason == "done"


class Crash(BaseException):
    """The worker dies at the checkpoint, right after the write."""


async def test_a_turn_continued_after_a_crash_mid_walk_waits_at_the_member_it_reached() -> None:
    model = ScriptedModel(speak=[SPOKEN, "The rest."])
    agent = file_agent(*THREE, model=model)
    written: list[Session] = []

    async def checkpoint(snapshot: Session, *rest: Any) -> int:
        written.append(snapshot.model_copy(deep=True))  # valid during the call only: keep a copy
        if snapshot.runs and snapshot.runs[0].node == "b":
            raise Crash()  # a -> b written, then the worker dies
        return snapshot.revision + 1

    with pytest.raises(Crash):
        await agent.turn(None, Message("hi", id="m1"), options=TurnOptions(checkpoint=checkpoint))
    continued = await agent.turn(written[-1], Message("hi", id="m1"))
    assert continued.text == SPOKEN and len(model.calls) == 1  # the one reply, not spoken again
    assert node_of(continued) == "b"
    after = await say(agent, continued.session, "and?")
    assert len(model.calls) == 2 and "Say b.\n\nSay c." in prompt_of(model) and after.ended[0].reason == "done"


async def test_with_no_model_a_segment_says_every_member_fallback_in_one_message() -> None:
    nodes = [gen(n, nxt, fallback=f"Fallback {n}.") for n, nxt in (("a", "b"), ("b", {"goto": "c"}),
                                                                   ("c", {"end": "done"}))]
    result = await say(file_agent(*nodes, model=None), None)  # type: ignore[arg-type]
    assert [m.text for m in result.messages] == ["Fallback a.\n\nFallback b.\n\nFallback c."]
    assert [e.node for e in result.events if e.type == "node-enter"] == ["a", "b", "c"]
    assert result.ended[0].reason == "done" and result.llm_calls == 0


async def test_with_no_model_a_segment_with_a_member_lacking_a_fallback_is_spoken_one_node_at_a_time() -> None:
    nodes = [gen("a", "b", fallback="Fallback a."), gen("b", {"goto": "c"}), gen("c", {"end": "done"},
                                                                                  fallback="Fallback c.")]
    agent = file_agent(*nodes, model=None)  # type: ignore[arg-type]
    first = await say(agent, None)
    assert first.text == "Fallback a." and node_of(first) == "b"  # b waits: the turn has spoken
    second = await say(agent, first.session, "ok")  # b has no fallback: loud, as without batching
    assert second.text == agent.failure_reply
    assert any(e.type == "error" and "needs a language model" in e.error for e in second.events)
