"""Seed 000, definition-time validation: a malformed flow fails when it is built, with one
aggregated FlowDefinitionError whose issues carry a stable code, the flow, the node and a path.
Also the flow digest and the mermaid drawing."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import (
    Agent,
    Field,
    Flow,
    FlowDefinitionError,
    Verify,
    action,
    collect,
    decide,
    do,
    end,
    goto,
    predicate_gate,
    reply,
    tool,
    wait,
)


class Address(BaseModel):
    address: str


class Choice(BaseModel):
    yes: bool


def act(state: Any, ctx: Any) -> None:
    return None


def issues_of(build: Any) -> list[Any]:
    with pytest.raises(FlowDefinitionError) as info:
        build()
    return info.value.issues


def codes_of(build: Any) -> list[str]:
    return [i.code for i in issues_of(build)]


# --------------------------------------------------------------------------- graph issues


def test_duplicate_node_id() -> None:
    first, second = action("a", act), action("a", act)
    (issue,) = issues_of(lambda: Flow("f", nodes=[first, second]))
    assert (issue.code, issue.flow, issue.node, issue.path) == ("duplicate-node-id", "f", "a", "nodes.1.id")


def test_missing_start_when_start_is_not_registered() -> None:
    a, stranger = action("a", act), action("stranger", act)
    issues = issues_of(lambda: Flow("f", start=stranger, nodes=[a]))
    assert [(i.code, i.path) for i in issues] == [("missing-start", "start")]


def test_missing_start_when_a_same_id_node_is_not_the_registered_member() -> None:
    a, twin = action("a", act), action("a", act)
    assert codes_of(lambda: Flow("f", start=twin, nodes=[a])) == ["missing-start"]


def test_missing_start_when_there_are_no_nodes() -> None:
    (issue,) = issues_of(lambda: Flow("f"))
    assert issue.code == "missing-start" and issue.flow == "f"


def test_unresolved_transition_for_an_unknown_static_target() -> None:
    a = action("a", act, then="nowhere")
    (issue,) = issues_of(lambda: Flow("f", nodes=[a]))
    assert (issue.code, issue.node, issue.path) == ("unresolved-transition", "a", "nodes.0.then")
    assert "nowhere" in issue.message


def test_unreachable_node_when_no_opaque_node_is_reachable() -> None:
    hello = reply("hello", response="Hi!")  # engine-rendered, no next: it only stays
    orphan = reply("orphan", response="never said")
    (issue,) = issues_of(lambda: Flow("f", nodes=[hello, orphan]))
    assert (issue.code, issue.node, issue.path) == ("unreachable-node", "orphan", "nodes.1")


def test_an_opaque_reachable_node_makes_everything_reachable() -> None:
    start = reply("start", response="Hi!", next=lambda turn, state: end())
    orphan = reply("orphan", response="maybe")
    Flow("f", nodes=[start, orphan])  # no error


def test_static_chain_reaches_every_node() -> None:
    one = reply("one", response="1", next="two")
    two = reply("two", response="2", next=end("done"))
    Flow("f", nodes=[one, two])


def test_inline_static_then_target() -> None:
    unregistered = reply("elsewhere", response="x")
    a = action("a", act, then=unregistered)
    (issue,) = issues_of(lambda: Flow("f", nodes=[a]))
    assert (issue.code, issue.node, issue.path) == ("inline-transition-target", "a", "nodes.0.then")


def test_inline_target_even_when_its_id_matches_a_registered_node() -> None:
    b = reply("b", response="B")
    impostor = reply("b", response="not the registered one")
    a = action("a", act, then=impostor)
    assert codes_of(lambda: Flow("f", nodes=[a, b])) == ["inline-transition-target"]


def test_thunk_as_start_is_inline_transition_target() -> None:
    a = reply("a", response="A", next=end())
    issues = issues_of(lambda: Flow("f", start=lambda: a, nodes=[a]))  # type: ignore[arg-type]
    assert [(i.code, i.path) for i in issues] == [("inline-transition-target", "start")]


def test_thunk_as_reply_next_is_inline_transition_target() -> None:
    b = reply("b", response="B", next=end())
    a = reply("a", response="A", next=lambda: b)
    (issue,) = issues_of(lambda: Flow("f", nodes=[a, b]))
    assert (issue.code, issue.node, issue.path) == ("inline-transition-target", "a", "nodes.0.next")


def test_duplicate_gate_ids_are_invalid_gate() -> None:
    a = action("a", act)
    gates = [predicate_gate("g", lambda s: True), predicate_gate("g", lambda s: True)]
    (issue,) = issues_of(lambda: Flow("f", nodes=[a], gates=gates))
    assert (issue.code, issue.path) == ("invalid-gate", "gates.1.id")


def test_all_issues_are_reported_at_once() -> None:
    a1, a2 = action("a", act, then="x"), action("a", act)
    error_codes = codes_of(lambda: Flow("f", nodes=[a1, a2]))
    assert sorted(error_codes) == ["duplicate-node-id", "unresolved-transition"]


def test_the_error_message_names_the_flow_and_lists_each_issue() -> None:
    a = action("a", act, then="x")
    with pytest.raises(FlowDefinitionError) as info:
        Flow("shipping", nodes=[a])
    text = str(info.value)
    assert text.startswith("Flow 'shipping' failed validation with 1 issue(s)")
    assert "[unresolved-transition]" in text
    assert info.value.code == "unresolved-transition"


def test_flow_definition_error_is_a_type_and_value_error() -> None:
    with pytest.raises(ValueError):
        Flow("f")
    with pytest.raises(TypeError):
        Flow("f")


# --------------------------------------------------------------------------- invalid options


@pytest.mark.parametrize(
    ("make", "path"),
    [
        (lambda: collect("c"), "nodes.0.schema"),
        (lambda: collect("c", schema=Address, required=["zip"]), "nodes.0.required"),
        (lambda: wait("w", timer="5m", event="paid"), "nodes.0.timer"),
        (lambda: wait("w"), "nodes.0.timer"),
        (lambda: wait("w", timer="soon"), "nodes.0.timer"),
        (lambda: wait("w", event="paid", up_to="forever"), "nodes.0.up_to"),
        (lambda: reply("r", instructions="talk", response="text"), "nodes.0.response"),
        (lambda: reply("r", response="text", context="forget"), "nodes.0.context"),  # type: ignore[arg-type]
    ],
    ids=["collect-no-schema", "required-not-gathered", "wait-both", "wait-neither", "bad-timer", "bad-up-to",
         "reply-both", "reply-bad-context"],
)
def test_invalid_node_options(make: Any, path: str) -> None:
    node = make()
    issues = issues_of(lambda: Flow("f", nodes=[node]))
    assert [(i.code, i.node, i.path) for i in issues] == [("invalid-option", node.id, path)]


def test_invalid_flow_context_strategy() -> None:
    a = action("a", act)
    issues = issues_of(lambda: Flow("f", nodes=[a], context="forget"))  # type: ignore[arg-type]
    assert [(i.code, i.path) for i in issues] == [("invalid-option", "context")]


# --------------------------------------------------------------------------- agent-level


def test_agent_rejects_duplicate_flow_ids() -> None:
    f1 = Flow("f", nodes=[action("a", act)])
    f2 = Flow("f", nodes=[action("b", act)])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[f1, f2])
    assert [i.code for i in info.value.issues] == ["duplicate-flow-id"]


def test_agent_rejects_an_unknown_tool_name_on_a_reply() -> None:
    flow = Flow("f", nodes=[reply("r", instructions="talk", tools=["missing_tool"])])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[flow])
    (issue,) = info.value.issues
    assert (issue.code, issue.flow, issue.node) == ("unknown-tool", "f", "r")


def test_agent_rejects_an_unknown_tool_name_on_a_flow() -> None:
    flow = Flow("f", nodes=[action("a", act)], tools=["missing_tool"])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[flow])
    assert [i.code for i in info.value.issues] == ["unknown-tool"]


def test_agent_accepts_a_known_tool() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return q

    Agent("Bot", tools=[lookup], flows=[Flow("f", nodes=[reply("r", instructions="talk", tools=["lookup"])])])


def test_agent_rejects_an_unknown_field_name() -> None:
    flow = Flow("f", nodes=[collect("c", fields=["email"])])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[flow])
    (issue,) = info.value.issues
    assert (issue.code, issue.flow, issue.node) == ("unknown-field", "f", "c")
    Agent("Bot", fields={"email": Field()}, flows=[flow])  # declared: fine


def test_agent_rejects_an_unknown_action_name() -> None:
    flow = Flow("f", nodes=[do("d", "send_mail")])
    with pytest.raises(FlowDefinitionError) as info:
        Agent("Bot", flows=[flow])
    (issue,) = info.value.issues
    assert (issue.code, issue.flow, issue.node) == ("unknown-action", "f", "d")


# --------------------------------------------------------------------------- digest


def build_flow(max_turns: int = 5, *, verify: Verify | None = None, context: Any = None) -> Flow:
    ask = collect("ask", schema=Address, max_turns=max_turns, on_complete=lambda data, state: goto("book"))
    book = action("book", act, then="done", verify=verify)
    done = reply("done", response="Booked.", next=end("booked"), context=context)
    chooser = decide("choose", schema=Choice, decide=lambda data, state: end())
    return Flow("ship", nodes=[ask, book, done, chooser])


def test_same_definition_built_twice_has_the_same_digest() -> None:
    assert build_flow().digest == build_flow().digest
    assert build_flow().digest.startswith("sha256:")


def test_a_changed_option_changes_the_digest() -> None:
    assert build_flow(max_turns=5).digest != build_flow(max_turns=6).digest
    assert build_flow().digest != build_flow(context="reset").digest


# --------------------------------------------------------------------------- mermaid


def test_mermaid_has_the_header_every_node_and_the_static_edges() -> None:
    one = reply("one", response="1", next="two")
    two = action("two", act)  # NEXT -> three
    three = reply("three", response="3", next=end("done"))
    text = Flow("f", nodes=[one, two, three]).to_mermaid()
    assert text.startswith("flowchart TD")
    for node_id in ("one", "two", "three"):
        assert node_id in text
    assert "n_one --> n_two" in text
    assert "n_two --> n_three" in text
    assert "n_three --> t_end" in text
