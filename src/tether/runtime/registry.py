"""The agents a runtime serves, checked when the runtime is built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tether.agent import Agent
from tether.errors import DefinitionIssue, FlowDefinitionError

__all__ = ["agent_registry"]


def agent_registry(agents: Agent | Sequence[Agent] | Mapping[str, Agent]) -> dict[str, Agent]:
    """The agents a runtime serves, by id: one agent, a sequence, or a mapping whose keys must be
    the agents' ids. A key that is not its agent's id, or an id given twice, fails at once."""
    if isinstance(agents, Agent):
        pairs = [(agents.id, agents)]
    elif isinstance(agents, Mapping):
        pairs = list(agents.items())
    else:
        pairs = [(agent.id, agent) for agent in agents]
    registry: dict[str, Agent] = {}
    issues: list[DefinitionIssue] = []
    for key, agent in pairs:
        if key != agent.id:
            issues.append(DefinitionIssue("agent-key-mismatch", f"agent {agent.id!r} is registered as {key!r}"))
        elif key in registry:
            issues.append(DefinitionIssue("duplicate-agent-id", f"agent id {key!r} is registered twice"))
        registry[key] = agent
    if issues:
        raise FlowDefinitionError(issues, title="invalid runtime registry")
    return registry
