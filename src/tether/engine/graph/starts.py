"""Starting runs: the start checks, in their one order, for every kind of start.

1. the trigger's ``if_`` with the would-be run (false: nothing happens, nothing is logged);
2. the claim: ``once`` already held -> ``already-claimed``; a ``cooldown`` younger than its
   window -> ``cooldown``;
3. ``hop >= 5`` -> ``hop-limit``;
4. one live run per (flow, anchor) -> ``already-running``;
5. write the claim, apply ``clear_on_start``, add the run, report it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tether.engine.core.results import RunStarted, Skipped
from tether.engine.core.session import Claim, Run, RunTrigger
from tether.engine.core.state import TurnState
from tether.engine.graph.conditions import holds
from tether.engine.graph.moves import finish
from tether.engine.graph.prompt_parts import flow_fields
from tether.engine.graph.reuse import note_reusable
from tether.errors import TemplatePlaceholderError, TransitionError
from tether.flow.durations import parse_duration
from tether.flow.flow import Flow
from tether.flow.transitions import StartFlow

__all__ = ["HOP_LIMIT", "KEEP_CLAIMS", "chain", "start_flow_id", "start_run"]

HOP_LIMIT = 5
KEEP_CLAIMS = 50
MESSAGE_KINDS = ("message", "mention")
"""Triggers keyed by the turn's message: a ``repeat="always"`` start of theirs keeps no claim in
the document. The key is the message id, which ingest already refuses to take twice
(``session.inputs``), or ``<ms>-<seq>``, which no other message has. A departure from seed 003
(one claim per start, 50 kept): those claims cost every save, see ``docs/cost.md``."""
TriggerKind = Literal["message", "mention", "silence", "event", "start", "flow"]

OUTCOME_MESSAGES = {
    "already-claimed": "This flow already ran and runs only once.",
    "cooldown": "This flow ran recently and is cooling down.",
    "hop-limit": "Too many flows chained in a row.",
    "already-running": "This flow is already running.",
    "flow-gone": "The flow no longer exists.",
}


def skip(ts: TurnState, flow_id: str, code: str, anchor: str, key: str) -> None:
    ts.skipped.append(Skipped(flow_id, code, OUTCOME_MESSAGES.get(code, code), anchor, key))


def start_run(ts: TurnState, flow: Flow, *, kind: TriggerKind, key: str, input: Any = None, hop: int = 0,
              repeat: Any = "always", if_: Any = None, payload: Any = None, index: int | None = None,
              reset: bool = False) -> Run | None:
    """Run the start checks for ``flow``; returns the new run, or None when it did not start.
    A ``reset`` (``on_end="reset"``) keeps the data: no ``clear_on_start``, nothing to confirm."""
    anchor = anchor_of(ts, flow)
    draft = Run(id=f"{flow.id}#{key}", flow=flow.id, anchor=anchor, trigger=RunTrigger(kind=kind, key=key,
                payload=payload, index=index), input=input, hop=hop, started_at=ts.now)
    if not holds(ts, if_, draft):
        return None
    nonce = key if repeat == "always" else ""
    dedupe = f"{flow.id}:{anchor}:{nonce}"
    held = ts.session.claims.get(dedupe)
    external = ts.options.claims.get("held", {}) if isinstance(ts.options.claims, Mapping) else {}
    if repeat == "once" and (held is not None or dedupe in external):
        skip(ts, flow.id, "already-claimed", anchor, key)
        return None
    if repeat == "always" and held is not None:
        skip(ts, flow.id, "already-claimed", anchor, key)
        return None
    if isinstance(repeat, Mapping) and held is not None and ts.now - held.at < parse_duration(repeat["cooldown"]):
        skip(ts, flow.id, "cooldown", anchor, key)
        return None
    if hop >= HOP_LIMIT:
        skip(ts, flow.id, "hop-limit", anchor, key)
        return None
    active = ts.options.claims.get("active", []) if isinstance(ts.options.claims, Mapping) else []
    for live in [r for r in ts.session.runs if r.flow == flow.id and r.anchor == anchor]:
        if live.node is None and live.waiting is not None and live.waiting.kind == "trigger":
            finish(ts, live, flow, "replaced")  # still parked on its own ``after``: the new start wins
        else:
            skip(ts, flow.id, "already-running", anchor, key)
            return None
    if f"{flow.id}:{anchor}" in active:
        skip(ts, flow.id, "already-running", anchor, key)
        return None
    if repeat != "always" or kind not in MESSAGE_KINDS:
        ts.session.claims[dedupe] = Claim(at=ts.now)
        if repeat == "always":
            _prune_always_claims(ts, flow.id, anchor)
    if not reset:  # a chained start (start_flow) clears too: seed 003 exempts only the reset
        for name in flow.clear_on_start:
            ts.session.data.pop(name, None)
        note_reusable(ts.agent, ts.session.data, draft, flow_fields(flow))
    draft.dedupe_key = dedupe
    ts.session.runs.append(draft)
    ts.started.append(RunStarted(draft.id, flow.id, anchor, dedupe))
    return draft


def anchor_of(ts: TurnState, flow: Flow) -> str:
    if flow.anchor == "session":
        return ts.session.id
    anchor = ts.options.anchors.get(flow.anchor)
    key = anchor.get("key") if isinstance(anchor, Mapping) else None
    return str(key) if key else ts.session.id


def _prune_always_claims(ts: TurnState, flow_id: str, anchor: str) -> None:
    prefix = f"{flow_id}:{anchor}:"
    mine = sorted((c.at, k) for k, c in ts.session.claims.items() if k.startswith(prefix) and k != prefix)
    for _, key in mine[: max(0, len(mine) - KEEP_CLAIMS)]:
        del ts.session.claims[key]


def restart(ts: TurnState, run: Run, flow: Flow) -> None:
    """``on_end="reset"``: a fresh run of the same flow, one hop further, data kept."""
    child = start_run(ts, flow, kind="flow", key=ts.key(run, run.node or "start"), input=run.input, hop=run.hop + 1,
                      reset=True)
    if child is not None:
        ts.queue.append(child.id)


def start_flow_id(ts: TurnState, parent: Run, move: StartFlow) -> str:
    """The id of the flow ``move`` starts: its template rendered (a
    :class:`~tether.errors.TransitionError`, ``unknown-flow``, when it names no flow of the agent)."""
    if "{" not in move.flow:  # not a template, e.g. "{input.topic}"
        return move.flow
    try:
        flow_id = ts.render(move.flow, parent)
    except TemplatePlaceholderError as exc:  # a missing value names no flow: the same error, never ""
        raise TransitionError(
            f"flow {parent.flow!r}, node {parent.node!r}: start_flow({move.flow!r}) has no value for "
            f"{{{exc.placeholder}}}, so it names no flow of the agent", code="unknown-flow") from None
    if flow_id not in ts.agent.flows_by_id:
        raise TransitionError(
            f"flow {parent.flow!r}, node {parent.node!r}: start_flow({move.flow!r}) rendered {flow_id!r}, which "
            f"is not a flow of the agent (flows: {', '.join(ts.agent.flows_by_id) or 'none'})",
            code="unknown-flow")
    return flow_id


async def chain(ts: TurnState, parent: Run, move: StartFlow) -> None:
    """``start_flow``: start the child one hop further; it moves later in this turn.

    The flow id may be a template (``"{input.topic}"``, seed 003's ``{flow: template}``): it is
    rendered against the parent's state, input and context, and a result that names no flow of
    the agent is a :class:`~tether.errors.TransitionError` (``unknown-flow``) naming the step. Strings
    in ``input`` are rendered the same way; no ``input`` passes the parent's input on."""
    flow_id, child_input = start_flow_id(ts, parent, move), move.input
    key = ts.key(parent, parent.node or "start")
    if child_input is not None:
        child_input = ts.render_value(child_input, parent,
                                      where=f"flow {parent.flow!r}, node {parent.node!r}, start_flow input")
    flow = ts.agent.flows_by_id.get(flow_id)
    if flow is None:
        skip(ts, flow_id, "flow-gone", parent.anchor, key)
        return
    child = start_run(ts, flow, kind="flow", key=key, input=child_input if child_input is not None else parent.input,
                      hop=parent.hop + 1)
    if child is not None:
        if ts.floor in (parent.id, None):
            ts.floor = child.id  # the child inherits the floor: the customer's message is now its to read
        ts.queue.append(child.id)
