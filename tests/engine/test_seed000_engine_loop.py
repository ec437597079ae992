"""Seed 000, "The engine loop": resolve the entry node (the recorded one, else start), dispatch,
act on the transition (end/handoff/escalate leave, stay pauses, goto advances), repeat; plus the
events it narrates and pause/resume of a run across turns."""

from __future__ import annotations

from typing import Any

from seed000_helpers import make_agent, say, scripted, the_run, types

from tether import (
    Agent,
    Event,
    Flow,
    Message,
    Session,
    Start,
    action,
    end,
    escalate,
    goto,
    handoff,
    on_message,
    reply,
    start_flow,
    stay,
)
from tether.engine.core.inputs import TurnOptions
from tether.engine.graph.runner import MAX_STEPS
from tether.testing import FakeClock, SequentialIds


def noop(state: Any, ctx: Any) -> None:
    return None


# --------------------------------------------------------------------------- entry and leaving


async def test_first_entry_dispatches_the_start_node() -> None:
    first = reply("first", response="I am second in the list but the start.", next=lambda turn, state: end("done"))
    other = reply("other", response="never", next=end("x"))
    agent = make_agent(other, first, start=first)
    result = await say(agent, None)
    assert result.text == "I am second in the list but the start."
    assert result.llm_calls == 0


async def test_end_leaves_the_flow_with_its_reason() -> None:
    agent = make_agent(reply("bye", response="Bye!", next=end("finished")))
    result = await say(agent, None)
    assert result.status == "ended"
    assert result.session.runs == []
    assert [(e.flow, e.reason) for e in result.ended] == [("f", "finished")]


async def test_handoff_leaves_the_flow_and_names_the_agent() -> None:
    agent = make_agent(action("route", lambda s, c: handoff("billing", "invoice question")))
    result = await say(agent, None)
    assert result.status == "handoff"
    assert result.handoff is not None and result.handoff.agent == "billing"
    assert result.handoff.reason == "invoice question"
    assert result.session.runs == []
    assert "handoff" in types(result)


async def test_escalate_hands_off_to_human() -> None:
    agent = make_agent(action("route", lambda s, c: escalate("customer is upset")))
    result = await say(agent, None)
    assert result.status == "handoff"
    assert result.handoff is not None
    assert (result.handoff.agent, result.handoff.reason) == ("human", "customer is upset")
    assert result.session.runs == []


async def test_dict_forms_drive_the_engine_too() -> None:
    target = reply("target", response="arrived at ${k}", next={"end": "dict-end"})
    agent = make_agent(action("a", lambda s, c: {"goto": "target", "data": {"k": "v"}}), target)
    result = await say(agent, None)
    assert result.text == "arrived at v"
    assert result.ended[0].reason == "dict-end"


async def test_start_flow_ends_this_run_and_starts_the_other_flow() -> None:
    child = Flow("child", nodes=[reply("hello", response="child says ${input.who}", next=end("child-done"))])
    parent = Flow("parent", nodes=[action("go", lambda s, c: start_flow("child", {"who": "hi"}))], on=[on_message()])
    agent = Agent("Tester", flows=[parent, child], idle="silent").with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("go"))
    assert [(e.flow, e.reason) for e in result.ended] == [("parent", "flow"), ("child", "child-done")]
    assert [s.flow for s in result.started] == ["parent", "child"]
    assert result.text == "child says hi"  # the run's input is read as {input.who}, not {who}


def degraded_by(result: Any) -> str:
    """The error of the run the turn degraded (its failure reply said, the flow ended ``error_degraded``)."""
    (error,) = [e for e in result.events if e.type == "error"]
    assert [ended.reason for ended in result.ended] == ["error_degraded"]
    assert result.session.error[-1].code == "node-failed" and result.session.status == "running"
    return str(error.error)


async def test_a_malformed_transition_degrades_the_run_loudly() -> None:
    agent = make_agent(action("a", lambda s, c: 42))
    result = await say(agent, None)
    assert degraded_by(result).startswith("flow 'f', node 'a': TransitionError: returned 42")


async def test_returning_an_unregistered_node_at_run_time_is_inline_transition_target() -> None:
    stranger = reply("b", response="not registered")
    b = reply("b", response="registered")
    agent = make_agent(action("a", lambda s, c: stranger), b)
    result = await say(agent, None)
    assert "(inline-transition-target)" in degraded_by(result)
    assert "registered" not in result.text


