"""Helpers for agent-step tests: scripted tool calls, and a chat over Agent.turn."""

from __future__ import annotations

from typing import Any

from tether import Agent, Message, TurnResult
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.testing import tool_calls as calls

__all__ = ["Chat", "calls", "memory_of"]


class Chat:
    """A conversation with ``agent`` served by ``model``, over ``Agent.turn``."""

    def __init__(self, agent: Agent, model: ScriptedModel, **options: Any) -> None:
        self.clock = FakeClock()
        self.sleeps: list[float] = []

        async def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)

        self.agent = agent.with_model(model).with_clock(self.clock, SequentialIds("s"))
        self.model = model
        self.session: Session | None = None
        self.options = {"sleep": sleep, **options}

    async def say(self, text: str) -> TurnResult:
        self.clock.advance("10s")
        result = await self.agent.turn(self.session, Message(text), **self.options)
        self.session = result.session
        return result

    @property
    def node(self) -> str | None:
        assert self.session is not None
        return self.session.runs[0].node if self.session.runs else None


def memory_of(session: Session | None, namespace: str) -> list[tuple[str, str]]:
    """``(role, content)`` of a namespace's messages."""
    assert session is not None
    return [(m["role"], m["content"]) for m in session.memory[namespace].messages]
