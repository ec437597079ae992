"""Agent steps: time per turn and the session document's size over a long conversation.

Each turn of the conversation is one agent step answering with one tool round (a tool function,
journaled) and one reply: two ``agent`` model calls, from a function model (no network). Figures:

* median CPU ms per turn at turns 1-20 and at the last 20, for ``Agent.turn`` alone (the pure
  turn) and hosted by a ``Runtime`` on a ``MemoryStore`` and on a ``SQLiteStore`` (ratios: late
  vs early, hosted vs pure);
* store writes per turn (the tool's journal records are written as they happen);
* the session document's JSON size at turn 1 and at the last turn, with the step's memory
  summaries off and on (``MemorySummary(16, 8)``): without them the memory namespace keeps the
  agent's ``history_window`` messages, with them the older ones fold into a summary; both stay
  bounded.

    python bench/agent_steps.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tether import Agent, Flow, MemorySummary, Message, agent, on_message, tool
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.runtime import Runtime
from tether.stores import MemoryStore, SQLiteStore, Store
from tether.testing import FakeClock, FunctionModel


@tool
def lookup(order: str) -> dict[str, str]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


def answer(request: ModelRequest) -> ModelResponse:
    if request.call == "summary":
        return ModelResponse(text="The customer asked about orders; all have shipped.", finish_reason="stop")
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(tool_calls=(ToolCall("c1", "lookup", {"order": last.content[-6:]}),),
                             finish_reason="tool_calls")
    return ModelResponse(text=f"Order {last.content[10:16]} has shipped.", finish_reason="stop")


def bot(summary: bool) -> Agent:
    step = agent("orders", prompt="Answer questions about orders.", tools=[lookup],
                 summary=MemorySummary(16, 8, tier="default") if summary else None)
    return Agent("Orders", flows=[Flow("orders", nodes=[step], on=[on_message()])], model=FunctionModel(answer))


class CountingStore:
    """Counts a store's writes (create and save)."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.writes = inner, 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name in ("create", "save"):
            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.writes += 1
                return await attribute(*args, **kwargs)
            return counted
        return attribute


async def pure(turns: int, summary: bool) -> tuple[list[float], list[int]]:
    agent_ = bot(summary).with_clock(FakeClock())
    session, times, sizes = None, [], []
    for turn in range(turns):
        start = time.process_time()
        result = await agent_.turn(session, Message(f"where is order A-{turn:04d}", id=f"m{turn}"))
        times.append((time.process_time() - start) * 1000)
        session = result.session
        assert session is not None
        sizes.append(len(session.model_dump_json()))
    return times, sizes


async def hosted(turns: int, store: Store) -> tuple[list[float], float]:
    counting = CountingStore(store)
    runtime = Runtime(bot(False), store=counting, clock=FakeClock())  # type: ignore[arg-type]
    sid, times = None, []
    for turn in range(turns):
        start = time.process_time()
        response = await runtime.run("Orders", session_id=sid, message=Message(f"where is order A-{turn:04d}"))
        times.append((time.process_time() - start) * 1000)
        assert response.success, response.message
        sid = response.session
    return times, counting.writes / turns


def window(times: list[float]) -> tuple[float, float]:
    return statistics.median(times[:20]), statistics.median(times[-20:])


async def main(turns: int) -> None:
    plain, sizes_off = await pure(turns, summary=False)
    summarized, sizes_on = await pure(turns, summary=True)
    in_memory, writes_memory = await hosted(turns, MemoryStore())
    with tempfile.TemporaryDirectory() as scratch:
        on_disk, writes_sqlite = await hosted(turns, SQLiteStore(Path(scratch) / "bench.db"))
    print(f"{turns} turns, each one tool round and one reply (2 agent calls); CPU ms per turn, median")
    print(f"{'host':<22}{'turns 1-20':>12}{'last 20':>10}{'late/early':>12}{'writes/turn':>13}")
    for name, times, writes in (("Agent.turn (pure)", plain, None), ("pure, summaries on", summarized, None),
                                ("Runtime + memory", in_memory, writes_memory),
                                ("Runtime + SQLite", on_disk, writes_sqlite)):
        early, late = window(times)
        shown = "-" if writes is None else f"{writes:.1f}"
        print(f"{name:<22}{early:>12.3f}{late:>10.3f}{late / early:>12.2f}{shown:>13}")
    late_pure = window(plain)[1]
    print(f"hosted/pure, last 20: memory {window(in_memory)[1] / late_pure:.2f}x, "
          f"SQLite {window(on_disk)[1] / late_pure:.2f}x")
    print(f"session document bytes, turn 1 -> turn {turns}: summaries off {sizes_off[0]:,} -> {sizes_off[-1]:,}; "
          f"summaries on {sizes_on[0]:,} -> {sizes_on[-1]:,}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    asyncio.run(main(parser.parse_args().turns))
