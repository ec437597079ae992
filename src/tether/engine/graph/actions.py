"""The ``ctx`` an action node receives, and how action results become moves."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from tether.durable.decisions import ApprovalDecision, SignalResult
from tether.engine.core.effects import Effects
from tether.engine.core.events import CustomEvent
from tether.engine.core.pauses import Pause, Static
from tether.engine.core.session import Run, WaitingOn
from tether.engine.core.state import TurnState
from tether.engine.core.suspends import park
from tether.errors import (
    FlowRuntimeError,
    NodeFailedError,
    RecoverableToolError,
    Suspend,
    TetherSignal,
    ToolError,
    TransitionError,
)
from tether.flow.durations import parse_duration
from tether.flow.flow import Flow
from tether.flow.nodes import Action
from tether.flow.results import ActionResult
from tether.models.types import Usage

__all__ = ["ActionContext", "run_action"]


class ActionContext:
    """What an action's ``run(state, ctx)`` may use.

    Every effect goes through ``ctx`` and is journaled (see :mod:`tether.engine.core.effects`): a
    re-dispatch of the same visit of the node gets the recorded results back instead of running
    the effects again. Keep the order of effects stable and branch only on journaled values.

    Attributes:
        key: the deterministic key ``run:node:visit``; make side effects idempotent on it.
        dedupe_key: the run's dedupe key (seed 003: ``flow:anchor:trigger``).
        data: the session fields (read-only copy); change them with :meth:`set`.
        input: the run's input (trigger payload, start input).
        message: the text of the message this turn answers, or None.
        context: the host's context for this turn.
    """

    def __init__(self, ts: TurnState, run: Run, flow: Flow, node: Action) -> None:
        self._ts, self._run, self._flow, self._node = ts, run, flow, node
        self._effects = Effects(ts, run, flow.id, node.id)
        self.key = ts.key(run, node.id)
        self.dedupe_key = run.dedupe_key
        self.data = dict(ts.session.data)
        self.input = run.input
        self.message = ts.message.text if ts.message is not None else None
        self.context = dict(ts.options.context)
        self.run_id = run.id
        self.flow_id = flow.id
        self.node_id = node.id
        self.tool_calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def idempotency_key(self) -> str | None:
        """The stable idempotency key of the latest ``ctx.tool`` effect (``session:run:node:visit:
        index``): the same when an effect in doubt is retried. A tool gets it as its
        ``idempotency_key`` parameter, if it has one."""
        return self._effects.idempotency_key

    def now(self) -> datetime:
        """The turn's time (from the agent's clock), journaled: the same on a re-dispatch."""
        return self._effects.now()

    def uuid(self) -> str:
        """A fresh id (from the injected id source), journaled: the same on a re-dispatch."""
        return self._effects.uuid()

    def emit(self, name: str, data: Mapping[str, Any] | None = None) -> None:
        """Emit a custom event on the turn's event stream (not journaled)."""
        self._ts.emit(CustomEvent(run_id=self._run.id, flow=self._flow.id, at=self._ts.now, name=name,
                                        data=dict(data or {})))

    def set(self, **patch: Any) -> None:
        """Write session fields as given (no coercion)."""
        self._ts.session.data.update(patch)
        self.data.update(patch)

    async def tool(self, name: str, /, **arguments: Any) -> Any:
        """Call the agent's tool ``name`` with validated arguments, exactly once per effect key;
        returns its value (the recorded one on a re-dispatch)."""
        tool = self._ts.agent.tools_by_name.get(name)
        if tool is None:
            raise ToolError(f"flow {self._flow.id!r}, node {self._node.id!r}: unknown tool {name!r} "
                            f"(registered: {sorted(self._ts.agent.tools_by_name) or 'none'})")
        if self._node.uses and name not in self._node.uses:  # the action declared what it calls
            raise ToolError(f"flow {self._flow.id!r}, node {self._node.id!r}: tool {name!r} is not in the action's "
                            f"uses ({', '.join(self._node.uses)})")
        value = await self._effects.tool(tool, arguments, lambda data: self.set(**data))
        self.tool_calls.append((name, dict(arguments)))
        return value

    async def model(self, instructions: str, *, prompt: str | None = None, schema: type[BaseModel] | None = None,
                    tier: Literal["default", "small", "deep"] = "default") -> Any:
        """Ask the model (an isolated ``subprompt`` call, counted in the turn's ``llm_calls``),
        journaled: a re-dispatch gets the recorded reply. Returns the reply's text, or an instance
        of ``schema`` when one is given (the reply must be JSON matching it)."""
        return await self._effects.model(instructions, prompt=prompt, schema=schema, tier=tier)

    def count_model_calls(self, calls: int, usage: Usage | None = None, *, workflow: bool = False) -> None:
        """Count model calls this action made without ``ctx.model`` (through a client of its own,
        or, with ``workflow=True``, by a workflow run it drove) and their tokens: they join the
        turn's ``llm_calls`` and ``usage`` and the session's ``usage`` (with ``workflow``, its
        ``workflow_calls`` too). Not journaled: count what this dispatch spent (a re-dispatch
        counts only the calls it makes again)."""
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
            raise ValueError(f"flow {self._flow.id!r}, node {self._node.id!r}: count_model_calls: calls must be "
                             f"an int >= 0, got {calls!r}")
        if usage is not None and not isinstance(usage, Usage):
            raise TypeError(f"flow {self._flow.id!r}, node {self._node.id!r}: count_model_calls: usage must be a "
                            f"tether.models.Usage, got {type(usage).__name__}")
        self._ts.count_calls(calls, usage or Usage(), workflow=workflow)

    async def approve(self, summary: str, *, payload: Any = None) -> ApprovalDecision:
        """Ask a human to approve: the run parks durably (``awaiting-approval``) with ``summary``
        and ``payload`` frozen, until ``runtime.approve(session, approval_id, decision)``; then
        the action runs again and this returns the decision (a rejection is a decision too)."""
        return await self._effects.approve(summary, payload=payload)

    async def signal(self, name: str, *, timeout: str | None = None) -> SignalResult:
        """Wait durably for ``runtime.signal(session, name, payload)``; after ``timeout`` (a
        duration such as ``"2h"``) a wake resumes the action with ``timed_out=True``."""
        return await self._effects.signal(name, timeout=timeout)


