"""Regression tests for seed 000 deviations found in review (each fixed in the engine)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from seed000_helpers import make_agent, say, scripted, the_run

from tether import Flow, Verify, action, collect, end, goto, judge_gate, reply, router


def noop(state: Any, ctx: Any) -> None:
    return None


# BUG 1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: [action("a", noop, then="b"), reply("b", response="at b", next=end("done"))],
    lambda: [reply("a", response="A", next="b"), reply("b", response="at b", next=end("done"))],
    lambda: [router("a", when=lambda *args: True, then="b"), reply("b", response="at b", next=end("done"))],
], ids=["action-then", "reply-next", "router-then"])
async def test_a_static_node_id_target_is_a_goto(make: Any) -> None:
    result = await say(make_agent(*make()), None)
    assert result.text.endswith("at b") and result.ended[0].reason == "done"


async def test_static_end_and_stay_strings_are_transitions() -> None:
    result = await say(make_agent(reply("a", response="A", next="end")), None)
    assert result.ended[0].reason == "end"
    result = await say(make_agent(reply("a", response="A", next="stay")), None)
    assert the_run(result).node == "a"


async def test_collect_static_on_complete_id() -> None:
    class Size(BaseModel):
        size: str
    from tether import enum_check
    node = collect("c", schema=Size, resolvers=[enum_check("size", ["small"])], on_complete="b")
    result = await say(make_agent(node, reply("b", response="got ${size}", next=end("done"))), None, "small")
    assert result.text == "got small"


# BUG 2 ------------------------------------------------------------------------------------------
def _digest(**kw: Any) -> str:
    return Flow("f", nodes=[action("a", noop, **kw)]).digest


def test_digest_changes_when_verify_changes() -> None:
    class B(BaseModel):
        x: str
    assert _digest() != _digest(verify=Verify(output_schema=B))
    assert _digest() != _digest(verify=Verify(check=lambda s, d: True))


def test_digest_changes_when_judge_gate_inputs_or_rubric_change() -> None:
    def d(**kw: Any) -> str:
        return Flow("f", nodes=[action("a", noop)], gates=[judge_gate("j", **kw)]).digest
    assert d(inputs=["state.x"]) != d(inputs=["state.y"])
    assert d(inputs=["state.x"]) != d(inputs=["state.x"], rubric="strict")


# BUG 3 ------------------------------------------------------------------------------------------
async def test_reset_keeps_only_system_messages_and_the_last_user_message() -> None:
    model = scripted(speak=["sure"])
    hello = reply("hello", response="Hello!", next=lambda t, s: goto("talk"))
    talk = reply("talk", instructions="Talk.", context="reset", next=end())
    await say(make_agent(hello, talk, model=model), None, "hi there")
    assert [(m.role, m.content) for m in model.calls[0].request.messages] == [("user", "hi there")]


# BUG 4 ------------------------------------------------------------------------------------------
async def test_optional_schema_fields_gathered_by_collect_are_promoted_too() -> None:
    class AB(BaseModel):
        a: str
        b: str | None = None
    seen: dict[str, Any] = {}
    model = scripted(extract=[{"a": "foo", "b": "bar"}])
    agent = make_agent(collect("c", schema=AB, required=["a"]), action("x", lambda s, c: seen.update(s)),
                       model=model)
    await say(agent, None, "a is foo, b is bar")
    assert seen == {"a": "foo", "b": "bar"}


# BUG 5 ------------------------------------------------------------------------------------------
async def test_verify_blocked_collect_keeps_its_gathered_fields() -> None:
    class Two(BaseModel):
        name: str
        zip: str
    node = collect("c", schema=Two, verify=Verify(check=lambda s, d: s.get("zip") == "12345"),
                   on_complete=lambda d, s: goto("fin"))
    fin = reply("fin", response="ok ${name} ${zip}", next=end("done"))
    model = scripted(extract=[{"name": "Bob", "zip": "99999"}, {"zip": "12345"}])
    agent = make_agent(node, fin, model=model)
    first = await say(agent, None, "Bob, 99999")
    assert the_run(first).node == "c"
    second = await say(agent, first.session, "sorry, zip is 12345")
    assert second.text == "ok Bob 12345"          # fails: "Could you share your name?"
    assert model.unused() == {}


# BUG 6 ------------------------------------------------------------------------------------------
async def test_the_dict_goto_form_with_non_mapping_data_is_a_transition_error_that_degrades() -> None:
    agent = make_agent(action("a", lambda s, c: {"goto": "b", "data": [1, 2]}), reply("b", response="x"))
    result = await say(agent, None)
    (error,) = [e for e in result.events if e.type == "error"]
    assert "TransitionError" in error.error and result.text != "x"


# OBSERVATION 7 ----------------------------------------------------------------------------------
async def test_a_blocked_handoff_does_not_hand_off() -> None:
    from tether import handoff, predicate_gate
    agent = make_agent(action("a", lambda s, c: handoff("billing")), gates=[predicate_gate("g", lambda sc: False)])
    result = await say(agent, None)
    assert result.ended[0].reason == "failed-verification"
    assert result.status != "handoff" and result.handoff is None   # fails: still hands off


# BUG 9 ------------------------------------------------------------------------------------------
async def test_an_interrupted_reply_with_no_text_sends_nothing() -> None:
    from tether.models.types import ModelResponse
    model = scripted(speak=[ModelResponse(text="", finish_reason="interrupted")])
    result = await say(make_agent(reply("r", instructions="Talk.", next=end()), model=model), None)
    assert result.messages == []                                   # fails: [OutMessage(text='', kind='ai', ...)]
    assert [m.role for m in result.session.messages] == ["user"]   # fails: an empty assistant entry


async def test_an_exception_in_user_code_names_the_flow_and_node() -> None:
    broken = reply("greet", response=lambda state: state["missing"], next=end("done"))
    agent = make_agent(broken, model=scripted())
    result = await say(agent, None)  # a user-code failure degrades the run (seed 000 §1.10)
    (error,) = [e for e in result.events if e.type == "error"]
    assert "node 'greet'" in error.error and "KeyError" in error.error
