"""Phase 4, Decide: apply the judgement in a fixed order.

1. Routing (skipped when a run took the floor in Ingest): with an asker, another flow takes over
   only with a score of at least 40 that beats the asker's by at least 15; with no asker, the
   unscored lone flow, else the best score of 40 or more (ties keep the earlier flow), else the
   first passing catch-all, else nobody (the idle speaker answers).
2. Mention runs start in flow order (``on_mention()`` with no phrases is a code-only detector
   that goes through the start checks on every message).
3. The routed flow's suspended run resumes, or a new run starts (``clear_on_start`` now) and
   holds the floor.
4. Field values are validated and written one at a time (``unknown-field``, ``bad-value``,
   ``not-in-enum``).
5. The first true branch of the asking node takes its ``then`` (``branch``).
"""

from __future__ import annotations

from tether.engine.core.judgement import Judgement
from tether.engine.core.pauses import Static
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.conditions import holds
from tether.engine.graph.interrupted import hold_others, unsuspend
from tether.engine.graph.starts import start_run
from tether.engine.turn.clarify import ask_which, close_candidates
from tether.engine.turn.keys import message_key
from tether.engine.turn.understand import Judgeables, message_trigger, passing_catch_all
from tether.flow.fields import coerce_fields
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Reply
from tether.flow.triggers import MentionTrigger

__all__ = ["ROUTE_MIN_SCORE", "ROUTE_STICKINESS", "decide", "route_to", "trigger_key"]

ROUTE_MIN_SCORE = 40
ROUTE_STICKINESS = 15


def trigger_key(ts: TurnState) -> str:
    """A message's trigger key: its id, else ``<ms>-<seq>`` (see :mod:`tether.engine.turn.keys`)."""
    return message_key(ts)


def _best(candidates: list[Flow], scores: dict[str, float], *, exclude: str | None = None) -> tuple[Flow, float] | None:
    best: tuple[Flow, float] | None = None
    for flow in candidates:
        if flow.id == exclude:
            continue
        score = scores.get(flow.id, 0.0)
        if best is None or score > best[1]:
            best = (flow, score)
    return best


def route_to(ts: TurnState, flow: Flow, *, catch_all: bool) -> Run | None:
    """``flow`` takes the floor: its live run resumes, else a new run starts (None: a start check
    refused it)."""
    hold_others(ts, flow.id)
    live = next((r for r in ts.session.runs if r.flow == flow.id), None)
    if live is not None:
        if live.status in ("suspended", "asking"):
            unsuspend(ts, live)
        ts.floor = live.id
        if live.id not in ts.queue:
            ts.queue.append(live.id)
        return live
    found = message_trigger(flow, catch_all=catch_all)
    index, trigger = found if found is not None else (None, None)
    run = start_run(ts, flow, kind="message", key=trigger_key(ts), repeat=trigger.repeat if trigger else "always",
                    if_=trigger.if_ if trigger else None, index=index)
    if run is not None:
        ts.floor = run.id
        ts.queue.append(run.id)
    return run


def decide(ts: TurnState, found: Judgeables, judgement: Judgement, asker: Run | None) -> None:
    """Apply the judgement (message turns only)."""
    if not ts.floor_taken:
        _routing(ts, found, judgement, asker)
    _mentions(ts, judgement)
    accepted, rejected = coerce_fields(ts.agent.fields, judgement.fields)
    for problem in rejected:
        ts.outcome(None, code=problem.code, status="skipped", kind="collect", detail=problem.detail)
    ts.session.data.update(accepted)
    floor = ts.run(ts.floor) if ts.floor else None
    if floor is not None and floor.status == "asking":
        take_branch(ts, floor, judgement)


def _routing(ts: TurnState, found: Judgeables, judgement: Judgement, asker: Run | None) -> None:
    if asker is not None:
        ts.floor = asker.id
        if asker.id not in ts.queue:
            ts.queue.append(asker.id)
        rival = _best(found.candidates, judgement.flows, exclude=asker.flow)
        asker_score = judgement.flows.get(asker.flow, 0.0)
        if rival is not None and rival[1] >= ROUTE_MIN_SCORE and rival[1] >= asker_score + ROUTE_STICKINESS:
            ts.queue.remove(asker.id)
            route_to(ts, rival[0], catch_all=False)
        return
    if found.lone is not None:
        route_to(ts, found.lone, catch_all=False)
        return
    best = _best(found.candidates, judgement.flows)
    if best is not None and best[1] >= ROUTE_MIN_SCORE:
        close = close_candidates(ts, found.candidates, judgement.flows, floor_score=ROUTE_MIN_SCORE)
        if not ask_which(ts, close):  # two flows fit about equally: ask which (the clarification pattern)
            route_to(ts, close[0] if close else best[0], catch_all=False)
        return
    catch_all = passing_catch_all(ts)
    if catch_all is not None:
        route_to(ts, catch_all[0], catch_all=True)


def _mentions(ts: TurnState, judgement: Judgement) -> None:
    for flow in ts.agent.flows:
        for index, trigger in enumerate(flow.on):
            if not isinstance(trigger, MentionTrigger):
                continue
            if trigger.phrases and not judgement.mentions.get(flow.id):
                continue
            run = start_run(ts, flow, kind="mention", key=trigger_key(ts), input=judgement.extract.get(flow.id),
                            repeat=trigger.repeat, if_=trigger.if_, index=index)
            if run is not None:
                ts.queue.append(run.id)
            break


def take_branch(ts: TurnState, run: Run, judgement: Judgement) -> bool:
    """The first true branch of ``run``'s asking node takes its ``then``."""
    flow = ts.agent.flows_by_id.get(run.flow)
    node = flow.by_id.get(run.node or "") if flow is not None else None
    if not isinstance(node, Reply | Collect):
        return False
    for index, branch_ in enumerate(node.branches):
        if branch_.if_ is not None:
            taken = holds(ts, branch_.if_, run)
        else:
            taken = bool(judgement.branches.get((run.id, node.id, index)))
        if taken:
            ts.pending[run.id] = Static(branch_.then)
            ts.outcome(run, code="branch", kind="talk", node_id=node.id, next=str(getattr(branch_.then, "id",
                                                                                           branch_.then)))
            return True
    return False
