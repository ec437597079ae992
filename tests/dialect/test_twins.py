"""The YAML examples behave like their Python twins: the same replies, model calls, outcome
codes, statuses, waiting nodes and fields, turn by turn, over the same scripted conversations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.dialect.twins import converse, python_example, yaml_example

from tether.testing import ScriptedModel

SHIPPING: list[tuple[list[str], Callable[[], ScriptedModel | None]]] = [
    (["ship to Main Street"], lambda: ScriptedModel(
        extract=[{"address": "Main Street"}], summary=["Customer wants a shipment to Main Street."],
        speak=["Booked! Your tracking id is trk_11."])),
    (["I want to ship something", "Elm Road please"], lambda: ScriptedModel(
        extract=[{}, {"address": "Elm Road"}], summary=["Wants a shipment to Elm Road."],
        speak=["Booked, tracking trk_8."])),
    (["ship it to my office"], lambda: ScriptedModel(extract=[{"address": "10 Downing Street"}])),
    (["ship to 1 Main St"], lambda: ScriptedModel(summary=["Wants a shipment to 1 Main St."],
                                                  speak=["Booked! Tracking trk_9."])),
    (["I'd like to ship a parcel", "42 Harbour Lane, Bristol"], lambda: None),
    (["hi, I have 2 packages to send", "ship them to 5 main st, springfield, thanks"], lambda: None),
]

SUPPORT: list[tuple[list[str], Callable[[], ScriptedModel | None]]] = [
    (["hi", "I want to check my order", "it's a-1001"], lambda: None),
    (["order status please", "A-9999", "A-1001"], lambda: None),
    (["I need to change my address", "A-1002", "5 Main Street, Springfield", "hmm", "yes"], lambda: None),
    (["wrong address", "A-1003", "7 Oak Avenue, Shelbyville", "no"], lambda: None),
    (["change my delivery address", "A-9998"], lambda: None),
    (["I want a refund", "A-1003", "it arrived broken", "can I talk to a person?"], lambda: None),
    (["hi", "@wake 10m"], lambda: None),
    (["hello", "what's the status of my order A-1002?"], lambda: None),
    (["hi", "refund"], lambda: None),
    (["refund for A-9999, it arrived broken", "A-1002", "yes"], lambda: None),
    (["I want a refund for A-1004"], lambda: None),
    (["change the address of A-1001 to 5 Main Street"], lambda: None),
    (["where is my order", "I don't know it", "a1002"], lambda: None),
    (["I need a refund", "I don't know", "A-1002", "dont know"], lambda: None),
    (["change my address", "I don't know it", "A-1002", "I don't know yet"], lambda: None),
    (["refund for A-1003, it arrived broken", "no, the order is A-9999", "A-1002"], lambda: None),
    (["where's my order A-1004?"], lambda: ScriptedModel(understand=[
        {"flows": {"orders": 92, "address": 5, "refund": 0, "human": 0}, "fields": {"order_number": "A-1004"}}])),
]


async def _both(name: str, steps: list[str], model: Callable[[], ScriptedModel | None]) -> tuple[Any, Any]:
    python = await converse(python_example(name).agent, steps, model())
    yaml = await converse(yaml_example(name), steps, model())
    return python, yaml


@pytest.mark.parametrize(("steps", "model"), SHIPPING, ids=[" / ".join(s) for s, _ in SHIPPING])
async def test_shipping_twins_hold_the_same_conversation(steps: list[str], model: Any) -> None:
    python, yaml = await _both("shipping", steps, model)
    assert yaml == python
    assert python[0][-1]["text"]  # the conversation said something


@pytest.mark.parametrize(("steps", "model"), SUPPORT, ids=[" / ".join(s) for s, _ in SUPPORT])
async def test_support_twins_hold_the_same_conversation(steps: list[str], model: Any) -> None:
    python, yaml = await _both("support", steps, model)
    assert yaml == python
    assert python[0][-1]["text"]


async def test_the_twins_call_the_shipping_tool_the_same_way() -> None:
    module = python_example("shipping")
    calls: dict[str, list[str]] = {"python": [], "yaml": []}
    yaml_agent = yaml_example("shipping")
    for label, agent in (("python", module.agent), ("yaml", yaml_agent)):
        tool = agent.tools_by_name["book_shipment"]
        original = tool.fn

        async def counting(address: str, _label: str = label, _original: Any = original) -> Any:
            calls[_label].append(address)
            return await _original(address)

        object.__setattr__(tool, "fn", counting)
        try:
            turns, _ = await converse(agent, ["ship to 1 Main St"])
        finally:
            object.__setattr__(tool, "fn", original)
        assert turns[-1]["ended"] == ["booked"]
    assert calls["yaml"] == calls["python"] == ["1 Main St"]
