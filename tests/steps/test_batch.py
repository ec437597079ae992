"""``ctx.batch``: one new session per item through the runtime, in sequential batches, a
pre-run checkpoint, per-item failures logged and reported (never retried)."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Message, agent, direct, on_message
from tether.models.types import ModelRequest
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import FakeClock, FunctionModel, tool_calls

seen: list[tuple[Any, Any]] = []


async def fan_out(args: dict[str, Any], ctx: Any) -> Any:
    result = await ctx.batch(["a", "b", "c", {"bad": "\ud800"}], "worker", batch_size=2,
                             config=lambda item: {"item": str(item)[:5]})
    done = [(i.index, i.success) for i in result.items]
    return direct(f"{done} failed={[i.index for i in result.failed]}")


def answer(request: ModelRequest) -> Any:
    if request.system == "Coordinate.":
        return tool_calls(("work", {})) if request.messages[-1].content == "go" else "Ready."
    return "worked"


def build() -> Agent:
    coordinator = agent("coordinate", prompt="Coordinate.", tools=["work"], handlers={"work": fan_out})
    worker = agent("work_item", prompt="Work.", on_enter=lambda ctx: seen.append((ctx.input, dict(ctx.config))))
    from tether import tool

    @tool
    def work() -> str:
        """Fan out."""
        return ""

    return Agent("Batch", tools=[work], model=FunctionModel(answer),
                 flows=[Flow("coord", nodes=[coordinator], on=[on_message()]), Flow("worker", nodes=[worker])])


async def test_batch_spawns_one_session_per_item_in_sequential_batches() -> None:
    seen.clear()
    store = MemoryStore()
    runtime = Runtime(build(), store=store, clock=FakeClock())
    first = await runtime.run("Batch", message=Message("hi"))
    result = await runtime.run("Batch", session_id=first.session, message=Message("go"))
    assert result.success and result.message == "[(0, True), (1, True), (2, True), (3, False)] failed=[3]"
    assert seen == [("a", {"item": "a"}), ("b", {"item": "b"}), ("c", {"item": "c"})]
    coordinator = await store.load(first.session)
    assert coordinator is not None
    assert [entry.message for entry in coordinator.log] == [
        "Processing batch 1/2 (batch size:2)", "Batch 1 completed.",
        "Processing batch 2/2 (batch size:2)", "Batch 2 completed."]
    assert coordinator.error[-1].message.startswith("batch item 3 failed:")
    sessions = await store.list(agent="Batch")
    assert len(sessions) == 4  # the coordinator and three workers


async def test_batch_outside_a_runtime_is_a_clear_error() -> None:
    bot = build()
    session = (await bot.turn(None, Message("hi"))).session
    result = await bot.turn(session, Message("go"))
    assert result.text == bot.failure_reply and result.session is not None
    assert "batch() starts sessions through the runtime" in result.session.error[-1].message
