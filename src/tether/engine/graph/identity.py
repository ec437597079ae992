"""The agent's identity text, the stable head of every model call's system part (speak,
understand, extract), where a provider's prompt cache finds it."""

from __future__ import annotations

import json

from tether.engine.core.state import TurnState

__all__ = ["identity"]


def identity(ts: TurnState) -> str:
    """Who the agent is: name, persona, goal and knowledge (the head of every call's system text)."""
    agent = ts.agent
    parts = [f"You are {agent.name}."]
    if agent.persona:
        parts.append(agent.persona)
    if agent.goal:
        parts.append(f"Your goal: {agent.goal}")
    if agent.knowledge:
        knowledge = agent.knowledge if isinstance(agent.knowledge, str) else json.dumps(agent.knowledge, indent=1)
        parts.append(f"Knowledge base:\n{knowledge}")
    return "\n\n".join(parts)
