"""Which journal entries a turn needs before it runs (the host loads them)."""

from __future__ import annotations

from tether.engine.core.session import Session
from tether.flow.agent_def import AgentDefinition
from tether.flow.nodes import Action

__all__ = ["journal_runs"]


def journal_runs(agent: AgentDefinition, session: Session) -> list[str]:
    """The ids of the live runs whose journal the next turn may read: a run parked on an approval
    or a signal, a run standing at an action node (it may be re-dispatched there), or every live
    run when a turn is unfinished."""
    wanted: list[str] = []
    for run in session.runs:
        flow = agent.flows_by_id.get(run.flow)
        node = flow.by_id.get(run.node or "") if flow is not None else None
        parked = run.waiting is not None and run.waiting.kind in ("approval", "signal")
        if session.turn is not None or parked or isinstance(node, Action):
            wanted.append(run.id)
    return wanted
