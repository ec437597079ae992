"""Predicates: a code function of the run, a CEL condition, or a JSON condition.

A CEL condition is a string (``"state.size == 'large' && data.vip"``) over ``state`` (the run's
state view), ``data`` (the session fields), ``input``, ``context`` and ``silenced``: the one
expression language of flow files and workflows (:mod:`tether.cel`), compiled when the agent is
built. The older JSON condition still works (building its flow warned, see
:mod:`tether.flow.old_forms`):

A JSON condition's keys are ANDed: ``equals: {field: value}`` (deep equality on the session
fields), ``known: [fields]``, ``silenced: bool`` (is the host's gate closed), and any other key
names a registered condition and carries its argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tether.cel import compile_condition
from tether.engine.core.events import ErrorEvent
from tether.engine.core.session import Outcome, Run
from tether.engine.core.state import TurnState
from tether.errors import FlowRuntimeError, TetherError, TetherSignal
from tether.flow.agent_def import CONDITION_NAMES

__all__ = ["CONDITION_FAILED", "PredicateContext", "holds"]

CONDITION_FAILED = "condition-failed"
"""The code of a code predicate that raised (its error log entry and turn outcome)."""


@dataclass(frozen=True)
class PredicateContext:
    """What a code predicate sees."""

    context: Mapping[str, Any]
    data: Mapping[str, Any]
    state: Mapping[str, Any]
    input: Any
    run: Run | None
    silenced: bool
    now: datetime


def holds(ts: TurnState, predicate: Any, run: Run | None, *, input: Any = None, flow: str | None = None) -> bool:
    """Evaluate ``predicate`` (None holds) for ``flow`` (default: the run's).

    A code predicate is the author's code: when it raises, the turn degrades instead of failing
    (DESIGN §9): the predicate does not hold, and :func:`_predicate_failed` makes the failure loud."""
    if predicate is None:
        return True
    silenced = ts.options.silence is not None
    if isinstance(predicate, str):
        names = {"state": ts.state_view(run), "data": ts.session.data, "context": dict(ts.options.context),
                 "input": run.input if run is not None else input, "silenced": silenced}
        try:
            return compile_condition(predicate, CONDITION_NAMES).holds(names)
        except ValueError as exc:
            raise FlowRuntimeError(str(exc)) from None
    if callable(predicate):
        ctx = PredicateContext(context=dict(ts.options.context), data=dict(ts.session.data),
                               state=ts.state_view(run), input=run.input if run is not None else input, run=run,
                               silenced=silenced, now=ts.now)
        try:
            return bool(predicate(ctx))
        except (TetherError, TetherSignal):
            raise
        except Exception as exc:
            _predicate_failed(ts, predicate, run, flow or (run.flow if run is not None else None), exc)
            return False
    if not isinstance(predicate, Mapping):
        raise FlowRuntimeError(f"not a predicate: {predicate!r}")
    data = ts.session.data
    for key, arg in predicate.items():
        if key == "equals":
            if any(data.get(name) != value for name, value in arg.items()):
                return False
        elif key == "known":
            if any(not ts.answered(name) for name in arg):
                return False
        elif key == "silenced":
            if bool(arg) != silenced:
                return False
        else:
            condition = ts.agent.conditions.get(key)
            if condition is None:
                raise FlowRuntimeError(f"unknown condition {key!r}")
            ctx = PredicateContext(context=dict(ts.options.context), data=dict(data), state=ts.state_view(run),
                                   input=run.input if run is not None else input, run=run, silenced=silenced,
                                   now=ts.now)
            if not condition(ctx, arg):
                return False
    return True


def _predicate_failed(ts: TurnState, predicate: Any, run: Run | None, flow: str | None, exc: Exception) -> None:
    """A code predicate raised: an ``error`` event, an entry in the session's error log and the
    agent's failure reply (once per predicate and turn: a trigger's condition is asked in
    several phases); the session stays usable."""
    name = getattr(predicate, "__qualname__", None) or repr(predicate)
    message = f"flow {flow!r}: condition {name}: {type(exc).__name__}: {exc}"
    if any(entry.message == message and entry.at == ts.now for entry in ts.session.error):
        return
    live = run is not None and any(r is run for r in ts.session.runs)  # not a would-be run of a start check
    run_id = run.id if live and run is not None else None
    ts.emit(ErrorEvent(run_id=run_id, flow=flow, at=ts.now, error=message))
    ts.log("error", message, code=CONDITION_FAILED, flow=flow, run=run_id)
    ts.outcomes.append(Outcome(code=CONDITION_FAILED, status="failed", kind="error", run_id=run_id, flow_id=flow,
                               detail=message, at=ts.now))
    text = ts.agent.failure_reply
    if ts.options.silence is None and text and not any(m.text == text for m in ts.messages):
        ts.say(text, kind="verbatim", key=f"{flow}:condition:failure", run=run if live else None)
