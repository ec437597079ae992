"""``Agent``: one immutable agent serves every session.

It validates its whole definition when built (``FlowDefinitionError`` naming the flow and node of
each problem), binds models (a ``provider:model`` name or a ``Model`` object, per tier), and runs
turns: ``await agent.turn(session, input)``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.clock import SystemClock, UuidIds
from tether.engine.core.input_checks import CheckedInput
from tether.engine.core.inputs import Message, TurnInput, TurnOptions
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.results import ScheduledWake, TurnResult
from tether.engine.core.session import Session
from tether.engine.turn.turn import run_turn
from tether.engine.turn.wakes import pending_wakes
from tether.errors import CheckpointFailed, FlowDefinitionError, ModelConfigurationError
from tether.flow.agent_def import AgentDefinition
from tether.flow.flow import Flow
from tether.models.types import Model
from tether.tracing import traced_models

__all__ = ["Agent", "TurnChunk"]

TIERS = ("default", "small", "deep")


@dataclass(frozen=True)
class TurnChunk:
    """One item of :meth:`Agent.turn_stream`: a text ``delta``, or the last chunk (``done``) with
    the turn's ``result``."""

    delta: str = ""
    done: bool = False
    result: TurnResult | None = None


class Agent(AgentDefinition):
    """An agent: identity, fields, flows, actions, tools, and the models that serve it.

    Args:
        name: the assistant's name (both prompts open "You are <name>").
        model: the default model: a ``provider:model`` name (``openai:gpt-4o-mini``) or a
            ``Model`` object. None: no model (deterministic steps still work; a step that needs
            one answers that a model must be configured).
        models: extra tiers, ``{"small": ..., "deep": ...}``; a node asking for an undeclared
            tier fails rather than silently using another model.
        clock: where time comes from (default: the system clock; tests pass a ``FakeClock``).
        ids: where session ids come from (default: UUID v4).
        gate_judge: the model that judges flows' judge gates (seed 000's ``flowGateJudge``): a
            ``provider:model`` name or a ``Model``. The agent's own model never judges: with no
            gate judge (here or on the ``Runtime``), a judge gate is an execution error.

    The other arguments are those of :class:`tether.flow.agent_def.AgentDefinition`: persona,
    goal, knowledge, instructions, fields, flows, actions, events, conditions, tools, idle,
    business_hours, max_tool_loops (default 5), history_window (default 40 messages: the
    conversation's window, and each agent-step memory namespace without summaries), failure_reply (what the customer
    hears when a step fails; default :data:`~tether.flow.agent_def.DEFAULT_FAILURE_REPLY`), repair (the
    conversation repair patterns: a :class:`~tether.flow.repair.Repair`).
    """

    def __init__(self, name: str, *, model: str | Model | None = None,
                 models: Mapping[str, str | Model] | None = None, clock: Clock | None = None,
                 ids: Ids | None = None, gate_judge: str | Model | None = None, **definition: Any) -> None:
        super().__init__(name, **definition)
        self._gate_judge: str | Model | None = gate_judge
        self._resolved_judge: Model | None = None
        self._selections: dict[str, str | Model] = {}
        if model is not None:
            self._selections["default"] = model
        for tier, selection in (models or {}).items():
            if tier not in TIERS:
                raise ModelConfigurationError(f"unknown model tier {tier!r} (tiers: {', '.join(TIERS)})")
            self._selections[tier] = selection
        self._resolved: dict[str, Model] = {}
        self.clock: Clock = clock or SystemClock()
        self.ids: Ids = ids or UuidIds()
        self.retired_flows: dict[str, Flow] = {}
        """Replaced flow versions by digest: a run parked on one finishes on it (:meth:`with_flows`)."""

    # ------------------------------------------------------------------ models

    @property
    def model_selections(self) -> dict[str, str | Model]:
        """The configured model per tier (names or objects)."""
        return dict(self._selections)

    def with_model(self, model: str | Model | None, **tiers: str | Model) -> Agent:
        """A copy of this agent served by ``model`` (and optional ``small=``/``deep=`` tiers)."""
        clone = copy.copy(self)
        clone._selections = {k: v for k, v in self._selections.items() if k != "default"}
        if model is not None:
            clone._selections["default"] = model
        clone._selections.update(tiers)
        clone._resolved = {}
        return clone

    @property
    def gate_judge(self) -> str | Model | None:
        """The configured gate judge (a name or a ``Model``), or None."""
        return self._gate_judge

    def with_gate_judge(self, judge: str | Model | None) -> Agent:
        """A copy of this agent whose judge gates are judged by ``judge``."""
        clone = copy.copy(self)
        clone._gate_judge = judge
        clone._resolved_judge = None
        return clone

    def gate_judge_model(self) -> Model | None:
        """The model that judges judge gates; None when no gate judge is configured."""
        if self._gate_judge is None:
            return None
        if self._resolved_judge is None:
            if isinstance(self._gate_judge, str):
                from tether.models import resolve_model

                self._resolved_judge = resolve_model(self._gate_judge)
            else:
                self._resolved_judge = self._gate_judge
        return self._resolved_judge

    def with_flows(self, *flows: Flow) -> Agent:
        """A copy of this agent with ``flows`` added, each replacing the agent's flow of the same id
        (a new version). The copy is validated as a whole (its tools, fields, flows); on any
        problem this raises ``FlowDefinitionError`` and nothing changes. A replaced version is kept
        by its digest: a run parked on it finishes on it, while new runs take the new version."""
        given = {flow.id: flow for flow in flows}
        retired = dict(self.retired_flows)
        for old in self.flows:
            new = given.get(old.id)
            if new is not None and new.digest != old.digest:
                retired[old.digest] = old
        clone = copy.copy(self)
        clone.flows = tuple(given.pop(f.id, f) for f in self.flows) + tuple(given.values())
        clone.flows_by_id = {f.id: f for f in clone.flows}
        clone.retired_flows = retired
        issues = clone._validate()
        if issues:
            raise FlowDefinitionError(issues, title=f"Agent {self.name!r}: the new flows failed validation")
        clone.reads_window = clone._reads_window((*clone.flows, *retired.values()))
        return clone

    def with_retired_flows(self, *flows: Flow) -> Agent:
        """A copy of this agent that keeps ``flows`` by digest, as :meth:`with_flows` keeps the
        versions it replaces: a run parked on one finishes on it; new runs never start on one. A
        flow this agent serves as it is (same digest) is not kept: its runs need no pin."""
        served = {f.digest for f in self.flows}
        clone = copy.copy(self)
        clone.retired_flows = {**self.retired_flows, **{f.digest: f for f in flows if f.digest not in served}}
        clone.reads_window = clone._reads_window((*clone.flows, *clone.retired_flows.values()))
        return clone

    def _pinned(self, session: Session | None) -> Agent:
        """This agent as ``session``'s parked runs see it: each run's flow at the version (digest)
        it started on, when that version was replaced by :meth:`with_flows`."""
        if session is None or not self.retired_flows:
            return self
        pinned = {run.flow: self.retired_flows[run.digest] for run in session.runs
                  if run.digest in self.retired_flows and run.flow in self.flows_by_id}
        if not pinned:
            return self
        view = copy.copy(self)
        view.flows = tuple(pinned.get(f.id, f) for f in self.flows)
        view.flows_by_id = {f.id: f for f in view.flows}
        return view

    def with_clock(self, clock: Clock, ids: Ids | None = None) -> Agent:
        """A copy of this agent reading time from ``clock``."""
        clone = copy.copy(self)
        clone.clock = clock
        if ids is not None:
            clone.ids = ids
        return clone

    def model_for(self, tier: str) -> Model | None:
        """The model serving ``tier``; None when no default model is configured."""
        if tier in self._resolved:
            return self._resolved[tier]
        selection = self._selections.get(tier)
        if selection is None:
            if tier != "default":
                raise ModelConfigurationError(f"model tier {tier!r} is not configured for agent {self.name!r}")
            return None
        if isinstance(selection, str):
            from tether.models import resolve_model

            resolved: Model = resolve_model(selection)
        else:
            resolved = selection
        self._resolved[tier] = resolved
        return resolved

    def model_named(self, selection: str) -> Model:
        """The model an agent step names itself (``agent(..., model="provider:name")``),
        resolved once."""
        key = f"step:{selection}"
        if key not in self._resolved:
            from tether.models import resolve_model

            self._resolved[key] = resolve_model(selection)
        return self._resolved[key]

    # ------------------------------------------------------------------ turns

    def pending_wakes(self, session: Session, *, options: TurnOptions | None = None) -> list[ScheduledWake]:
        """The wakes a saved session waits on (parked runs and silence flows); no model calls."""
        return pending_wakes(self._pinned(session), session, options, self.clock)

    async def turn(self, session: Session | None, input: TurnInput | CheckedInput | str, *,
                   options: TurnOptions | None = None, session_id: str | None = None,
                   on_delta: Callable[[str], Awaitable[None]] | None = None, **option_fields: Any) -> TurnResult:
        """Run one turn. ``input`` is a Message (a plain string is a message), Wake, Event or Start
        (or any of them as ``check_input`` returned it, which is not checked again);
        ``session`` is the previous turn's ``result.session`` (None starts a new session). The
        session passed in is never mutated (unless ``options.gives_session`` gives it to the turn).
        ``on_delta`` receives the text said as it is produced
        (the deltas :meth:`turn_stream` yields)."""
        if isinstance(input, str):
            input = Message(input)
        options = _with_sleep(options if options is not None else TurnOptions(**option_fields))
        try:
            return await run_turn(self._pinned(session), session, input, options=options, clock=self.clock,
                                  ids=self.ids, models=traced_models(self), session_id=session_id,
                                  on_delta=on_delta)
        except CheckpointFailed as failed:  # the host's own save failed: it gets its error back, with its cause
            error = failed.error
            raise error from error.__cause__

    async def turn_stream(self, session: Session | None, input: TurnInput | CheckedInput | str, *,
                          options: TurnOptions | None = None, session_id: str | None = None,
                          **option_fields: Any) -> AsyncIterator[TurnChunk]:
        """Like :meth:`turn`, but yields every message's text as deltas, then one final chunk with
        ``done`` and the result (only that chunk when nothing is said). The speak call's reply
        streams as it arrives; an engine-rendered message (``response=``, a fixed question, a
        fallback) is one delta, sent before the turn's next model call. Messages are separated by a
        blank line, so the deltas joined are ``result.text``. The turn waits for the consumer to
        take each delta."""
        if isinstance(input, str):
            input = Message(input)
        options = _with_sleep(options if options is not None else TurnOptions(**option_fields))
        deltas: asyncio.Queue[str] = asyncio.Queue()

        async def on_delta(text: str) -> None:
            await deltas.put(text)
            await deltas.join()  # the consumer has the delta (and may barge in) before the turn goes on

        task = asyncio.ensure_future(run_turn(self._pinned(session), session, input, options=options,
                                              clock=self.clock, ids=self.ids, models=traced_models(self),
                                              session_id=session_id, on_delta=on_delta))
        try:
            while not task.done() or not deltas.empty():
                getter = asyncio.ensure_future(deltas.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    delta = getter.result()
                    deltas.task_done()
                    yield TurnChunk(delta=delta)
                else:
                    getter.cancel()
            try:
                result = task.result()
            except CheckpointFailed as failed:
                error = failed.error
                raise error from error.__cause__
            yield TurnChunk(done=True, result=result)
        finally:
            if not task.done():
                task.cancel()


def _with_sleep(options: TurnOptions) -> TurnOptions:
    """The engine waits (between an agent step's model attempts) and runs parallel child steps
    through the host's asyncio."""
    if options.sleep is not None and options.gather is not None:
        return options
    return dataclasses.replace(options, sleep=options.sleep or asyncio.sleep, gather=options.gather or gather)


async def gather(thunks: Sequence[Callable[[], Awaitable[Any]]], limit: int | None) -> None:
    """Await every thunk, at most ``limit`` at a time (all at once when None)."""
    gate = asyncio.Semaphore(limit or max(1, len(thunks)))

    async def one(thunk: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            await thunk()

    await asyncio.gather(*(one(thunk) for thunk in thunks))
