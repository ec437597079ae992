"""What a new definition of a flow does with a run parked on an older one (a deploy).

A run is pinned to the digest of the definition it entered. When the flow it meets has another
digest, the run **continues** at its node on the new definition (its new wording, its new
transitions) whenever that is safe: the node still exists, with the same kind, and nothing the run
is in the middle of contradicts it. Only when it is not safe does the flow's declared ``on_drift``
policy apply (``error``, ``restart`` or a migration function). Not safe means:

- the node is gone;
- its kind changed (the kind the run recorded when it entered the node; for a run parked before
  tether recorded it, the kind its position needs: a run waiting on a timer or an event needs a
  ``wait`` node, one waiting on an approval, a signal or a deferral an ``action`` (or an
  ``agent`` step), one asking a node that asks, or one whose ``verify`` holds it);
- an unfinished action's journal no longer matches: the run stands at an action with effects
  recorded for this visit (they are replayed when it is dispatched again), and the journal records
  a tool the node no longer declares in ``uses``.

:func:`plan_drift` is the decision, shared by the turn (:mod:`tether.engine.turn.drift`) and
``tether drift``, which lists before a deploy what the new code would do with every parked run.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tether.durable.entries import JournalEntry
from tether.engine.core.session import Run
from tether.flow.flow import Flow
from tether.flow.nodes import Action, Node

__all__ = ["NODE_KIND", "DriftPlan", "Verdict", "drift_block", "plan_drift", "record_kind"]

NODE_KIND = "__node_kind"
"""The run-state key holding the kind of the node the run stands at (engine-private, like every
``__`` key: hidden from the state views and the prompts)."""

Verdict = Literal["unchanged", "continue", "migrate", "restart", "error", "end"]
"""What happens to a parked run: ``unchanged`` (its definition is served as it is), ``continue``
(at its node, on the new definition), ``migrate``/``restart``/``error`` (the flow's ``on_drift``,
because it cannot continue), ``end`` (its flow is gone: the run ends ``flow-gone``)."""

_TALK = frozenset({"reply", "collect", "decide", "agent"})
_WAITS_FOR = {"timer": frozenset({"wait"}), "event": frozenset({"wait"}), "defer": frozenset({"action"}),
              "approval": frozenset({"action", "agent"}), "signal": frozenset({"action", "agent"})}


@dataclass(frozen=True)
class DriftPlan:
    """The verdict for one run: ``node`` is where it goes on (None: it starts over, or ends),
    ``reason`` says why in one sentence."""

    run: str
    flow: str
    at: str | None
    pinned: str
    current: str | None
    verdict: Verdict
    reason: str
    node: str | None = None


def record_kind(run: Run, node: Node) -> None:
    """Note the kind of the node ``run`` now stands at (read when a later definition meets it)."""
    run.state[NODE_KIND] = node.kind


def drift_block(run: Run, flow: Flow, journal: Sequence[JournalEntry] = ()) -> str | None:
    """Why ``run`` cannot continue at its node on ``flow`` as defined now; None when it can.
    ``journal``: the run's recorded effects (only those of its node's current visit are read)."""
    at = run.node
    if at is None:
        return None
    node = flow.by_id.get(at)
    if node is None:
        return f"node {at!r} is gone (the flow's nodes: {', '.join(sorted(flow.by_id))})"
    recorded = run.state.get(NODE_KIND)
    if isinstance(recorded, str):
        if recorded != node.kind:
            return f"node {at!r} was a {recorded} node and is now a {node.kind} node"
    else:  # parked before kinds were recorded: the kind its position needs
        waiting = run.waiting.kind if run.waiting is not None else None
        needed = _WAITS_FOR.get(waiting or "")
        if needed is not None and node.kind not in needed:
            return f"the run waits on {'an' if waiting in ('event', 'approval') else 'a'} {waiting} at {at!r}, " \
                   f"which is now a {node.kind} node"
        if run.status in ("asking", "suspended") and node.kind not in _TALK and node.verify is None:
            return f"the run is asking at {at!r}, which is now a {node.kind} node (it does not ask)"
    if isinstance(node, Action) and node.uses:
        step = f"{run.id}:{at}:{run.visits.get(at, 0)}:"
        for entry in journal:
            if entry.key.startswith(step) and entry.kind == "tool" and entry.name not in node.uses:
                return (f"the unfinished action {at!r} recorded a call of tool {entry.name!r}, which the node no "
                        f"longer uses (uses: {', '.join(node.uses)}): its journal no longer matches")
    return None


def plan_drift(run: Run, flow: Flow | None, journal: Sequence[JournalEntry] = (), *,
               try_migration: bool = False) -> DriftPlan:
    """What ``flow`` (the definition served now; None when the agent no longer has it) does with
    ``run``. A migration function is called only when ``try_migration`` (``tether drift`` previews
    where it sends the run, on a copy of the run's state); the turn calls it itself."""
    current = flow.digest if flow is not None else None

    def verdict(kind: Verdict, reason: str, node: str | None = None) -> DriftPlan:
        return DriftPlan(run.id, run.flow, run.node, run.digest, current, kind, reason, node)

    if flow is None:
        return verdict("end", f"flow {run.flow!r} is gone: the run ends (flow-gone)")
    if not run.digest or run.digest == flow.digest or run.node is None:
        return verdict("unchanged", "the flow is unchanged", run.node)
    block = drift_block(run, flow, journal)
    if block is None:
        kind = flow.by_id[run.node].kind
        return verdict("continue", f"node {run.node!r} is still a {kind} node: the run continues there", run.node)
    policy = flow.on_drift
    if policy == "error":
        return verdict("error", f"{block}; on_drift is 'error'")
    if policy == "restart":
        return verdict("restart", f"{block}; on_drift is 'restart': the run starts over at {flow.start!r}", flow.start)
    if not try_migration:
        return verdict("migrate", f"{block}; the flow's migration function decides")
    try:
        target = policy(run.node, copy.deepcopy(run.state))
    except Exception as exc:  # the author's migration: its failure is the verdict, not a crash of the check
        return verdict("error", f"{block}; the migration function raised {type(exc).__name__}: {exc}")
    if target not in flow.by_id:
        return verdict("error", f"{block}; the migration function returned {target!r}, which is not a node of "
                                f"the flow")
    return verdict("migrate", f"{block}; the migration function sends it to {target!r}", target)
