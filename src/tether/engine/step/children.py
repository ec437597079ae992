"""Child steps: ``ctx.run_step`` (one child, in sequence) and ``ctx.run_steps`` (children in
parallel), seed 004's nested execution.

A child is an agent step of the same flow run inside the executing step's handler. It runs
``on_enter``, its model loop, then ``on_exit`` (always); it gets no crossing message, and it
cannot move the cursor: a ``go`` to another step or an ``end`` inside a child is an error (return a
result to the owning step instead). What it returns is its reply's content (a ``direct`` text,
or the text or data of its last model reply).

- ``run_step(node, message)``: the child's memory is its own namespace (kept), and its state
  writes go to the run's state (saved with the parent's save).
- ``run_steps([...], failure_policy=..., max_concurrency=..., reducers=...)``: each child gets an
  immutable snapshot of the state, a private state and a private memory (discarded). Results come
  back in request order. When all are done their writes are published: a field written by two
  children is an error unless ``reducers`` names a reducer for it (``append``, ``sum``,
  ``keyed`` (by branch key), or a function ``reduce(base, contributions)``), applied in request
  order. ``retain-successes`` (the default) publishes the successful children's writes and
  reports the failures; ``atomic`` publishes nothing when any child failed and raises.

Caps: nesting depth 8, and 256 child invocations in one turn. Children's tool calls are journaled
(a re-dispatch returns recorded results), but parallel children do not write mid-turn: their
journal entries are saved with the turn.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.engine.core.effects import Effects
from tether.engine.core.session import MemorySpace, Run
from tether.engine.step.loop import converse, memory_of
from tether.engine.step.memory import append_to
from tether.engine.step.view import Frame, StepView, call_hook
from tether.errors import NodeFailedError, TetherSignal
from tether.flow.flow import Flow
from tether.flow.steps import AgentNode

if TYPE_CHECKING:
    from tether.engine.core.state import TurnState

__all__ = ["MAX_DEPTH", "MAX_INVOCATIONS", "REDUCERS", "Branch", "ParallelResult", "ParallelStateConflictError",
           "StepRequest", "gather", "run_child", "run_children"]

MAX_DEPTH = 8
"""How deep child steps may nest."""
MAX_INVOCATIONS = 256
"""How many child steps one turn may run."""
POLICIES = ("retain-successes", "atomic")


class ParallelStateConflictError(NodeFailedError):
    """Two parallel children wrote one field that declares no reducer (the owning step fails)."""

    code = "parallel-state-conflict"


@dataclass(frozen=True)
class StepRequest:
    """One child of ``ctx.run_steps``: the ``step`` (a node or its id), the ``message`` it
    answers, and a ``key`` (needed when one step runs more than once; ``keyed`` reducers use it)."""

    step: Any
    message: str | None = None
    key: str | None = None


@dataclass
class Branch:
    """What one child did: its content (``ok``) or its error, and the fields it wrote."""

    index: int
    step: str
    key: str
    ok: bool
    content: Any = None
    error: str | None = None
    writes: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParallelResult:
    """The children's results, in request order."""

    branches: list[Branch]

    @property
    def fulfilled(self) -> list[Branch]:
        return [b for b in self.branches if b.ok]

    @property
    def rejected(self) -> list[Branch]:
        return [b for b in self.branches if not b.ok]

    @property
    def contents(self) -> list[Any]:
        """Each child's content (None for one that failed), in request order."""
        return [b.content for b in self.branches]


def _append(base: Any, contributions: list[tuple[str, Any]]) -> Any:
    merged = list(base) if isinstance(base, list) else ([] if base is None else [base])
    for _, value in contributions:
        merged.extend(value if isinstance(value, list) else [value])
    return merged


def _sum(base: Any, contributions: list[tuple[str, Any]]) -> Any:
    return (base or 0) + sum(value for _, value in contributions)


def _keyed(base: Any, contributions: list[tuple[str, Any]]) -> Any:
    return {**(base if isinstance(base, Mapping) else {}), **dict(contributions)}


