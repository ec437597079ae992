"""Helpers for the seed 000 (flow execution model) tests: build a one-flow agent, drive turns."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Message, Repair, Session, on_message
from tether.flow.nodes import Node
from tether.testing import FakeClock, ScriptedModel, SequentialIds

NOW = FakeClock().now()


def make_agent(*nodes: Node, model: Any = None, flow_id: str = "f", tools: list[Any] | None = None,
               idle: Any = "silent", fields: dict[str, Any] | None = None, repair: Repair | None = None,
               **flow_options: Any) -> Agent:
    """An agent with one flow ``flow_id`` made of ``nodes`` (first node is the start), started by
    any message; served by ``model`` (a ScriptedModel) with a fake clock and ids ``s-1``, ``s-2``...

    The agent is silent when no flow answers (``idle="silent"``) so that only the flow's own model
    calls are counted."""
    flow_options.setdefault("on", [on_message()])
    flow = Flow(flow_id, "test flow", start=flow_options.pop("start", nodes[0]), nodes=list(nodes), **flow_options)
    agent = Agent("Tester", tools=tools or [], flows=[flow], idle=idle, fields=fields or {}, repair=repair or Repair())
    return agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))


def scripted(**queues: list[Any]) -> ScriptedModel:
    return ScriptedModel(**queues)


async def say(agent: Agent, session: Session | None, text: str = "hi", **kw: Any) -> Any:
    return await agent.turn(session, Message(text, **kw))


def types(result: Any) -> list[str]:
    return [e.type for e in result.events]


def the_run(result: Any) -> Any:
    (run,) = result.session.runs
    return run
