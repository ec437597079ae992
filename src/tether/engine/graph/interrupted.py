"""An interrupted task keeps its own values (the continue-interrupted repair pattern).

Fields declared on the agent are session-wide, so a detour can overwrite what the task it
interrupted collected: during a refund for order A-1002, "where is A-1001?" runs the order-status
flow, which writes ``order_number``. When another flow takes the floor from a run (routing, before
the message's values are written) or the run is suspended behind another, the values its visited
collect steps gathered are held in its state (``__held``); when it asks or moves again, those values
are written back, so the refund resumes with A-1002 (the detour used A-1001 in its own replies).
"""

from __future__ import annotations

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.flow.nodes import Collect

__all__ = ["HELD", "hold_others", "hold_values", "restore_values", "suspend", "unsuspend"]

HELD = "__held"
"""The run-state key of an interrupted run's own values."""


def _own_fields(ts: TurnState, run: Run) -> list[str]:
    """The session-wide fields the run's visited collect steps gather."""
    flow = ts.agent.flows_by_id.get(run.flow)
    if flow is None:
        return []
    names: list[str] = []
    for node in flow.nodes:
        if isinstance(node, Collect) and run.visits.get(node.id):
            names += [n for n in node.fields if n in ts.agent.fields and n not in names
                      and (node.schema is None or n not in node.schema.model_fields)]
    return names


def hold_values(ts: TurnState, run: Run) -> None:
    """Remember the run's own known values (it is being interrupted); a run already holding its
    values keeps them (they were read before the detour wrote anything)."""
    if HELD in run.state:
        return
    held = {name: ts.session.data[name] for name in _own_fields(ts, run) if ts.answered(name)}
    if held:
        run.state[HELD] = held


def restore_values(ts: TurnState, run: Run) -> None:
    """Write back the values the run held while it was interrupted (a detour may have changed them)."""
    held = run.state.pop(HELD, None)
    if not isinstance(held, dict):
        return
    for name, value in held.items():
        if ts.session.data.get(name) != value:
            ts.log("log", f"run {run.id!r} resumes with its own {name} ({value!r}; the detour left "
                          f"{ts.session.data.get(name)!r})")
            ts.session.data[name] = value


def suspend(ts: TurnState, run: Run) -> None:
    """``run`` waits behind another asking run, holding its own values."""
    run.status = "suspended"
    run.suspended_at = ts.now
    hold_values(ts, run)


def unsuspend(ts: TurnState, run: Run) -> None:
    """``run`` is asking again, with the values it held."""
    run.status = "asking"
    run.suspended_at = None
    restore_values(ts, run)


def hold_others(ts: TurnState, flow_id: str) -> None:
    """The flow ``flow_id`` takes the floor: every other run asking or suspended holds its values."""
    for run in ts.session.runs:
        if run.flow != flow_id and run.status in ("asking", "suspended"):
            hold_values(ts, run)