async def test_returning_a_thunk_at_run_time_is_inline_transition_target() -> None:
    b = reply("b", response="B")
    agent = make_agent(action("a", lambda s, c: (lambda: b)), b)
    result = await say(agent, None)
    assert "inline-transition-target" in degraded_by(result)
    assert result.text != "B"


async def test_next_after_the_last_node_ends_the_flow() -> None:
    agent = make_agent(reply("only", response="Hello", next=lambda turn, state: _next()))
    result = await say(agent, None)
    assert result.ended[0].reason == "end"


def _next() -> Any:
    from tether import NEXT

    return NEXT


# --------------------------------------------------------------------------- stay and resume


async def test_stay_pauses_awaiting_the_user_and_the_next_message_re_enters_the_same_node() -> None:
    seen: list[str] = []

    def hold(turn: Any, state: Any) -> Any:
        seen.append(turn.text)
        return stay if len(seen) < 2 else end("released")

    agent = make_agent(reply("hold", response="Holding.", next=hold), reply("later", response="never"))
    first = await say(agent, None, "one")
    assert first.status == "awaiting_user"
    run = the_run(first)
    assert (run.node, run.status) == ("hold", "asking")
    second = await say(agent, first.session, "two")
    assert second.text == "Holding."
    assert second.status == "ended" and second.ended[0].reason == "released"
    assert seen == ["Holding.", "Holding."]


async def test_a_reply_with_no_next_stays() -> None:
    agent = make_agent(reply("hello", response="Hi!"))
    first = await say(agent, None)
    assert first.status == "awaiting_user" and the_run(first).node == "hello"
    second = await say(agent, first.session)
    assert second.text == "Hi!" and the_run(second).node == "hello"


async def test_a_parked_run_resumes_at_the_node_it_left_after_a_json_round_trip() -> None:
    agent = make_agent(
        reply("greet", response="Hello.", next=lambda turn, state: goto("ask")),
        reply("ask", response="What now?", next=lambda turn, state: stay if state.get("n") is None else end()),
    )
    first = await say(agent, None, "hi")
    assert the_run(first).node == "ask"
    restored = Session.model_validate_json(first.session.model_dump_json())
    assert restored == first.session
    second = await say(agent, restored, "again")
    assert the_run(second).node == "ask"
    assert second.text == "What now?"  # re-entered at ask, not at greet


async def test_goto_advances_and_records_the_position() -> None:
    agent = make_agent(
        action("a", lambda s, c: goto("b")),
        reply("b", response="at b"),
    )
    result = await say(agent, None)
    run = the_run(result)
    assert run.node == "b"
    assert run.visits == {"a": 1, "b": 1}


async def test_a_turn_never_mutates_the_session_passed_in() -> None:
    agent = make_agent(
        reply("one", response="One.", next=lambda turn, state: goto("two", {"k": 1})),
        reply("two", response="Two.", next=lambda turn, state: stay),
    )
    first = await say(agent, None, "a")
    before = first.session.model_copy(deep=True)
    second = await say(agent, first.session, "b")
    assert first.session == before
    assert second.session is not first.session


async def test_a_message_turn_given_the_session_works_on_it_in_place() -> None:
    """``TurnOptions(gives_session=True)`` (what the runtime passes with a document it has just
    loaded): a message's turn skips the copy; the result is the same as on a copy."""
    agent = make_agent(
        reply("one", response="One.", next=lambda turn, state: goto("two", {"k": 1})),
        reply("two", response="Two.", next=lambda turn, state: stay),
    )
    first = await say(agent, None, "a")
    copied = await say(agent, first.session.model_copy(deep=True), "b")
    given_doc = first.session.model_copy(deep=True)
    given = await agent.turn(given_doc, Message("b"), options=TurnOptions(gives_session=True))
    assert given.session is given_doc and given.changed
    assert given.text == copied.text == "Two."
    assert given.session.model_dump(exclude={"runs"}) == copied.session.model_dump(exclude={"runs"})
    assert [r.model_dump() for r in given.session.runs] == [r.model_dump() for r in copied.session.runs]


