"""Flow drift: a run is pinned to the digest of the flow definition it started under.

Before a run that already stands in its graph moves again, its digest is compared with the flow's.
A different digest means the flow was changed under the parked run (a deploy). When the run can
go on at its node on the new definition (the node still exists with the same kind, and no
unfinished action's journal contradicts it: see :mod:`tether.engine.core.drift_plan`), it does,
with the outcome ``flow-drift-continued`` naming both digests. Otherwise the flow's ``on_drift``
applies: ``error`` (the default) raises ``FlowDriftError`` naming the flow, both digests and why
(nothing of the turn is saved), ``restart`` starts the run over at its start
(``flow-drift-restarted``), and a migration function says at which node it goes on
(``flow-drift-migrated``). Each is also a ``flow-drift`` event (:class:`FlowDrift`) in the
session's event log.
"""

from __future__ import annotations

from tether.engine.core.drift_plan import plan_drift, record_kind
from tether.engine.core.events import FlowDrift
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.errors import FlowDriftError
from tether.flow.flow import Flow

__all__ = ["check_drift"]


def check_drift(ts: TurnState, run: Run, flow: Flow) -> None:
    """Continue ``run`` on ``flow``'s current definition, or apply ``flow.on_drift`` when it cannot."""
    pinned = run.digest
    if not pinned or pinned == flow.digest or run.node is None:
        return  # every move passes here: the common case reads nothing more
    plan = plan_drift(run, flow, ts.journal.entries(run.id))
    detail = f"{pinned} -> {flow.digest}"
    if plan.verdict == "continue":
        run.digest = flow.digest
        record_kind(run, flow.by_id[plan.node or ""])
        ts.outcome(run, code="flow-drift-continued", kind="flow", node_id=run.node, detail=detail)
        _emit(ts, run, "flow-drift-continued", pinned, flow.digest, None)
        return
    if plan.verdict == "error":
        raise FlowDriftError(
            f"flow {flow.id!r} changed under run {run.id!r} (at node {run.node!r}): the run is pinned to {pinned}, the "
            f"flow is now {flow.digest}, and it cannot continue there: {plan.reason}; declare on_drift='restart' or "
            "a migration function to resume it", flow=flow.id, pinned=pinned, current=flow.digest)
    if plan.verdict == "restart":
        run.node = None  # the next move enters the flow afresh (and pins the new digest)
        run.waiting = None
        ts.outcome(run, code="flow-drift-restarted", kind="flow", detail=f"{detail}: {plan.reason}")
        _emit(ts, run, "flow-drift-restarted", pinned, flow.digest, plan.reason)
        return
    policy = flow.on_drift
    assert callable(policy)
    node = policy(run.node, run.state)
    if node not in flow.by_id:
        raise FlowDriftError(f"flow {flow.id!r}: the drift migration of run {run.id!r} returned {node!r}, which is not "
                             f"a node of the flow (nodes: {sorted(flow.by_id)})",
                             flow=flow.id, pinned=pinned, current=flow.digest)
    if node != run.node:
        run.node = node
        run.visits[node] = run.visits.get(node, 0) + 1
    run.digest = flow.digest
    record_kind(run, flow.by_id[node])
    ts.outcome(run, code="flow-drift-migrated", kind="flow", node_id=node, detail=f"{detail}: {plan.reason}")
    _emit(ts, run, "flow-drift-migrated", pinned, flow.digest, plan.reason)


def _emit(ts: TurnState, run: Run, code: str, pinned: str, current: str, reason: str | None) -> None:
    """The drift as a stored flow event (the session's event log keeps it; the outcome does not)."""
    ts.emit(FlowDrift(run_id=run.id, flow=run.flow, at=ts.now, code=code, node=run.node, pinned=pinned,
                      current=current, reason=reason))
