"""The parts of a model request that the speak and understand calls share.

Requests are laid out for provider prompt caches: everything that is the same on every call of a
kind comes first, in the stable ``system`` part (identity, the call's standing orders, the flow
catalogue in the agent's own order; the adapter adds the reply schema when the provider cannot
enforce it, its step-dependent sections last), then the conversation's summary (it changes per
fold; the adapters send it before the per-turn part), and everything that changes per turn comes
last, in ``instructions``. The customer's latest message is never quoted in either: it is the
last user message of the conversation the request carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.collect_fields import has_value, value_of
from tether.flow.agent_def import AgentDefinition
from tether.flow.fields import is_known
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node
from tether.flow.triggers import MessageTrigger
from tether.json_schemas import without

__all__ = ["catalogue", "flow_fields", "run_facts", "session_facts", "without_default_titles"]


def flow_fields(flow: Flow) -> list[str]:
    """The session fields a flow works with: its ``collect=`` list and its collect nodes' fields."""
    names = list(flow.collect)
    for node in flow.nodes:
        if isinstance(node, Collect):
            names.extend(n for n in node.fields if n not in names)
    return names


def catalogue(agent: AgentDefinition) -> str:
    """Every flow of the agent, in the agent's order, with what it does and the phrases that ask
    for it. The same text on every call, whatever the turn scores or where the customer is."""
    lines = ["The flows you work with:"]
    for flow in agent.flows:
        line = f"- {flow.id}: {flow.description or flow.name}"
        trigger = next((t for t in flow.on if isinstance(t, MessageTrigger)), None)
        if trigger is not None and trigger.catch_all:
            line += ". Takes any message no other flow fits"
        elif trigger is not None:
            phrases = [p for p in trigger.phrases if not p.startswith("!")]
            never = [p[1:] for p in trigger.phrases if p.startswith("!") and len(p) > 1]
            line += f". Asks for: {'; '.join(phrases) or '-'}"
            if never:
                line += f". Score 0 when: {'; '.join(never)}"
        lines.append(line)
    return "\n".join(lines)


def run_facts(ts: TurnState, run: Run, flow: Flow, node: Node | None) -> dict[str, Any]:
    """What the run knows: the known session fields its flow works with, what its collect steps
    gathered and what its actions put in its state. Fields of other (finished) flows are left out:
    they are not settled facts of this task."""
    facts: dict[str, Any] = {}
    for name in flow_fields(flow):
        if ts.answered(name):
            facts[name] = ts.session.data.get(name)
    facts.update({k: v for k, v in run.state.items() if not k.startswith("__") and is_known(v)})
    if isinstance(node, Collect):
        for name in node.slots:
            if has_value(ts, run, node, name):
                facts[name] = value_of(ts, run, node, name)
    return facts


def session_facts(ts: TurnState) -> dict[str, Any]:
    """The known session fields (for the idle speaker: background, not a task's facts)."""
    return {k: v for k, v in ts.session.data.items() if ts.answered(k)}


def without_default_titles(schema: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """``schema`` without the titles pydantic derives from names (``"title": "Priority"`` for a
    ``priority`` field, the class name for a model): they repeat the key and cost tokens on every
    call. A title the developer wrote (any other text) stays; so does everything else."""
    return without(schema, _default_title, name)


def _default_title(node: Mapping[str, Any], key: str, value: Any, name: str | None) -> bool:
    return key == "title" and isinstance(value, str) and name is not None and value in (
        name, name.replace("_", " ").title())
