"""One renderer: a value reads the same in a Python flow, a flow file and a workflow instruction
(a list as "ham and olives", never ``["ham", "olives"]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Flow, Message, action, end, goto, on_message, reply
from tether.dialect import load
from tether.models.types import ModelResponse, ToolCall
from tether.spoken import spoken
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.workflow_host import WorkflowRun

TOPPINGS = ["ham", "olives"]


@pytest.mark.parametrize(("value", "text"), [
    ("as is", "as is"), ([], ""), (["ham"], "ham"), (["ham", "olives"], "ham and olives"),
    (["ham", "olives", "basil"], "ham, olives and basil"), ((1, 2.5), "1 and 2.5"),
    ({"size": "large", "toppings": ["ham", "olives"]}, "size: large, toppings: ham and olives"),
    ({"b", "a"}, "a and b"), (3, "3"), (True, "True"),
])
def test_values_read_as_natural_text(value: Any, text: str) -> None:
    assert spoken(value) == text


def _order(**confirm: Any) -> Flow:
    """An order flow whose action picks two toppings, then ``confirm`` (reply options) says them."""
    @action("pick")
    async def pick(state: dict[str, Any], ctx: Any) -> Any:
        return goto("confirm", data={"toppings": TOPPINGS})

    return Flow("order", "Order a pizza", nodes=[pick, reply("confirm", next=end("ok"), **confirm)],
                on=[on_message("pizza")])


async def test_a_python_flow_renders_a_list_as_text() -> None:
    agent = Agent("Pia", flows=[_order(response="A pizza with ${toppings}.")]).with_clock(FakeClock(),
                                                                                        SequentialIds("s"))
    result = await agent.turn(None, Message("a pizza please"))
    assert result.text == "A pizza with ham and olives."


async def test_a_flow_file_renders_a_list_as_text(tmp_path: Path) -> None:
    path = tmp_path / "order.yaml"
    path.write_text("""\
flow:
  id: order
  on: [{kind: message}]
  nodes:
    - kind: reply
      id: confirm
      response: {template: "A pizza with ${context.toppings}."}
      next: {end: ok}
""")
    flow = load(path)
    assert isinstance(flow, Flow)
    agent = Agent("Pia", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("a pizza please"), context={"toppings": TOPPINGS})
    assert result.text == "A pizza with ham and olives."


async def test_a_workflow_instruction_renders_a_list_as_text() -> None:
    data = {
        "schemaVersion": 2, "id": "wf", "version": "1", "name": "Workflow", "input": {"toppings": TOPPINGS},
        "nodes": [{"id": "write", "label": "Write", "description": "the order",
                   "run": {"kind": "agent", "instruction": "Order a pizza with ${input.toppings}."}}],
        "edges": [],
    }
    call = ToolCall(id="c1", name="build_handoff", arguments={"node_id": "write"})
    model = ScriptedModel(agent=[ModelResponse(tool_calls=(call,), finish_reason="tool_calls"), "ok"])
    report = await WorkflowRun(data, model=model).agent.turn()
    handoff = report.calls[0][2]
    assert handoff["instruction"] == "Order a pizza with ham and olives."


async def test_a_speak_call_is_given_a_list_as_text() -> None:
    flow = _order(instructions="Confirm the order.")
    model = ScriptedModel(understand=[{"flows": {"order": 95}}], speak=["Ham and olives it is."])
    agent = Agent("Pia", flows=[flow], model=model).with_clock(FakeClock(), SequentialIds("s"))
    await agent.turn(None, Message("a pizza please"))
    (speak,) = [c.request for c in model.calls if c.call == "speak"]
    assert "- toppings: ham and olives" in speak.instructions
