"""Agent steps are checked when they are defined: options, tools, handlers, memory namespaces,
summary ranges, and terminate_session without a terminal step. The move builders."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from tether import Agent, Flow, FlowDefinitionError, agent, direct, go, stay, terminal, tool
from tether.flow import MemorySummary, StepMove
from tether.flow.moves import move_from_json


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def issues(exc: pytest.ExceptionInfo[FlowDefinitionError]) -> list[tuple[str, str | None, str | None]]:
    return [(i.code, i.node, i.path) for i in exc.value.issues]


def test_options_of_the_wrong_kind_fail_when_defined() -> None:
    with pytest.raises(FlowDefinitionError) as exc:
        agent("a", prompt=3, tools=[42], tier="huge", memory="1bad", retry_attempts=0, max_tool_rounds=0,  # type: ignore[arg-type]
              content_type="json", on_enter="no")  # type: ignore[arg-type]
    assert {path for _, _, path in issues(exc)} == {"prompt", "tools.0", "tier", "memory", "retry_attempts",
                                                    "max_tool_rounds", "content_type", "on_enter"}


def test_handlers_must_name_exposed_tools_and_groups_distinct_names() -> None:
    with pytest.raises(FlowDefinitionError) as exc:
        agent("a", tools=[ping], handlers={"pong": lambda a, c: None, ("ping", "ping"): lambda c, x: None})
    messages = " | ".join(str(i) for i in exc.value.issues)
    assert "handler for 'pong': the step does not expose that tool" in messages
    assert "names a tool more than once" in messages


@pytest.mark.parametrize("name", ["__proto__", "constructor", "prototype", "_x", "9lives", "a" * 129, "a b"])
def test_memory_namespaces_follow_the_seeds_pattern_and_reserved_names(name: str) -> None:
    with pytest.raises(FlowDefinitionError):
        agent("a", memory=name)


def test_a_namespace_of_128_characters_is_fine() -> None:
    assert agent("a", memory="a" + "b" * 127).namespace == "a" + "b" * 127


@pytest.mark.parametrize(("minimum", "recent", "ok"), [(16, 8, True), (8, 6, True), (8, 1, True), (7, 5, False),
                                                         (16, 15, False), (16, 0, False), (16, 14, True)])
def test_summary_ranges(minimum: int, recent: int, ok: bool) -> None:
    assert (MemorySummary(minimum, recent).problems() == []) is ok


def test_summary_defaults_are_16_and_8() -> None:
    step = agent("a", summary=True)
    assert step.summary == MemorySummary(16, 8)


def test_an_unknown_tool_name_fails_when_the_agent_is_built() -> None:
    step = agent("a", tools=["nope"])
    with pytest.raises(FlowDefinitionError) as exc:
        Agent("A", flows=[Flow("f", nodes=[step])])
    assert issues(exc) == [("unknown-tool", "a", "tools.0")]


def test_terminate_session_needs_a_terminal_step() -> None:
    step = agent("a", tools=["terminate_session"])
    with pytest.raises(FlowDefinitionError) as exc:
        Flow("f", nodes=[step])
    assert issues(exc) == [("invalid-option", "a", "tools")]
    Flow("f", nodes=[step, terminal()])  # with one it is fine


def test_schema_only_tools_are_named_in_snake_case() -> None:
    class SetDates(BaseModel):
        """Set the dates."""

        check_in: str

    assert agent("a", tools=[SetDates, ping, "terminate_session"]).tool_names() == \
        ["set_dates", "ping", "terminate_session"]


def test_go_accepts_a_name_or_a_node_and_refuses_the_rest() -> None:
    step = agent("confirm")
    assert go(" confirm ") == StepMove("go", step="confirm") and go(step).step == "confirm"
    with pytest.raises(ValueError, match=r"go\(\) requires a non-empty Step name\."):
        go("  ")
    with pytest.raises(TypeError, match=r"go\(\) requires a Step constructor with a non-empty ID\."):
        go(42)


def test_builders_return_new_moves_and_change_only_their_field() -> None:
    base = go("b")
    built = base.with_state({"x": 1}).with_prompt("P").with_message("M").with_content_type("application/json")
    assert base == StepMove("go", step="b")
    assert built == StepMove("go", step="b", state={"x": 1}, prompt="P", message="M", content_type="application/json")
    assert built.with_prompt("Q").prompt == "Q" and built.with_prompt("Q").message == "M"
    assert list(built.with_tool_feedback("F").as_json()) == \
        ["__tether_move__", "kind", "step", "tool", "state", "prompt", "message", "content_type"]
    assert move_from_json(json.loads(json.dumps(built.as_json()))) == built


def test_stay_and_direct() -> None:
    assert stay() == StepMove("stay", tool="input validated")
    assert stay("try again").tool == "try again"
    assert direct({"a": 1}) == StepMove("direct", message='{"a": 1}') and direct("hi").message == "hi"


def test_stay_builds_feedback_moves_and_is_still_a_transition_not_code() -> None:
    from tether.flow.transitions import Stay, is_code

    assert isinstance(stay, Stay) and not is_code(stay) and is_code(lambda turn, state: stay)
