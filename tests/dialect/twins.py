"""Running one scripted conversation through two agents, to compare what each does, turn by turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from example_modules import load_example
from tether import Agent, Message, TurnResult, Wake
from tether.dialect import load
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def python_example(name: str) -> ModuleType:
    """A fresh import of ``examples/<name>.py``."""
    return load_example(name, as_name=f"example_{name}_twin")


def yaml_example(name: str) -> Agent:
    agent = load(EXAMPLES / f"{name}.yaml")
    assert isinstance(agent, Agent)
    return agent


def summary(result: TurnResult) -> dict[str, Any]:
    """What a turn did, in the terms a twin must match: replies, model calls, outcome codes,
    status, where the runs wait, the session fields."""
    session = result.session
    return {
        "text": result.text,
        "llm_calls": result.llm_calls,
        "status": result.status,
        "outcomes": [(o.code, o.status, o.kind, o.flow_id, o.node_id, o.next) for o in result.outcomes],
        "ended": [e.reason for e in result.ended],
        "asking": [f"{r.flow}/{r.node}" for r in session.runs if r.status == "asking"] if session else [],
        "fields": {k: v for k, v in (session.data if session else {}).items() if not k.startswith("__")},
        "node_path": [e.target for e in result.events if e.type == "flow-transition"],
    }


async def converse(agent: Agent, steps: Sequence[str], model: ScriptedModel | None = None
                   ) -> tuple[list[dict[str, Any]], list[str]]:
    """Each step is a message, or ``"@wake <duration>"``: move the clock and fire the wake the
    last turn scheduled. Returns the turn summaries and the kinds of model call made, in order."""
    clock = FakeClock()
    if model is not None:
        agent = agent.with_model(model)
    agent = agent.with_clock(clock, SequentialIds("s"))
    session: Session | None = None
    schedule: list[Any] = []
    turns = []
    for step in steps:
        if step.startswith("@wake "):
            clock.advance(step.removeprefix("@wake "))
            result = await agent.turn(session, Wake(schedule[0].key))
        else:
            clock.advance("30s")
            result = await agent.turn(session, Message(step))
        session = result.session if result.session is not None else session
        schedule = result.schedule or schedule
        turns.append(summary(result))
    calls = [c.call for c in model.calls] if model is not None else []
    return turns, calls
