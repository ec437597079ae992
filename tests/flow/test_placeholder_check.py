"""A template placeholder that names no value its node could ever see is a FlowDefinitionError
(``unknown-placeholder``) when the agent is built, if that is statically known: no action, no
tool and no code transition could write other names. Otherwise it is checked at run time."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, Field, Flow, FlowDefinitionError, action, collect, end, goto, on_message, reply, tool


class Order(BaseModel):
    size: str


def build(*nodes: Any, **agent_options: Any) -> Agent:
    return Agent("Pizzeria", flows=[Flow("pizza", nodes=list(nodes), on=[on_message()])], idle="silent",
                 **agent_options)


@pytest.mark.parametrize(("node", "option"), [
    (reply("r", response="Order ${oder_id} placed!", next=end()), "response"),
    (reply("r", instructions="Confirm ${oder_id}.", next=end()), "instructions"),
    (reply("r", instructions="Confirm.", fallback="Placed ${oder_id}.", next=end()), "fallback"),
    (collect("c", schema=Order, ask="Which size, ${oder_id}?"), "ask"),
    (collect("c", schema=Order, question="Which size, ${oder_id}?"), "question"),
    (collect("c", schema=Order, ask={"size": "Size for ${oder_id}?"}), "ask.size"),
    (collect("c", schema=Order, instructions="Extract for ${oder_id}."), "instructions"),
])
def test_an_unknown_placeholder_is_refused_when_the_agent_is_built(node: Any, option: str) -> None:
    with pytest.raises(FlowDefinitionError) as info:
        build(node)
    (issue,) = info.value.issues
    assert (issue.code, issue.flow, issue.node, issue.path) == ("unknown-placeholder", "pizza", node.id,
                                                               f"nodes.0.{option}")
    assert "{oder_id}" in issue.message


def test_names_a_node_can_see_are_accepted() -> None:
    build(collect("c", schema=Order, ask="Which size, ${name}?", on_complete=goto("r", data={"price": 9})),
          reply("r", response="${size} for ${name} at ${price}, ${state.size}, ${input.note}, ${context.channel}",
                next=end()),
          fields={"name": Field()})


@pytest.mark.parametrize("opening", [
    action("a", lambda s, c: None),  # an action may ctx.set any field
    reply("a", response="Hi", next=lambda turn, state: goto("r", data={"order_id": 1})),  # code transition
])
def test_when_code_may_write_any_name_the_check_waits_for_run_time(opening: Any) -> None:
    build(opening, reply("r", response="Order ${order_id} placed!", next=end()))


def test_a_tool_may_write_any_name_too() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return q

    build(reply("r", instructions="Say ${order_id}.", next=end()), tools=[lookup])
    with pytest.raises(FlowDefinitionError):
        build(reply("r", instructions="Say ${order_id}.", next=end()), tools=[lookup], max_tool_loops=0)
