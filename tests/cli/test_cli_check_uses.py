"""``tether check`` refuses an action whose ``uses=`` names a tool the agent does not have."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import tether

PIZZA = """\
from tether import Agent, Flow, action, end, on_message, reply, tool


@tool
def bake(size: str) -> str:
    \"\"\"Bake a pizza.\"\"\"
    return size


@action("order", uses=["bake", "place_order"])
async def order(state, ctx):
    await ctx.tool("place_order", size="large")


flow = Flow("pizza", nodes=[order, reply("placed", response="Placed!", next=end("ordered"))], on=[on_message()])
agent = Agent("Pizzeria", flows=[flow], tools=[bake])
"""


def test_check_refuses_an_unregistered_tool_in_uses(tmp_path: Path) -> None:
    path = tmp_path / "pizza.py"
    path.write_text(PIZZA)
    done = tether("check", path)
    assert done.code == 1
    first = done.out.splitlines()[0]
    assert first.startswith("error [unknown-tool] flow 'pizza' node 'order': ")
    assert "'place_order'" in first and "'bake'" not in first.split("registered")[0]
    path.write_text(PIZZA.replace('uses=["bake", "place_order"]', 'uses=["bake"]'))
    assert tether("check", path).code == 0
