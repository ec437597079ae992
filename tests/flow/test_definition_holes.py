"""Definition-time holes (issue 16): a target that names no registered node, a reserved id used as
a goto target, or a value of the wrong type is refused when the flow is built, with a coded
FlowDefinitionError; an impostor node returned at run time is ``inline-transition-target``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import (
    Agent,
    Field,
    Flow,
    FlowDefinitionError,
    Start,
    TransitionError,
    action,
    collect,
    decide,
    goto,
    reply,
    start_flow,
)
from tether.flow.transitions import normalize
from tether.testing import FakeClock, SequentialIds


def act(state: Any, ctx: Any) -> None:
    return None


def issues_of(build: Any) -> list[tuple[str, str | None, str | None]]:
    with pytest.raises(FlowDefinitionError) as info:
        build()
    return [(i.code, i.node, i.path) for i in info.value.issues]


class Yes(BaseModel):
    yes: bool


# --------------------------------------------------------------------------- goto(node) keeps identity


def test_static_goto_of_an_impostor_node_is_inline_transition_target() -> None:
    b = reply("b", response="B")
    impostor = reply("b", response="not the registered one")
    a = action("a", act, then=goto(impostor))
    assert issues_of(lambda: Flow("f", nodes=[a, b])) == [("inline-transition-target", "a", "nodes.0.then")]


def test_static_goto_of_the_registered_node_builds() -> None:
    b = reply("b", response="B")
    a = action("a", act, then=goto(b, {"x": 1}))
    flow = Flow("f", nodes=[a, b])
    assert flow.resolve_static("a", a.then).target == "b"  # type: ignore[union-attr]


def test_a_returned_goto_of_an_impostor_is_inline_transition_target() -> None:
    b = reply("b", response="B")
    impostor = reply("b", response="not the registered one")
    with pytest.raises(TransitionError) as info:
        normalize(goto(impostor), flow="f", node="a", nodes={"b": b})
    assert info.value.code == "inline-transition-target"
    assert normalize(goto(b), flow="f", node="a", nodes={"b": b}).target == "b"  # type: ignore[union-attr]


async def test_an_action_returning_goto_of_an_impostor_does_not_run_the_registered_node() -> None:
    impostor = reply("b", response="impostor speaks")
    b = reply("b", response="registered speaks")
    flow = Flow("f", nodes=[action("a", lambda s, c: goto(impostor)), b])
    agent = Agent("Bot", flows=[flow], idle="silent").with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Start("f", key="k1"))  # the author's bug degrades the run
    (error,) = [e for e in result.events if e.type == "error"]
    assert "(inline-transition-target)" in error.error
    assert "'b'" in error.error and "'a'" in error.error
    assert "speaks" not in result.text and [ended.reason for ended in result.ended] == ["error_degraded"]


# --------------------------------------------------------------------------- reserved ids as goto targets


@pytest.mark.parametrize("reserved", ["end", "stay"])
def test_goto_of_a_reserved_id_is_a_coded_definition_error(reserved: str) -> None:
    a = action("a", act, then=goto(reserved))
    b = reply("b", response="B")
    issues = issues_of(lambda: Flow("f", nodes=[a, b]))
    assert issues == [("unresolved-transition", "a", "nodes.0.then")]


@pytest.mark.parametrize("reserved", ["end", "stay"])
def test_goto_of_a_reserved_id_in_a_reply_next_is_refused(reserved: str) -> None:
    a = reply("a", response="A", next=goto(reserved))
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[a])
    assert info.value.code == "unresolved-transition"
    assert f"{reserved}()" in str(info.value) or "stay" in str(info.value)


def test_the_plain_strings_end_and_stay_stay_valid_static_targets() -> None:
    Flow("f", nodes=[action("a", act, then="end")])
    Flow("f", nodes=[reply("a", response="A", next="stay")])


# --------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize("bad", [42, 4.5, b"b", ["b"], {"b"}, object()])
def test_a_reply_next_of_the_wrong_type_is_refused_at_build(bad: Any) -> None:
    a = reply("a", response="A", next=bad)
    assert issues_of(lambda: Flow("f", nodes=[a])) == [("unresolved-transition", "a", "nodes.0.next")]


@pytest.mark.parametrize("bad", [42, ["x"]])
def test_a_collect_on_complete_of_the_wrong_type_is_refused_at_build(bad: Any) -> None:
    c = collect("c", schema=Yes, on_complete=bad)
    assert issues_of(lambda: Flow("f", nodes=[c])) == [("unresolved-transition", "c", "nodes.0.on_complete")]


def test_a_decide_function_of_the_wrong_type_is_refused_at_build() -> None:
    d = decide("d", schema=Yes, decide=42)  # type: ignore[arg-type]
    assert issues_of(lambda: Flow("f", nodes=[d])) == [("unresolved-transition", "d", "nodes.0.decide")]


# --------------------------------------------------------------------------- the seed's mapping forms


def test_a_static_mapping_target_is_checked_like_a_goto() -> None:
    b = reply("b", response="B")
    Flow("f", nodes=[reply("a", response="A", next={"goto": "b"}), b])
    bad = reply("a", response="A", next={"goto": "nowhere"})
    assert issues_of(lambda: Flow("f", nodes=[bad, b])) == [("unresolved-transition", "a", "nodes.0.next")]
    assert issues_of(lambda: Flow("f", nodes=[action("a", act, then={}), b])) == [
        ("unresolved-transition", "a", "nodes.0.then")]


def test_a_start_flow_without_a_flow_id_is_refused() -> None:
    a = action("a", act, then=start_flow(42))  # type: ignore[arg-type]
    assert issues_of(lambda: Flow("f", nodes=[a])) == [("unresolved-transition", "a", "nodes.0.then")]


def test_trigger_phrases_that_are_not_text_are_refused_with_a_code() -> None:
    from tether import on_message

    a = reply("a", response="A")
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[a], on=[on_message(["book a table"])])  # type: ignore[arg-type]
    assert info.value.code == "invalid-trigger" and "own argument" in str(info.value)


@pytest.mark.parametrize(("declared", "words"), [
    (Field(str), "type is <class 'str'>"),  # type: ignore[arg-type]
    (Field("text"), "type is 'text'"),  # type: ignore[arg-type]
    (Field("string", extract="always"), "extract is 'always'"),  # type: ignore[arg-type]
    (Field("string", enum="abc"), "enum is 'abc'"),  # type: ignore[arg-type]
    ("string", "is not a Field"),
])
def test_a_malformed_agent_field_is_refused_when_the_agent_is_built(declared: Any, words: str) -> None:
    from tether import Agent

    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", fields={"name": declared})
    assert [(i.code, i.path) for i in info.value.issues] == [("invalid-field", "fields.name")]
    assert words in str(info.value)


@pytest.mark.parametrize(("build", "path"), [
    (lambda: collect("c", schema=42), "nodes.0.schema"),  # type: ignore[arg-type]
    (lambda: collect("c", fields="name"), "fields"),
    (lambda: collect("c", schema=Yes, resolvers=[42]), "nodes.0.resolvers"),
    (lambda: decide("d", schema=42, decide=lambda d, s: None), "nodes.0.schema"),  # type: ignore[arg-type]
    (lambda: reply("r", response=42), "nodes.0.response"),  # type: ignore[arg-type]
    (lambda: reply("r", instructions="x", tools="lookup"), "tools"),
    (lambda: reply("r", response="x", output_schema=42), "nodes.0.output_schema"),  # type: ignore[arg-type]
    (lambda: reply("r", response="x", verify=42), "nodes.0.verify"),  # type: ignore[arg-type]
    (lambda: action("a", 42), "nodes.0.run"),  # type: ignore[call-overload]
])
def test_options_of_the_wrong_type_are_refused_when_defined(build: Any, path: str) -> None:
    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=[build()])
    assert [(i.code, i.path) for i in info.value.issues] == [("invalid-option", path)]


def test_nodes_that_are_not_a_list_and_agents_given_non_flows_are_refused_with_codes() -> None:
    from tether import Agent

    with pytest.raises(FlowDefinitionError) as info:
        Flow("f", nodes=None)  # type: ignore[arg-type]
    assert info.value.code == "invalid-node"
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[42], tools=[42])  # type: ignore[list-item]
    assert [i.code for i in info.value.issues] == ["invalid-flow", "invalid-tool"]
