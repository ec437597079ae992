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
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.errors import FlowRuntimeError
from tether.flow.agent_def import CONDITION_NAMES
from tether.flow.fields import is_known

__all__ = ["PredicateContext", "holds"]


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


def holds(ts: TurnState, predicate: Any, run: Run | None, *, input: Any = None) -> bool:
    """Evaluate ``predicate`` (None holds)."""
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
        return bool(predicate(ctx))
    if not isinstance(predicate, Mapping):
        raise FlowRuntimeError(f"not a predicate: {predicate!r}")
    data = ts.session.data
    for key, arg in predicate.items():
        if key == "equals":
            if any(data.get(name) != value for name, value in arg.items()):
                return False
        elif key == "known":
            if any(not is_known(data.get(name)) for name in arg):
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