async def run_action(ts: TurnState, run: Run, flow: Flow, node: Action) -> Any:
    """Run an action node; returns what the loop should act on (a transition or a static target)."""
    ctx = ActionContext(ts, run, flow, node)
    try:
        if node.run is not None:
            result = node.run(ts.state_view(run), ctx)
        else:
            handler = ts.agent.actions.get(node.do or "")
            if handler is None:
                raise FlowRuntimeError(f'unknown action "{node.do}"')
            params = ts.render_value(node.with_ or {}, run, where="with_")
            result = handler(params, ctx)
        if inspect.isawaitable(result):
            result = await result
    except Suspend as parked:  # ctx.approve / ctx.signal: the run waits, durably
        return park(ts, run, node.id, parked)
    except (TetherSignal, TransitionError):
        raise
    except Exception as exc:
        return _raised(ts, run, flow, node, exc)
    if result is None:
        ts.outcome(run, kind="do", node_id=node.id)
        return Static(node.then)
    if isinstance(result, ActionResult):
        return _interpret(ts, run, node, result)
    ts.outcome(run, kind="do", node_id=node.id)
    return result


def _raised(ts: TurnState, run: Run, flow: Flow, node: Action, exc: Exception) -> Any:
    """A raised exception is a crash, not a result (DESIGN §9): ``on_fail`` routes it; without one
    the run fails loudly (a RecoverableToolError as itself, so the loop can re-collect)."""
    reason = str(exc) or type(exc).__name__
    if node.on_fail is not None:
        return _failed(ts, run, node, reason)
    ts.outcome(run, code="action-failed", status="failed", kind="do", node_id=node.id, detail=reason)
    if isinstance(exc, RecoverableToolError):
        raise exc
    prefix = f"flow {flow.id!r}, node {node.id!r}: "
    raise NodeFailedError(f"{prefix}{type(exc).__name__}: {reason.removeprefix(prefix)}", flow=flow.id,
                          node=node.id) from exc


def _failed(ts: TurnState, run: Run, node: Action, reason: str) -> Any:
    ts.outcome(run, code="action-failed", status="failed", kind="do", node_id=node.id, detail=reason)
    return Static(node.on_fail if node.on_fail is not None else node.then)


def _interpret(ts: TurnState, run: Run, node: Action, result: ActionResult) -> Any:
    if result.status == "ok":
        ts.outcome(run, kind="do", node_id=node.id, detail=result.detail)
        if result.spoke:
            ts.answered_by.add(run.id)
        return Static(node.then)
    if result.status == "skipped":
        ts.outcome(run, code="action-skipped", status="skipped", kind="do", node_id=node.id, detail=result.detail)
        return Static(node.then)
    if result.status == "failed":
        return _failed(ts, run, node, result.detail or "failed")
    try:
        delay: timedelta = parse_duration(result.duration or "")
    except ValueError:
        return _failed(ts, run, node, f"bad defer duration {result.duration!r}")
    until = ts.now + delay
    key = f"{run.id}:{node.id}:{int(until.timestamp() * 1000)}"
    run.status = "waiting"
    run.waiting = WaitingOn(kind="defer", key=key, until=until, set_at=ts.now)
    ts.schedule_wake(key, until)
    ts.outcome(run, code="action-deferred", status="deferred", kind="do", node_id=node.id, detail=result.detail,
               until=until)
    return Pause("waiting")
