"""``action(..., uses=[...])`` declares the agent tools an action calls; building the agent
refuses a tool that is not registered (code ``unknown-tool``, naming the flow and node)."""

from __future__ import annotations

from typing import Any

import pytest

from tether import Agent, Flow, FlowDefinitionError, action, end, on_message, reply, tool
from tether.flow.nodes import do


@tool
def place_order(size: str) -> str:
    """Place an order."""
    return size


def agent_with(node: Any, tools: list[Any]) -> Agent:
    flow = Flow("pizza", nodes=[node, reply("placed", response="Placed!", next=end())], on=[on_message()])
    return Agent("Pizzeria", flows=[flow], tools=tools, actions={"order": lambda params, ctx: None})


def test_an_unregistered_tool_in_uses_is_refused_when_the_agent_is_built() -> None:
    node = action("order", lambda s, c: None, uses=["place_order"])
    with pytest.raises(FlowDefinitionError) as info:
        agent_with(node, tools=[])
    (issue,) = info.value.issues
    assert (issue.code, issue.flow, issue.node, issue.path) == ("unknown-tool", "pizza", "order", "uses")
    assert "'place_order'" in issue.message


def test_registered_tools_in_uses_are_accepted_and_part_of_the_digest() -> None:
    agent = agent_with(action("order", lambda s, c: None, uses=["place_order"]), tools=[place_order])
    node = agent.flows[0].by_id["order"]
    assert node.uses == ("place_order",)  # type: ignore[attr-defined]
    assert node.describe()["uses"] == ["place_order"]
    assert "uses" not in action("x", lambda s, c: None).describe()  # digests of actions without uses unchanged


def test_do_nodes_take_uses_too() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        agent_with(do("order", "order", uses=["nope"]), tools=[place_order])
    assert info.value.code == "unknown-tool"


@pytest.mark.parametrize("bad", ["place_order", [""], [42], None])
def test_uses_must_be_a_list_of_tool_names(bad: Any) -> None:
    with pytest.raises(FlowDefinitionError) as info:
        action("order", lambda s, c: None, uses=bad)
    assert (info.value.code, info.value.issues[0].path) == ("invalid-option", "uses")
