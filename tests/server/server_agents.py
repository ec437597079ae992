"""Agents for the server tests: deterministic (no model), each exercising one host operation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel

from tether import Agent, Flow, action, collect, end, escalate, goto, on_event, on_message, reply, wait
from tether.models.types import ModelRequest, ModelResponse, StreamChunk, Usage
from tether.testing import FunctionModel, ScriptedModel


def echo_agent(name: str = "Echo") -> Agent:
    """Answers every message ``reply N: TEXT`` (N counts the messages this agent object answered),
    so a retried message that ran twice would show a second number; ``human`` hands the conversation to a person."""

    turns: list[str] = []

    @action("count")
    async def count(state: dict[str, Any], ctx: Any) -> Any:
        if ctx.message == "human":
            return escalate("the customer asked for a person")
        turns.append(ctx.message)
        return goto("answer", data={"n": len(turns), "said": ctx.message})

    answer = reply("answer", response=lambda state: f"reply {state['n']}: {state['said']}", next=end("answered"))
    chat = Flow("chat", description="answers every message", start=count, nodes=[count, answer],
                on=[on_message(repeat="always")])
    noted = reply("noted", response=lambda state: "noted the CRM update", next=end("noted"))
    crm = Flow("crm", description="acknowledges a CRM update", start=noted, nodes=[noted],
               on=[on_event("crm-updated")])
    return Agent(name, flows=[chat, crm])


def pid_agent() -> Agent:
    """Answers every message with the id of the process that ran its turn."""
    import os

    answer = reply("answer", response=lambda state: str(os.getpid()), next=end("answered"))
    return Agent("Pid", flows=[Flow("pid", start=answer, nodes=[answer], on=[on_message(repeat="always")])])


def frozen_agent() -> Agent:
    """Answers every message with how many objects the garbage collector of its process leaves
    alone (``gc.get_freeze_count()``)."""
    import gc

    answer = reply("answer", response=lambda state: str(gc.get_freeze_count()), next=end("answered"))
    return Agent("Frozen", flows=[Flow("frozen", start=answer, nodes=[answer], on=[on_message(repeat="always")])])


def refund_agent(refunds: list[int]) -> Agent:
    """``refund`` (started by hand) asks for an approval, refunds when approved; ``pay`` waits for
    the ``paid`` signal."""

    @action("ask")
    async def ask(state: dict[str, Any], ctx: Any) -> Any:
        decision = await ctx.approve("Refund 30?", payload={"amount": 30})
        if decision.approved:
            refunds.append(decision.payload["amount"])
        return goto("done", data={"outcome": f"{decision.decision} by {decision.decided_by}"})

    done = reply("done", response=lambda state: f"refund {state['outcome']}", next=end("done"))
    refund = Flow("refund", start=ask, nodes=[ask, done])

    @action("wait_payment")
    async def wait_payment(state: dict[str, Any], ctx: Any) -> Any:
        signal = await ctx.signal("paid", timeout="1h")
        return goto("paid", data={"amount": None if signal.timed_out else signal.payload["amount"]})

    paid = reply("paid", response=lambda state: f"payment of {state['amount']} received", next=end("paid"))
    pay = Flow("pay", start=wait_payment, nodes=[wait_payment, paid], on=[on_message()])
    return Agent("Refunder", flows=[refund, pay])


class ChunkedModel(ScriptedModel):
    """Streams each scripted reply's text in pieces of five characters."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        for i in range(0, len(response.text), 5):
            yield StreamChunk(delta=response.text[i:i + 5])
        yield StreamChunk(done=True, response=response)


def talker_agent(*replies: str) -> Agent:
    """Speaks every reply with a model that streams it in small pieces."""
    talk = reply("talk", instructions="Chat.")
    flow = Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])
    return Agent("Talker", flows=[flow]).with_model(ChunkedModel(speak=list(replies)))


class GatedModel(ScriptedModel):
    """Streams each scripted reply in pieces of five characters, and after the first piece of each
    reply waits for ``gate`` (``started`` is set then), so a test can act while a reply is spoken."""

    def __init__(self, *replies: str) -> None:
        super().__init__(speak=list(replies))
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        for i in range(0, len(response.text), 5):
            yield StreamChunk(delta=response.text[i:i + 5])
            if i == 0:
                self.started.set()
                await self.gate.wait()
        yield StreamChunk(done=True, response=response)


def busy_agent(model: GatedModel, on_busy: str) -> Agent:
    """Speaks with ``model``; ``on_busy`` is its policy for messages arriving mid-turn."""
    talk = reply("talk", instructions="Chat.")
    flow = Flow("talk", start=talk, nodes=[talk], on=[on_message(repeat="always")])
    return Agent("Busy", flows=[flow], on_busy=on_busy).with_model(model)


def helper_agent() -> Agent:
    """Speaks every answer with the model it is served by (it names none of its own): with no
    model each message gets the step's fixed fallback line."""
    talk = reply("talk", instructions="Answer the customer's question in one sentence.")
    return Agent("Helper", flows=[Flow("help", start=talk, nodes=[talk], on=[on_message(repeat="always")])])


def waker_agent() -> Agent:
    """Answers the first message ``ok``, parks on a one-second timer (a stored wake: an action,
    not a message, follows it), then says ``woke``."""

    @action("mark")
    async def mark(state: dict[str, Any], ctx: Any) -> Any:
        return goto("woke", data={"woke": True})

    woke = reply("woke", response="woke", next=end("woke"))
    pause = wait("pause", timer="1s", then=mark)
    first = reply("first", response="ok", next=pause)
    return Agent("Waker", flows=[Flow("nap", start=first, nodes=[first, pause, mark, woke], on=[on_message()])])


class _Name(BaseModel):
    name: str


NOTHING_FOUND = Usage(prompt_tokens=321, completion_tokens=12, cached_input_tokens=256)
"""What each extraction of :func:`frugal_agent` reports spending."""


BOOM = "<img src=x onerror=\"document.body.dataset.pwned='yes'\"> broke"
"""What the ``boom`` flow's action raises: markup that a page must show as text."""


def frugal_agent() -> Agent:
    """``name`` asks for a name; its model reports :data:`NOTHING_FOUND` tokens per call and never
    finds the name, so every message costs one ``extract`` call and leaves a ``warn`` entry on the
    session. ``boom`` (started by hand) fails with :data:`BOOM`: an ``error`` entry."""
    ask = collect("ask_name", schema=_Name, required=["name"], ask="What is your name?", max_turns=50,
                  on_complete=lambda data, state: goto("greet"))
    greet = reply("greet", response=lambda state: f"Hello {state['name']}", next=end("greeted"))
    flow = Flow("name", start=ask, nodes=[ask, greet], on=[on_message(repeat="always")])

    @action("explode")
    async def explode(state: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError(BOOM)

    boom = Flow("boom", start=explode, nodes=[explode])
    model = FunctionModel(lambda request: ModelResponse(text="", usage=NOTHING_FOUND))
    return Agent("Frugal", flows=[flow, boom]).with_model(model)
