"""Flow drift: a run is pinned to the digest of the flow definition it started under.

Before a run that already stands in its graph moves again, its digest is compared with the flow's.
A different digest means the flow was changed under the parked run (a deploy): by default that is a
``FlowDriftError`` naming the flow and both digests (nothing of the turn is saved); a flow that
declares ``on_drift="restart"`` starts the run over at its start (``flow-drift-restarted``), and a
migration function says at which node it goes on (``flow-drift-migrated``).
"""

from __future__ import annotations

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.errors import FlowDriftError
from tether.flow.flow import Flow

__all__ = ["check_drift"]


def check_drift(ts: TurnState, run: Run, flow: Flow) -> None:
    """Apply ``flow.on_drift`` when ``run`` is pinned to another definition of ``flow``."""
    pinned = run.digest
    if not pinned or pinned == flow.digest or run.node is None:
        return
    policy = flow.on_drift
    detail = f"{pinned} -> {flow.digest}"
    if policy == "error":
        raise FlowDriftError(
            f"flow {flow.id!r} changed under run {run.id!r} (at node {run.node!r}): the run is pinned to {pinned}, the "
            f"flow is now {flow.digest}; declare on_drift='restart' or a migration function to resume it",
            flow=flow.id, pinned=pinned, current=flow.digest)
    if policy == "restart":
        run.node = None  # the next move enters the flow afresh (and pins the new digest)
        run.waiting = None
        ts.outcome(run, code="flow-drift-restarted", kind="flow", detail=detail)
        return
    node = policy(run.node, run.state)
    if node not in flow.by_id:
        raise FlowDriftError(f"flow {flow.id!r}: the drift migration of run {run.id!r} returned {node!r}, which is not "
                             f"a node of the flow (nodes: {sorted(flow.by_id)})",
                             flow=flow.id, pinned=pinned, current=flow.digest)
    if node != run.node:
        run.node = node
        run.visits[node] = run.visits.get(node, 0) + 1
    run.digest = flow.digest
    ts.outcome(run, code="flow-drift-migrated", kind="flow", node_id=node, detail=detail)
