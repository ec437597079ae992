"""Reused values are confirmed: a field declared ``Field(reuse="confirm")`` that a new run finds
already known (from an earlier flow) is not taken silently; its first collect step asks "the same
order A-1001?" before relying on it.

When a run starts, the known ``confirm`` fields its flow works with are noted in the run
(``__reused``). A collect step of that run that gathers one of them, while it still holds the
noted value, first reads the message it has (a resolver that finds a value there means the
customer named it: nothing to confirm), else asks the confirmation. The answer is read without a
model: a value for the field replaces it, a yes keeps it, a no forgets it (the step then asks for
it as usual). Anything else asks again, up to the step's ``max_turns``, then counts as a no.
"""

from __future__ import annotations

from typing import Any

from tether.engine.core.pauses import ASKING
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.collect_fields import merge_values, resolve
from tether.flow.agent_def import AgentDefinition
from tether.flow.flow import Flow
from tether.flow.nodes import Collect
from tether.flow.yes_no import read_yes_no

__all__ = ["confirm_reused", "confirming", "note_reusable"]

_SAME = frozenset({"same", "right"})
_OTHER = frozenset({"different", "another", "other"})


def note_reusable(agent: AgentDefinition, data: dict[str, Any], run: Run, names: list[str]) -> None:
    """At a run's start: note which of its flow's ``reuse="confirm"`` fields are already known."""
    held = {name: data[name] for name in names
            if (field := agent.fields.get(name)) is not None and field.reuse == "confirm"
            and field.known(data.get(name))}
    if held:
        run.state["__reused"] = held


def _unconfirmed(ts: TurnState, run: Run, node: Collect) -> list[str]:
    held = run.state.get("__reused")
    if not isinstance(held, dict):
        return []
    for name in [n for n in held if ts.session.data.get(n) != held[n]]:
        del held[name]  # changed since the run started: it is this run's own value now
    return [n for n in node.slots if n in held and n in ts.agent.fields]


def confirming(run: Run, node: Collect) -> list[str]:
    """The reused fields ``node`` is asking the customer to confirm ("the same order A-1001?"): an
    understand call offers them, so a model can read another value in the answer ("no, it's for
    1002", "the one I just asked about")."""
    held = run.state.get("__reused")
    if run.state.get("__reusing") != node.id or not isinstance(held, dict):
        return []
    return [n for n in node.slots if n in held]


def _settled(run: Run, name: str) -> None:
    held = run.state.get("__reused")
    if isinstance(held, dict):
        held.pop(name, None)
        if not held:
            del run.state["__reused"]
    run.state.pop("__reusing", None)
    run.state.pop("__reuseTurns", None)


def confirm_reused(ts: TurnState, run: Run, flow: Flow, node: Collect) -> Any | None:
    """Confirm the first reused field ``node`` gathers; returns ``ASKING`` when it asked, None to go on."""
    names = _unconfirmed(ts, run, node)
    if not names:
        return None
    name = names[0]
    if ts.message_available(run):
        answering = run.state.get("__reusing") == node.id and ts.asking_at.get(run.id) == node.id
        hits, _ = resolve(ts, run, node, [name])
        if name in hits:  # the customer named a value (the same one, or another)
            merge_values(ts, run, node, {name: hits[name]}, source="deterministic", guard=False)
            _settled(run, name)
            return confirm_reused(ts, run, flow, node)
        judged = ts.judgement.collect.get((run.id, node.id)) or {}
        if answering and judged.get(name) is not None:  # the model read the value the answer names
            sources, _ = merge_values(ts, run, node, {name: judged[name]}, source="model", guard=True)
            if name in sources:
                _settled(run, name)
                return confirm_reused(ts, run, flow, node)
        ts.consumed_by[run.id] = node.id
        if answering:
            said = read_yes_no(ts.message_text, yes=_SAME, no=_OTHER)
            turns = int(run.state.get("__reuseTurns", 0)) + 1
            if said is None and turns < node.max_turns:
                run.state["__reuseTurns"] = turns
            else:
                if not said:
                    ts.session.data.pop(name, None)  # a no: the step asks for it afresh
                _settled(run, name)
                return confirm_reused(ts, run, flow, node)
    run.state["__reusing"] = node.id
    field = ts.agent.fields[name]
    label = field.label or name.replace("_", " ")
    text = f"Is this about the same {label}, {ts.session.data[name]}? Please answer yes or no."
    ts.say(text, kind="verbatim", key=f"{ts.key(run, node.id)}:reuse", run=run, node_id=node.id)
    ts.outcome(run, status="waiting", kind="collect", node_id=node.id, detail=f"confirm {name}")
    run.status = "asking"
    return ASKING