REDUCERS: dict[str, Callable[[Any, list[tuple[str, Any]]], Any]] = {"append": _append, "sum": _sum, "keyed": _keyed}
"""Named reducers: ``reduce(base, [(branch key, value), ...])`` in request order."""


def _child_node(flow: Flow, owner: StepView, step: Any) -> AgentNode:
    step_id = step if isinstance(step, str) else getattr(step, "id", None)
    node = flow.by_id.get(step_id) if isinstance(step_id, str) else None
    if not isinstance(node, AgentNode) or (not isinstance(step, str) and node is not step):
        raise NodeFailedError(f"flow {flow.id!r}, node {owner.node!r}: child step {step_id or step!r} is not an agent "
                              "step of the flow", flow=flow.id, node=owner.node)
    return node


def _enter(ts: TurnState, flow: Flow, owner: StepView) -> int:
    """Check the caps for one more child of ``owner``; returns the child's depth."""
    depth = (owner._frame.depth if owner._frame is not None else 0) + 1
    if depth > MAX_DEPTH:
        raise NodeFailedError(f"flow {flow.id!r}, node {owner.node!r}: child steps nest deeper than {MAX_DEPTH}",
                              flow=flow.id, node=owner.node)
    ts.child_steps += 1
    if ts.child_steps > MAX_INVOCATIONS:
        raise NodeFailedError(f"flow {flow.id!r}, node {owner.node!r}: more than {MAX_INVOCATIONS} child steps in "
                              "one turn", flow=flow.id, node=owner.node)
    return depth


class _Uncommitted(Effects):
    """A parallel child's journal: recorded with the turn, not written mid-turn (children run
    at once, and a host write is one at a time)."""

    async def _commit(self) -> None:
        return None


async def _run(ts: TurnState, run: Run, flow: Flow, owner: StepView, node: AgentNode, frame: Frame,
               message: str | None) -> Any:
    ctx = owner.at(node, frame)
    effects: Effects = (_Uncommitted if frame.parallel else Effects)(ts, run, flow.id, node.id)
    effects.step_key = frame.key
    await call_hook(node.on_enter, ctx)
    try:
        if message:
            append_to(memory_of(ts, node, ctx), "user", message, step=node.id)
        return await converse(ts, run, flow, node, ctx, effects)
    finally:
        await call_hook(node.on_exit, ctx)


def _owner_key(owner: StepView) -> str:
    effects = owner._effects
    return effects.step_key if effects is not None else f"{owner.flow}:{owner.node}"


async def run_child(ts: TurnState, run: Run, flow: Flow, owner: StepView, step: Any, message: str | None) -> Any:
    """``ctx.run_step``: one child, its memory its own namespace, its state the run's."""
    node = _child_node(flow, owner, step)
    depth = _enter(ts, flow, owner)
    parallel_owner = owner._frame is not None and owner._frame.parallel
    frame = Frame(depth=depth, key=f"{_owner_key(owner)}:c{ts.child_steps}",
                  memory=MemorySpace() if parallel_owner else None,
                  snapshot={**owner.state} if parallel_owner else None, commit=not parallel_owner)
    content = await _run(ts, run, flow, owner, node, frame, message)
    if parallel_owner and frame.writes:
        owner.set(**frame.writes)  # a child of a parallel child writes into its owner's private state
    return content


def _requests(requests: Sequence[Any]) -> list[StepRequest]:
    found: list[StepRequest] = []
    for request in requests:
        if isinstance(request, StepRequest):
            found.append(request)
        elif isinstance(request, Mapping):
            found.append(StepRequest(request.get("step"), request.get("message"), request.get("key")))
        elif isinstance(request, tuple) and len(request) == 2:
            found.append(StepRequest(request[0], request[1]))
        else:
            found.append(StepRequest(request))
    return found


