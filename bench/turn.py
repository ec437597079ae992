"""In-process time of one message turn, at turn 1 and at turn 200 of one conversation.

No I/O: a scripted model that answers at once, no store (the session document is passed from turn
to turn). Two agents: ``model`` (a catch-all flow whose reply node stays, one speak call per turn)
and ``deterministic`` (a collect node with a resolver and an engine-rendered reply, no model).

    .venv/bin/python bench/turn.py [--conversations 20] [--turns 200]

Prints the median milliseconds per turn in a window around turn 1 and around the last turn; the
ratio last/first shows whether the cost grows with the conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from tether import Agent, Field, Flow, Message, collect, end, goto, on_message, pattern, reply
from tether.models.types import ModelRequest
from tether.testing import FakeClock, FunctionModel, SequentialIds


def model_agent() -> Agent:
    talk = reply("talk", instructions="Chat with the customer.")
    return Agent("Bench", flows=[Flow("chat", "Chat", nodes=[talk], on=[on_message()])])


def deterministic_agent() -> Agent:
    ask = collect("ask", fields=["order"], ask="Order number?", resolvers=[pattern("order", r"\b(\d{4})\b")],
                  on_complete=lambda data, state: goto("answer"))
    answer = reply("answer", response="Order ${order} is on its way.", next=end("done"))
    flow = Flow("orders", "Orders", nodes=[ask, answer], on=[on_message(repeat="always")],
                clear_on_start=["order"])
    return Agent("Bench", fields={"order": Field()}, flows=[flow], idle="silent")


def reply_fn(request: ModelRequest) -> Any:
    return {"message": "Sure, happy to help with that."}


async def conversation(agent: Agent, turns: int) -> list[float]:
    clock = FakeClock()
    agent = agent.with_model(FunctionModel(reply_fn)) if agent.flows[0].id == "chat" else agent
    agent = agent.with_clock(clock, SequentialIds("s"))
    session = None
    timings: list[float] = []
    for i in range(turns):
        clock.advance("7s")
        text = f"message number {i}: where is order {1000 + i % 9000}?"
        start = time.perf_counter()
        result = await agent.turn(session, Message(text, id=f"m{i}"))
        timings.append((time.perf_counter() - start) * 1000)
        session = result.session
    return timings


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    window = 5
    print(f"{'agent':<14} {'turn 1-5 (ms)':>14} {f'turn {args.turns - window + 1}-{args.turns} (ms)':>18} {'ratio':>7}")
    for name, factory in (("model", model_agent), ("deterministic", deterministic_agent)):
        first: list[float] = []
        last: list[float] = []
        for _ in range(args.conversations):
            timings = await conversation(factory(), args.turns)
            first += timings[:window]
            last += timings[-window:]
        a, b = statistics.median(first), statistics.median(last)
        print(f"{name:<14} {a:>14.3f} {b:>18.3f} {b / a:>7.2f}")


if __name__ == "__main__":
    asyncio.run(main())
