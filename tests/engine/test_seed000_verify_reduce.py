"""Seed 000, "Two safety gates" and "Reducing a transition": verify before a goto commits, the
oscillation guard, the reduce events, data merge and the context strategies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from seed000_helpers import make_agent, say, scripted, the_run, types

from tether import OscillationError, Verify, action, end, goto, reply, stay, tool


class Booked(BaseModel):
    tracking_id: str


# --------------------------------------------------------------------------- verify


def booking_flow(returned: dict[str, Any], **verify_options: Any) -> Any:
    book = action("book", lambda s, c: goto("done", data=returned), **verify_options)
    done = reply("done", response="Booked ${tracking_id}.", next=end("booked"))
    return make_agent(book, done)


async def test_output_schema_passing_lets_the_goto_commit() -> None:
    result = await say(booking_flow({"tracking_id": "trk_1"}, output_schema=Booked), None)
    assert result.text == "Booked trk_1."
    assert result.ended[0].reason == "booked"


async def test_output_schema_failing_holds_position_and_emits_an_error() -> None:
    result = await say(booking_flow({"other": 1}, output_schema=Booked), None)
    run = the_run(result)
    assert (run.node, run.status) == ("book", "asking")
    assert result.status == "awaiting_user"
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.node == "book" and "Verify blocked on 'book'" in error.error and "tracking_id" in error.error
    assert "node-exit" not in types(result)
    assert "verify-blocked" in result.codes()


async def test_verify_output_schema_validates_state_merged_with_data() -> None:
    start = action("start", lambda s, c: goto("book", data={"tracking_id": "from-state"}))
    book = action("book", lambda s, c: goto("done"), verify=Verify(output_schema=Booked))
    done = reply("done", response="ok ${tracking_id}", next=end())
    result = await say(make_agent(start, book, done), None)
    assert result.text == "ok from-state"


async def test_verify_check_failing_blocks_and_the_next_turn_re_dispatches_the_node() -> None:
    attempts: list[str] = []

    def book(state: Any, ctx: Any) -> Any:
        attempts.append("run")
        return goto("done", data={"tries": len(attempts)})

    check = Verify(check=lambda state, data: data["tries"] >= 2)
    agent = make_agent(action("book", book, verify=check), reply("done", response="done", next=end("ok")))
    first = await say(agent, None, "go")
    assert the_run(first).node == "book"
    assert any(e.type == "error" and "Verify check failed on 'book'" in e.error for e in first.events)
    second = await say(agent, first.session, "again")
    assert attempts == ["run", "run"]
    assert second.ended[0].reason == "ok"


async def test_verify_check_sees_state_and_data_separately() -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def check(state: Any, data: Any) -> bool:
        seen.append((dict(state), dict(data)))
        return True

    start = action("start", lambda s, c: goto("mid", data={"a": 1}))
    mid = action("mid", lambda s, c: goto("done", data={"b": 2}), verify=Verify(check=check))
    done = reply("done", response="ok", next=end())
    await say(make_agent(start, mid, done), None)
    assert seen == [({"a": 1}, {"b": 2})]


async def test_a_verify_check_with_three_arguments_reads_the_step_log_of_its_dispatch() -> None:
    @tool
    async def charge(amount: int) -> dict[str, Any]:
        """Charge the card."""
        return {"charged": amount, "receipt": "r-1"}

    async def pay(state: Any, ctx: Any) -> Any:
        receipt = await ctx.tool("charge", amount=5)
        return goto("done", data={"receipt": receipt["receipt"]})

    seen: list[list[tuple[str, Any, Any]]] = []

    def check(state: Any, data: Any, steps: Any) -> bool:
        seen.append([(entry.name, entry.request, entry.result["value"]) for entry in steps])
        return any(entry.name == "charge" and entry.status == "finished" for entry in steps)

    agent = make_agent(action("pay", pay, uses=["charge"], verify=Verify(check=check)),
                       reply("done", response="paid", next=end("ok")), tools=[charge])
    result = await say(agent, None)
    assert result.ended[0].reason == "ok"
    assert seen == [[("charge", {"amount": 5}, {"charged": 5, "receipt": "r-1"})]]


async def test_verify_does_not_run_on_end() -> None:
    blocked = Verify(check=lambda state, data: False)
    agent = make_agent(action("finish", lambda s, c: end("bye"), verify=blocked))
    result = await say(agent, None)
    assert result.ended[0].reason == "bye"


async def test_verify_does_not_run_on_stay() -> None:
    blocked = Verify(check=lambda state, data: False)
    agent = make_agent(reply("wait_here", response="waiting", next=lambda t, s: stay, verify=blocked))
    result = await say(agent, None)
    assert "error" not in types(result)


# --------------------------------------------------------------------------- oscillation


def ping_pong(limit_before_exit: int, **flow_options: Any) -> Any:
    """a -> b -> a -> ... ; b exits after ``limit_before_exit`` visits of b in one turn."""
    counter = {"b": 0}

    def from_b(state: Any, ctx: Any) -> Any:
        counter["b"] += 1
        if counter["b"] >= limit_before_exit:
            counter["b"] = 0
            return end("escaped")
        return goto("a")

    return make_agent(action("a", lambda s, c: goto("b")), action("b", from_b), **flow_options)


async def test_two_traversals_of_one_edge_are_fine() -> None:
    result = await say(ping_pong(2, max_oscillations=2), None)  # a->b twice, b->a once
    assert result.ended[0].reason == "escaped"


async def test_the_third_traversal_of_one_edge_degrades_the_run_naming_the_edge() -> None:
    """Reference §1.9: the guard never throws out of the turn. The run degrades like a failed
    node: an error event and an error-log line name the edge, the customer hears the failure
    reply, the flow ends ``error_degraded`` and the session stays usable."""
    agent = ping_pong(99, max_oscillations=2)
    result = await say(agent, None)
    assert result.ended[0].reason == "error_degraded"
    assert result.text == agent.failure_reply
    (error,) = [e for e in result.events if e.type == "error"]
    assert error.node == "a" and "oscillation blocked: edge 'a' -> 'b'" in error.error
    assert "more than 2 time(s)" in error.error
    assert any("'a' -> 'b'" in line.message for line in result.session.error)
    again = await say(agent, result.session)  # the claim was released: the flow can start again
    assert again.ended[0].reason == "error_degraded"


async def test_an_oscillation_goes_to_the_escalate_node_when_the_flow_has_one() -> None:
    agent = make_agent(action("a", lambda s, c: goto("b")), action("b", lambda s, c: goto("a")),
                       reply("escalate", response="Let me get a person.", next=end("escalated")))
    result = await say(agent, None)
    assert result.text == f"{agent.failure_reply}\n\nLet me get a person."
    assert result.ended[0].reason == "escalated"


async def test_the_oscillation_error_names_the_edge() -> None:
    error = OscillationError("f", "a", "b", 2)
    assert (error.flow, error.source, error.target, error.limit, error.code) == ("f", "a", "b", 2, "oscillation")
    assert str(error) == "flow 'f': oscillation blocked: edge 'a' -> 'b' traversed more than 2 time(s) in one turn"


async def test_default_max_oscillations_is_two() -> None:
    assert (await say(ping_pong(3), None)).ended[0].reason == "error_degraded"  # a -> b a third time
    assert (await say(ping_pong(2), None)).ended[0].reason == "escaped"


async def test_oscillation_counts_reset_across_turns() -> None:
    visits = {"n": 0}

    def at_b(state: Any, ctx: Any) -> Any:
        visits["n"] += 1
        return stay if visits["n"] % 2 == 0 else goto("a")

    agent = make_agent(action("a", lambda s, c: goto("b")), action("b", at_b), max_oscillations=2)
    # each turn: a->b, b->a, a->b, then stay at b. Turn two: b->a, a->b, b stays... never three in a turn.
    result = await say(agent, None, "one")
    for text in ("two", "three", "four"):
        result = await say(agent, result.session, text)
    assert the_run(result).node == "b"


# --------------------------------------------------------------------------- reduce


async def test_goto_data_is_merged_into_state() -> None:
    seen: dict[str, Any] = {}
    first = action("first", lambda s, c: goto("second", data={"x": 1, "y": "two"}))
    second = action("second", lambda s, c: seen.update(s) or end("done"))
    result = await say(make_agent(first, second), None)
    assert seen == {"x": 1, "y": "two"}
    assert result.ended[0].reason == "done"


async def test_goto_data_persists_in_the_run_state_across_turns() -> None:
    first = action("first", lambda s, c: goto("wait_here", data={"x": 1}))
    wait_here = reply("wait_here", response="x is ${x}")
    result = await say(make_agent(first, wait_here), None)
    assert the_run(result).state["x"] == 1
    assert result.text == "x is 1"


async def test_reduce_emits_exit_transition_enter_in_that_order() -> None:
    result = await say(make_agent(action("a", lambda s, c: goto("b")), reply("b", response="B")), None)
    assert types(result) == ["flow-enter", "node-enter", "node-exit", "flow-transition", "node-enter"]
    exit_, transition, enter = result.events[2:]
    assert (exit_.node, transition.source, transition.target, enter.node) == ("a", "a", "b", "b")


# --------------------------------------------------------------------------- context strategies


async def conversation_then_talk(model: Any, *, node_context: Any = None, flow_context: Any = None) -> Any:
    """Turn 1: ``greet`` asks (engine-rendered), ``hold`` stays. Turn 2: ``hold`` moves to ``talk``
    (a model reply), so the speak call of turn 2 follows one context reduction into ``talk``."""
    holds = {"n": 0}

    def hold_run(state: Any, ctx: Any) -> Any:
        holds["n"] += 1
        return stay if holds["n"] == 1 else goto("talk")

    greet = reply("greet", response="What is your name?", next=lambda t, s: goto("hold"))
    hold = action("hold", hold_run)
    talk = reply("talk", instructions="Answer.", context=node_context, next=end("done"))
    options: dict[str, Any] = {"context": flow_context} if flow_context else {}
    agent = make_agent(greet, hold, talk, model=model, **options)
    first = await say(agent, None, "hello")
    assert the_run(first).node == "hold" and first.llm_calls == 0
    return await say(agent, first.session, "I am Ada")


async def test_append_is_the_default_and_keeps_everything() -> None:
    model = scripted(speak=["Hi Ada."])
    result = await conversation_then_talk(model)
    messages = [(m.role, m.content) for m in model.calls[0].request.messages]
    assert messages == [("user", "hello"), ("assistant", "What is your name?"), ("user", "I am Ada")]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_reset_on_the_entered_reply_node_leaves_the_last_user_message() -> None:
    model = scripted(speak=["Hi Ada."])
    result = await conversation_then_talk(model, node_context="reset")
    messages = [(m.role, m.content) for m in model.calls[0].request.messages]
    assert messages == [("user", "I am Ada")]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_the_flow_context_applies_when_the_node_has_none() -> None:
    model = scripted(speak=["Hi Ada."])
    await conversation_then_talk(model, flow_context="reset")
    assert model.calls[0].request.messages[0].content == "I am Ada"


async def test_the_node_context_wins_over_the_flow_context() -> None:
    model = scripted(speak=["Hi Ada."])
    await conversation_then_talk(model, node_context="append", flow_context="reset")
    assert model.calls[0].request.messages[0].content == "hello"


async def test_reset_with_summary_makes_one_summary_call_and_leaves_one_system_note() -> None:
    model = scripted(summary=["Ada introduced herself."], speak=["Hi Ada."])
    result = await conversation_then_talk(model, node_context="reset_with_summary")
    assert [c.call for c in model.calls] == ["summary", "speak"]
    assert result.llm_calls == 2 and model.unused() == {}
    speak = model.calls[1].request
    system = [m for m in speak.messages if m.role == "system"]
    assert [m.content for m in system] == ["Previous conversation summary: Ada introduced herself."]
    assert all(m.role == "system" for m in speak.messages)
    summary_prompt = model.calls[0].request.messages[-1].content
    assert "hello" in summary_prompt and "I am Ada" in summary_prompt


async def test_an_empty_summary_falls_back_to_reset() -> None:
    model = scripted(summary=[""], speak=["Hi Ada."])
    result = await conversation_then_talk(model, node_context="reset_with_summary")
    speak = model.calls[1].request
    assert not any(m.role == "system" for m in speak.messages)
    assert speak.messages[0].content == "I am Ada"
    assert result.llm_calls == 2 and model.unused() == {}


async def test_a_strategy_never_shortens_the_transcript() -> None:
    model = scripted(summary=["Ada introduced herself."], speak=["Hi Ada."])
    result = await conversation_then_talk(model, node_context="reset_with_summary")
    assert [(m.role, m.text) for m in result.session.messages] == [
        ("user", "hello"), ("assistant", "What is your name?"), ("user", "I am Ada"), ("assistant", "Hi Ada.")]


async def test_reset_keeps_system_messages() -> None:
    from tether.engine.core.session import TranscriptMessage

    holds = {"n": 0}

    def hold_run(state: Any, ctx: Any) -> Any:
        holds["n"] += 1
        return stay if holds["n"] == 1 else goto("talk")

    agent = make_agent(action("hold", hold_run), reply("talk", instructions="Answer.", context="reset", next=end()),
                       model=scripted(speak=["ok"]))
    first = await say(agent, None, "hello")
    session = first.session.model_copy(deep=True)
    session.message_seq += 1
    session.messages.append(TranscriptMessage(seq=session.message_seq, role="system", text="Policy: be brief.",
                                              at=session.created_at, kind="note"))
    second = await say(agent, session, "I am Ada")
    model = agent.model_for("default")
    assert [(m.role, m.content) for m in model.calls[0].request.messages] == [
        ("system", "Policy: be brief."), ("user", "I am Ada")]
    assert second.llm_calls == 1 and model.unused() == {}


async def test_a_failed_summary_call_falls_back_to_reset() -> None:
    from tether import ModelError

    def down(request: Any) -> Any:
        raise ModelError("provider down", kind="timeout")

    model = scripted(summary=[down], speak=["Hi Ada."])
    result = await conversation_then_talk(model, node_context="reset_with_summary")
    assert [(m.role, m.content) for m in model.calls[1].request.messages] == [("user", "I am Ada")]
    assert result.llm_calls == 2 and model.unused() == {}


async def test_verify_blocking_a_model_reply_re_speaks_it_next_turn() -> None:
    tries = {"n": 0}

    def after(turn: Any, state: Any) -> Any:
        tries["n"] += 1
        return goto("fin", data={"ok": tries["n"] >= 2})

    model = scripted(speak=["First try.", "Second try."])
    talk = reply("talk", instructions="Talk.", next=after, verify=Verify(check=lambda state, data: data["ok"]))
    agent = make_agent(talk, reply("fin", response="Done.", next=end("done")), model=model)
    first = await say(agent, None, "a")
    assert first.text == "First try." and the_run(first).node == "talk"
    assert "error" in types(first) and first.llm_calls == 1
    second = await say(agent, first.session, "b")
    assert second.text == "Second try.\n\nDone."
    assert second.ended[0].reason == "done" and second.llm_calls == 1
    assert model.unused() == {}


async def test_reset_with_summary_with_nothing_to_summarise_makes_no_call() -> None:
    from tether import Agent, Flow, Start
    from tether.testing import FakeClock, SequentialIds

    model = scripted(speak=["Hello, I speak first."])
    flow = Flow("manual", nodes=[action("a", lambda s, c: goto("talk")),
                                 reply("talk", instructions="Greet.", context="reset_with_summary", next=end())])
    agent = Agent("Tester", flows=[flow], idle="silent").with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Start("manual"))
    assert [c.call for c in model.calls] == ["speak"]
    assert result.llm_calls == 1 and model.unused() == {}


async def test_a_second_summary_consolidates_the_earlier_one() -> None:
    holds = {"n": 0}

    def hold_run(state: Any, ctx: Any) -> Any:
        holds["n"] += 1
        return stay if holds["n"] % 2 == 1 else goto("talk")

    model = scripted(summary=["S1.", "S2."], speak=["first", "second"])
    talk = reply("talk", instructions="Talk.", context="reset_with_summary", next=lambda t, s: goto("hold"))
    agent = make_agent(action("hold", hold_run), talk, model=model, max_oscillations=5)
    result = await say(agent, None, "one")  # hold stays
    result = await say(agent, result.session, "two")  # hold -> talk (summary S1, speak), talk -> hold stays
    result = await say(agent, result.session, "three")  # the same again: summary S2 folds S1 in
    assert [c.call for c in model.calls] == ["summary", "speak", "summary", "speak"]
    second_summary = model.calls[2].request.messages[-1].content
    assert "S1." in second_summary and "three" in second_summary
    last_speak = model.calls[3].request
    assert [m.content for m in last_speak.messages] == ["Previous conversation summary: S2."]
    assert result.llm_calls == 2 and model.unused() == {}