async def run_children(ts: TurnState, run: Run, flow: Flow, owner: StepView, requests: Sequence[Any], *,
                       failure_policy: str, max_concurrency: int | None,
                       reducers: Mapping[str, Any]) -> ParallelResult:
    """``ctx.run_steps``: children in parallel, each on a snapshot with private state and memory."""
    where = f"flow {flow.id!r}, node {owner.node!r}"
    if failure_policy not in POLICIES:
        raise NodeFailedError(f"{where}: failure_policy must be 'retain-successes' or 'atomic', got "
                              f"{failure_policy!r}", flow=flow.id, node=owner.node)
    if max_concurrency is not None and (not isinstance(max_concurrency, int) or max_concurrency < 1):
        raise NodeFailedError(f"{where}: max_concurrency must be a positive integer, got {max_concurrency!r}",
                              flow=flow.id, node=owner.node)
    for name, reducer in reducers.items():
        if not callable(reducer) and reducer not in REDUCERS:
            raise NodeFailedError(f"{where}: reducer {reducer!r} for {name!r} is not one of "
                                  f"{', '.join(REDUCERS)} or a function", flow=flow.id, node=owner.node)
    wanted = _requests(requests)
    nodes = [_child_node(flow, owner, r.step) for r in wanted]
    keys = [r.key or n.id for r, n in zip(wanted, nodes, strict=True)]
    if len(set(keys)) != len(keys):
        raise NodeFailedError(f"{where}: run_steps() runs one step more than once: give each a unique key",
                              flow=flow.id, node=owner.node)
    snapshot = copy.deepcopy(owner.state)
    branches: list[Branch] = []
    thunks: list[Callable[[], Awaitable[None]]] = []
    for index, (request, node, key) in enumerate(zip(wanted, nodes, keys, strict=True)):
        depth = _enter(ts, flow, owner)
        frame = Frame(depth=depth, key=f"{_owner_key(owner)}:p{ts.child_steps}", memory=MemorySpace(),
                      snapshot=copy.deepcopy(snapshot), commit=False)
        branch = Branch(index, node.id, key, ok=False)
        branches.append(branch)

        async def go(branch: Branch = branch, node: AgentNode = node, frame: Frame = frame,
                     message: str | None = request.message) -> None:
            try:
                branch.content = await _run(ts, run, flow, owner, node, frame, message)
                branch.ok = True
                branch.writes = frame.writes
            except TetherSignal:
                raise
            except Exception as exc:  # a failed child is reported, not raised (the policy decides)
                branch.error = f"{type(exc).__name__}: {exc}"

        thunks.append(go)
    await gather(ts, thunks, max_concurrency)
    result = ParallelResult(branches)
    if result.rejected and failure_policy == "atomic":
        failed = "; ".join(f"{b.key}: {b.error}" for b in result.rejected)
        raise NodeFailedError(f"{where}: run_steps (atomic) published nothing, {len(result.rejected)} child "
                              f"step(s) failed: {failed}", flow=flow.id, node=owner.node)
    owner.set(**_publish(flow, owner, owner.state, result.fulfilled, reducers))
    return result


def _publish(flow: Flow, owner: StepView, base: Mapping[str, Any], branches: list[Branch],
             reducers: Mapping[str, Any]) -> dict[str, Any]:
    """The children's writes, merged: a field written by two needs a reducer."""
    written: dict[str, list[tuple[str, Any]]] = {}
    for branch in branches:
        for name, value in branch.writes.items():
            written.setdefault(name, []).append((branch.key, value))
    merged: dict[str, Any] = {}
    for name, contributions in written.items():
        reducer = reducers.get(name)
        if reducer is None:
            if len(contributions) > 1:
                who = ", ".join(key for key, _ in contributions)
                raise ParallelStateConflictError(
                    f"flow {flow.id!r}, node {owner.node!r}: child steps {who} all wrote {name!r}; declare a reducer "
                    "for it (append, sum, keyed, or a function)", flow=flow.id, node=owner.node)
            merged[name] = contributions[0][1]
            continue
        reduce = REDUCERS[reducer] if isinstance(reducer, str) else reducer
        merged[name] = reduce(base.get(name), contributions)
    return merged


async def gather(ts: TurnState, thunks: list[Callable[[], Awaitable[None]]], limit: int | None) -> None:
    """Run the children at once through the host (``TurnOptions.gather``), else one by one."""
    if ts.options.gather is not None:
        await ts.options.gather(thunks, limit)
        return
    for thunk in thunks:
        await thunk()
