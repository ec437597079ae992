"""Validating an agent's model selections before any session I/O."""

from __future__ import annotations

from tether.agent import Agent
from tether.errors import ModelConfigurationError
from tether.flow.steps import AgentNode
from tether.models import DEFAULT_CATALOG, Model, validate_selection
from tether.models.catalog import GENERIC_ROUTE

__all__ = ["check_model_selections"]


def check_model_selections(agent: Agent) -> None:
    """Validate every tier's selection of ``agent`` (and every agent step's own ``model``); raise
    ``ModelConfigurationError`` on the first bad one.

    A ``provider:model`` string goes through the catalog's ``validate_selection`` (pure: no SDK,
    no network) and must name a provider with a registered adapter; any other selection must be
    a ``Model`` object.
    """
    selections: list[tuple[str, object]] = list(agent.model_selections.items())
    if agent.gate_judge is not None:
        selections.append(("gate_judge", agent.gate_judge))
    selections.extend((f"step {flow.id}/{node.id}", node.model) for flow in agent.flows for node in flow.nodes
                      if isinstance(node, AgentNode) and node.model is not None)
    for tier, selection in selections:
        if isinstance(selection, str):
            chosen = validate_selection(selection)
            if DEFAULT_CATALOG.provider(chosen.provider) is None:
                raise ModelConfigurationError(
                    f"Agent {agent.id!r}, tier {tier!r}: no adapter is registered for provider "
                    f"{chosen.provider!r} (model {chosen.selection!r}); for any OpenAI-compatible "
                    f"server use {GENERIC_ROUTE}."
                )
        elif not isinstance(selection, Model):
            raise ModelConfigurationError(
                f"Agent {agent.id!r}, tier {tier!r}: {selection!r} is neither a 'provider:model' name nor a Model."
            )