async def test_an_event_or_a_continued_turn_works_on_a_copy_even_when_given() -> None:
    agent = make_agent(reply("one", response="One.", next=lambda turn, state: stay))
    first = await say(agent, None, "a")
    before = first.session.model_copy(deep=True)
    quiet = await agent.turn(first.session, Event("nobody.listens"), options=TurnOptions(gives_session=True))
    assert first.session == before and quiet.session is not first.session
    assert not quiet.changed  # an event nothing handles changes nothing: no save


async def test_a_manual_start_enters_at_start_without_a_message() -> None:
    flow = Flow("manual", nodes=[reply("hello", response="Started by hand.", next=end("done"))])
    agent = Agent("Tester", flows=[flow], idle="silent").with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Start("manual"))
    assert result.text == "Started by hand."
    assert result.ended[0].reason == "done" and result.llm_calls == 0


# --------------------------------------------------------------------------- step cap


async def test_more_than_fifty_steps_in_one_turn_ends_the_run_with_step_loop() -> None:
    ping = action("ping", lambda s, c: goto("pong"))
    pong = action("pong", lambda s, c: goto("ping"))
    agent = make_agent(ping, pong, max_oscillations=1000)
    result = await say(agent, None)
    assert "step-loop" in result.codes()
    assert result.session.runs == []
    assert result.ended[0].reason == "failed"
    step_loop = next(o for o in result.outcomes if o.code == "step-loop")
    assert step_loop.status == "failed"
    assert MAX_STEPS == 50
    # the start is entered, then each of the 50 dispatches moved once more
    assert sum(1 for t in types(result) if t == "node-enter") == MAX_STEPS + 1


# --------------------------------------------------------------------------- events


async def test_the_full_ordered_event_list_of_a_small_flow() -> None:
    agent = make_agent(
        action("a", noop),  # -> NEXT
        reply("b", response="B said", next=lambda turn, state: goto("c")),
        reply("c", response="C said", next=end("done")),
    )
    result = await say(agent, None)
    assert [(e.type, getattr(e, "node", None)) for e in result.events] == [
        ("flow-enter", None),
        ("node-enter", "a"),
        ("node-exit", "a"),
        ("flow-transition", None),
        ("node-enter", "b"),
        ("node-exit", "b"),
        ("flow-transition", None),
        ("node-enter", "c"),
        ("flow-end", None),  # no node-exit at flow end
    ]
    transitions = [(e.source, e.target) for e in result.events if e.type == "flow-transition"]
    assert transitions == [("a", "b"), ("b", "c")]
    flow_end = result.events[-1]
    assert (flow_end.flow, flow_end.reason) == ("f", "done")
    assert all(e.run_id == result.ended[0].run_id for e in result.events)
    assert [m.kind for m in result.messages] == ["verbatim", "verbatim"]


async def test_a_paused_turn_has_no_flow_end() -> None:
    agent = make_agent(reply("hello", response="Hi!"))
    result = await say(agent, None)
    assert types(result) == ["flow-enter", "node-enter"]


async def test_a_model_reply_turn_counts_its_one_call() -> None:
    model = scripted(speak=["Hello from the model."])
    agent = make_agent(reply("talk", instructions="Greet.", next=end("done")), model=model)
    result = await say(agent, None)
    assert result.llm_calls == 1 and model.unused() == {}
    assert result.text == "Hello from the model."


# --------------------------------------------------------------------------- static targets


async def test_a_static_node_id_is_a_goto() -> None:
    result = await say(make_agent(action("a", noop, then="b"), reply("b", response="at b", next=end("done"))), None)
    assert result.text == "at b" and result.ended[0].reason == "done"


async def test_static_end_and_stay_strings() -> None:
    ended = await say(make_agent(reply("a", response="A", next="end")), None)
    assert ended.ended[0].reason == "end"
    stayed = await say(make_agent(reply("a", response="A", next="stay")), None)
    assert the_run(stayed).node == "a" and the_run(stayed).status == "asking"


async def test_a_static_registered_node_object_is_a_goto() -> None:
    b = reply("b", response="at b", next=end("done"))
    result = await say(make_agent(action("a", noop, then=b), b), None)
    assert result.text == "at b"


async def test_a_next_function_returning_a_bare_id_string_is_not_a_transition() -> None:
    agent = make_agent(reply("a", response="A", next=lambda turn, state: "b"), reply("b", response="B"))
    result = await say(agent, None)
    assert "returned 'b'" in degraded_by(result) and "B" not in result.text.split("\n\n")
