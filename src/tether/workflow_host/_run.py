"""``WorkflowRun``: drives one workflow run on the process executor and saves it in a store.

:meth:`WorkflowRun.drain` advances everything the runtime owns until only human (or agent) work
is left, one step at a time, in this order each step:

1. a node whose guard or binding reads a skipped producer fails (or is skipped if optional);
2. routers: the first available, decidable router in definition order settles (frontier waves:
   a router made losing by an earlier one in the same wave never completes);
3. gates park at ``awaiting_approval`` (autonomous mode never bypasses them);
4. sub-flows run inline (the child is transient; its gates are projected onto the parent node);
5. function and check nodes run on the executor, and subprompt nodes make their one isolated
   model call: one at a time, except that the available members of one
   ``control.parallelGroup`` run together (one attempt each, joined before the next step); a
   node's own attempts never overlap.

:meth:`WorkflowRun.advance` drains, then gives the agent turns (with the flow tools) on the
agent nodes until the agent waits for a human or has nothing left to do
(:class:`~tether.workflow_host.AgentDriver`).

Every change goes through :func:`tether.workflow.mutate` and, with a store, is saved with
compare-and-swap before the next step; node status changes are written as events in the same
transaction. An attempt's result is applied only if its node's execution generation is still
the one it started under (a cancel, retry or hydrate in between discards it).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from tether.errors import SpawnError, WorkflowDefinitionError, WorkflowExpressionError, WorkflowOperationError
from tether.executors import DEFAULT_SETTLE_BUDGET, Binding, CheckVerdict, Executor, SubprocessExecutor, retry
from tether.models.tiers import ModelTiers
from tether.models.types import Model, Usage
from tether.stores.base import Store
from tether.workflow import (
    NodeState,
    Wait,
    Workflow,
    WorkflowGraph,
    WorkflowSnapshot,
    load_workflow,
    mutate,
    new_snapshot,
    ops,
    resolve_bindings,
)
from tether.workflow._contract import AgentRun, FunctionRun, GateRun, RouterRun, SubflowRun, SubpromptRun
from tether.workflow._derive import changed_nodes, derive, index_of
from tether.workflow._state import Approval
from tether.workflow_host._agent import DEFAULT_TOOL_ROUNDS, AgentDriver, TurnReport
from tether.workflow_host._files import load_workflow_file
from tether.workflow_host._process import build_request, settle_outcome, spawn_failure
from tether.workflow_host._queue import pending_work
from tether.workflow_host._store import SnapshotStore
from tether.workflow_host._subflow import MAX_SUBFLOW_DEPTH, SubflowHost, check_subflows, tree_digest
from tether.workflow_host._subprompt import run_subprompt

__all__ = ["MAX_SUBFLOW_DEPTH", "Resolver", "WorkflowRun"]

Resolver = Callable[[str], WorkflowGraph | Workflow | Mapping[str, Any]]
Definition = WorkflowGraph | Workflow | Mapping[str, Any] | str


def _graph(definition: Definition) -> WorkflowGraph:
    return definition if isinstance(definition, WorkflowGraph) else load_workflow(definition)


class WorkflowRun:
    """One run of a workflow, hosted over an executor and (optionally) a store.

    Args:
        definition: the workflow (compiled graph, model, mapping or YAML/JSON text).
        executor: runs function and check nodes (default: a :class:`SubprocessExecutor`).
        store: where the snapshot is saved after every change (``None``: in memory only).
        run_id: the run id (default: a new UUID).
        input: the run input (overlaying the workflow's declared ``input`` defaults).
        autonomous: no pauses except mandatory approvals, gates and escalated checks.
        workspace: the working directory of commands (a node's ``run.cwd`` is relative to it).
        resolve: finds a sub-flow's workflow by id (a mapping or a function). The whole sub-flow
            tree is resolved and checked here, at registration: an unknown child, a cycle across
            workflows or nesting deeper than 16 raises :class:`WorkflowDefinitionError`.
        on_change: called once per mutation with the new snapshot.
        model: serves subprompt nodes and agent turns: a :class:`~tether.models.Model` or a
            ``provider:model`` string (the ``default`` tier only), or :class:`ModelTiers`.
        max_tool_rounds: how many rounds of tool calls one agent turn may make (default 8).
        leave_model_work: leave subprompt nodes available instead of failing them when no model
            is configured (a worker without a model leaves them to a worker with one).
    """

    def __init__(
        self,
        definition: Definition,
        *,
        executor: Executor | None = None,
        store: Store | SnapshotStore | None = None,
        run_id: str | None = None,
        input: dict[str, Any] | None = None,
        autonomous: bool = False,
        workspace: str | Path = ".",
        resolve: Resolver | Mapping[str, Definition] | None = None,
        on_change: Callable[[WorkflowSnapshot], None] | None = None,
        budget: float = DEFAULT_SETTLE_BUDGET,
        model: Model | ModelTiers | str | None = None,
        max_tool_rounds: int = DEFAULT_TOOL_ROUNDS,
        leave_model_work: bool = False,
        _ancestry: tuple[str, ...] = (),
        _parent: WorkflowRun | None = None,
        _snapshot: WorkflowSnapshot | None = None,
        _revision: int | None = None,
    ) -> None:
        self.graph = _graph(definition)
        self.executor: Executor = executor or SubprocessExecutor()
        self.snapshots = SnapshotStore(store) if isinstance(store, Store) else store
        self.workspace = Path(workspace)
        self.on_change = on_change
        self.budget = budget
        self.models = model if isinstance(model, ModelTiers) else ModelTiers(default=model)
        self.max_tool_rounds = max_tool_rounds
        self.leave_model_work = leave_model_work and self.models.default is None
        self._models: dict[str, Model | None] = {}
        self.journal: list[dict[str, Any]] = []  # tool calls waiting for the next save (JournalEntry fields)
        self.notes: list[dict[str, Any]] = []  # events waiting for the next save (see note())
        self.ancestry = (*_ancestry, self.graph.id)
        self._parent = _parent
        self.resolver = resolve
        if not _ancestry:
            check_subflows(self.graph, self.resolve)
        # a child run is never stored: only a root run is pinned (to its whole sub-flow tree)
        self.digest = self.graph.digest if _ancestry else tree_digest(self.graph, self.resolve)
        self._snapshot = _snapshot or new_snapshot(self.graph, run_id or str(uuid.uuid4()), input,
                                                   autonomous=autonomous, digest=self.digest)
        self._revision = _revision
        self._lock = asyncio.Lock()
        self.aborts: dict[str, asyncio.Event] = {}
        self._draining = False
        self.subflows = SubflowHost(self, self._child)
        self.agent_nodes = frozenset(n for n, node in self.graph.nodes.items() if isinstance(node.run, AgentRun))
        self.agent = AgentDriver(self)
        self.last_agent_turn: TurnReport | None = None  # what advance()'s last agent turn did

    # ------------------------------------------------------------------ reading

    @property
    def snapshot(self) -> WorkflowSnapshot:
        """The current snapshot (replaced, never modified, by each mutation)."""
        return self._snapshot

    @property
    def run_id(self) -> str:
        """The run id."""
        return self._snapshot.run_id

    @property
    def status(self) -> str:
        """The run status: running, waiting, blocked, complete, failed or cancelled."""
        return self._snapshot.status

    @property
    def revision(self) -> int | None:
        """The stored revision (``None`` until first saved, or without a store)."""
        return self._revision

    def node(self, node_id: str) -> NodeState:
        """The state of ``node_id``."""
        return self._snapshot.node(node_id)

    def verdict(self, node_id: str) -> CheckVerdict | None:
        """The verdict of check ``node_id``'s last settled attempt, typed (``passed``,
        ``exit_code``, ``provenance``, ``inputs``, ``compared``, ``process``), or ``None`` before
        it ran. A failed check keeps its verdict after a human overrides it."""
        found = next((a.verdict for a in reversed(self.node(node_id).attempts) if a.verdict is not None), None)
        return CheckVerdict.model_validate(found) if found is not None else None

    def model_for(self, tier: str) -> Model | None:
        """The model of ``tier`` (``None``: no default configured); an undeclared ``small`` or
        ``deep`` raises :class:`~tether.errors.ModelConfigurationError`, never substitutes."""
        if tier not in self._models:
            self._models[tier] = self.models.resolve(tier)
        return self._models[tier]

    async def count_model_call(self, usage: Usage) -> None:
        """Count one model call and its tokens on the run; a sub-flow's child also counts it on
        its parent (the child is never saved: the parent's snapshot is where its cost is kept)."""
        def count(snapshot: WorkflowSnapshot) -> None:
            snapshot.model_calls += 1
            for name, value in usage.as_dict().items():
                snapshot.usage[name] = snapshot.usage.get(name, 0) + value
        await self.apply(count)
        if self._parent is not None:
            await self._parent.count_model_call(usage)

    def resolve(self, flow: str) -> WorkflowGraph:
        """The workflow ``flow`` for a sub-flow node (``KeyError`` when unknown)."""
        if self.resolver is None:
            raise KeyError(flow)
        found = self.resolver[flow] if isinstance(self.resolver, Mapping) else self.resolver(flow)
        return _graph(found)

    # ------------------------------------------------------------------ committing

    async def apply(self, *changes: ops.Change) -> WorkflowSnapshot:
        """Apply ``changes`` (in order, one mutation each) and save after each."""
        for change in changes:
            async with self._lock:
                before = self._snapshot
                after = mutate(self.graph, before, change, self.on_change)
                await self._save(before, after)
                self._snapshot = after
        return self._snapshot

    def note(self, event: dict[str, Any]) -> None:
        """Write ``event`` (a dict with a ``type``) with the run's next save, in its transaction:
        what a person did to the run, say, beside the node changes it made."""
        self.notes.append({**event, "run_id": self.run_id})

    async def _save(self, before: WorkflowSnapshot | None, after: WorkflowSnapshot) -> None:
        journal, self.journal = self.journal, []
        notes, self.notes = self.notes, []
        if self.snapshots is None:
            return
        events = [*notes, *_events(self.graph, before, after)]
        work = pending_work(self.graph, after) if self.snapshots.queue else False
        if self._revision is None:
            self._revision = await self.snapshots.create(after, events, journal, work=work)
        else:
            changed = frozenset() if before is after else changed_nodes(after) if before is not None else None
            self._revision = await self.snapshots.save(after, self._revision, events, journal, changed=changed,
                                                       work=work)

    async def flush_journal(self) -> None:
        """Save the journal entries waiting for the next change now (a save with no change)."""
        async with self._lock:
            if self.journal and self.snapshots is not None and self._revision is not None:
                await self._save(self._snapshot, self._snapshot)

    async def save(self) -> None:
        """Save the current snapshot now (creates the stored run on first call)."""
        async with self._lock:
            await self._save(None, self._snapshot)

    # ------------------------------------------------------------------ host operations

    async def apply_approval(self, node_id: str, decision: Literal["approved", "rejected"], *,
                             feedback: str | None = None, decided_by: str | None = None,
                             response: Any = None) -> WorkflowSnapshot:
        """Decide the pending approval of ``node_id`` (see :func:`tether.workflow.ops.apply_approval`).

        A sub-flow's projected approval is forwarded to its child, which then runs on.
        """
        state = self.node(node_id)
        if state.approval is not None and state.approval.kind == "sub-flow" and state.status == "awaiting_approval":
            return await self.subflows.forward_approval(node_id, decision, feedback=feedback, decided_by=decided_by,
                                                        response=response)
        return await self.apply(ops.apply_approval(self.graph, self._snapshot, node_id, decision, feedback=feedback,
                                                   decided_by=decided_by, response=response))

    async def request_approval(self, node_id: str, summary: str | None = None) -> WorkflowSnapshot:
        """A fresh approval request on a gate whose last request was rejected."""
        state = self.node(node_id)
        entry = self.subflows.children.get(node_id)
        if entry is not None and state.approval is not None and state.approval.child_node is not None:
            await entry[1].request_approval(state.approval.child_node, summary)
        return await self.apply(ops.request_approval(self._snapshot, node_id, summary))

    async def apply_input(self, node_id: str, response: Any, *, provided_by: str | None = None) -> WorkflowSnapshot:
        """Answer ``node_id``'s input request (a sub-flow's projected request goes to its child)."""
        request = self.node(node_id).input_request
        if request is not None and request.child_node is not None and self.node(node_id).status == "awaiting_input":
            return await self.subflows.forward_input(node_id, response, provided_by=provided_by)
        return await self.apply(ops.apply_input(self._snapshot, node_id, response, provided_by))

    async def retry_node(self, node_id: str) -> WorkflowSnapshot:
        """Return failed ``node_id`` to admission under a new generation (drain to run it)."""
        return await self.apply(ops.retry_node(self._snapshot, node_id))

    async def set_autonomous_mode(self, value: bool) -> WorkflowSnapshot:
        """Turn autonomous mode on or off."""
        return await self.apply(ops.set_autonomous(value))

    async def cancel(self, reason: str = "run cancelled") -> WorkflowSnapshot:
        """Cancel the run; an in-flight attempt is aborted and its result discarded."""
        for abort in self.aborts.values():
            abort.set()
        self.subflows.drop_all()
        return await self.apply(ops.cancel(reason))

    async def hydrate(self, snapshot: WorkflowSnapshot | Mapping[str, Any]) -> WorkflowSnapshot:
        """Replace the live state with ``snapshot`` (cloned): in-flight attempts are aborted and
        discarded, children dropped, and running work returns to admission. A snapshot of another
        workflow, or pinned to another definition of this one, is refused and changes nothing
        (see :meth:`load`)."""
        loaded = WorkflowSnapshot.model_validate(snapshot if isinstance(snapshot, Mapping)
                                                 else snapshot.model_dump(by_alias=True))
        _check_pinned(loaded, self.graph, self.digest)
        for abort in self.aborts.values():
            abort.set()
        self.subflows.drop_all()

        def replace(snap: WorkflowSnapshot) -> None:
            current = {node_id: (state.generation, state.status) for node_id, state in snap.nodes.items()}
            for name in WorkflowSnapshot.model_fields:
                setattr(snap, name, getattr(loaded, name))
            for node_id, state in snap.nodes.items():
                generation, status = current.get(node_id, (0, "pending"))
                # never reuse a generation an in-flight attempt may still hold
                state.generation = max(state.generation, generation) + (1 if status == "running" else 0)
            ops.cold_restart(self.agent_nodes)(snap)
        return await self.apply(replace)

    @classmethod
    def from_file(cls, path: str | Path, *, store: Store | None = None, workspace: str | Path = ".",
                  tenant: str | None = None, **options: Any) -> WorkflowRun:
        """A new run of the workflow in ``path``; the store keeps the file (and the workspace), so
        :meth:`load` finds the definition again without being given it."""
        launch = {"file": str(Path(path).resolve()), "workspace": str(Path(workspace).resolve())}
        snapshots = SnapshotStore(store, launch=launch, tenant=tenant) if store is not None else None
        return cls(load_workflow_file(path), store=snapshots, workspace=workspace, **options)

    @classmethod
    async def load(cls, store: Store | SnapshotStore, run_id: str, definition: Definition | None = None,
                   **options: Any) -> WorkflowRun:
        """A run restored from ``store`` after a restart or crash (cold hydrate): work that was
        running and never committed returns to admission under a new generation, except a
        function or check node's command, which is in doubt: it runs again only when its node
        declares retries, else the node fails ``in doubt`` (:func:`tether.workflow.ops.resolve_in_doubt`).

        Without ``definition``, the workflow file the run was started from (``from_file``, or
        ``tether workflow run``) is loaded again; a run started from a definition in code needs it
        passed (``definition-needed`` says so). The definition must be the one the run was started
        with: another workflow is refused (``wrong-workflow``), and so is a changed definition of
        its workflow, whose digest is not the one the run is pinned to (``definition-changed``,
        naming both digests). A run saved before runs were pinned has no digest and loads under
        any definition of its workflow.
        """
        snapshots = SnapshotStore(store) if isinstance(store, Store) else store
        found = await snapshots.load(run_id)
        if found is None:
            raise WorkflowOperationError(f"no workflow run {run_id!r} in the store", code="unknown-run")
        snapshot, revision = found
        graph = _graph(definition) if definition is not None else _launched(snapshot, snapshots.launch_of(run_id))
        if snapshot.workflow_id != graph.id:
            _check_pinned(snapshot, graph, graph.digest)  # refused before its sub-flows are resolved
        run = cls(graph, store=snapshots, _snapshot=snapshot, _revision=revision, **options)
        _check_pinned(snapshot, graph, run.digest)
        derive(graph, snapshot)
        if any((state.status == "running" and node_id not in run.agent_nodes)
               or (state.approval and state.approval.kind == "sub-flow" and state.status == "awaiting_approval")
               or (state.input_request and state.input_request.child_node and state.status == "awaiting_input")
               for node_id, state in snapshot.nodes.items()):
            in_doubt, restart = ops.resolve_in_doubt(graph), ops.cold_restart(run.agent_nodes)

            def recover(snap: WorkflowSnapshot) -> None:
                in_doubt(snap)
                restart(snap)
            await run.apply(recover)
        return run

    # ------------------------------------------------------------------ draining

    async def drain(self) -> WorkflowSnapshot:
        """Advance until only human or agent work (or nothing) is left; returns the snapshot."""
        if self._draining:
            raise WorkflowOperationError("this run is already draining", code="already-draining")
        self._draining = True
        try:
            if self.snapshots is not None and self._revision is None:
                await self.save()
            while self._snapshot.status != "cancelled" and await self._step():
                pass
        finally:
            self._draining = False
        return self._snapshot

    async def advance(self, *, max_turns: int = 50) -> WorkflowSnapshot:
        """Drain, then give the agent turns until it waits for a human, has no agent node left,
        or ends a turn without changing any node (at most ``max_turns`` turns). With no model
        configured at all, this only drains."""
        await self.drain()
        configured = any(getattr(self.models, tier) is not None for tier in ("default", "small", "deep"))
        for _ in range(max_turns if configured else 0):
            if not self.agent.has_work() or self._snapshot.status == "cancelled":
                break
            before = {n: (s.status, s.generation) for n, s in self._snapshot.nodes.items()}
            report = self.last_agent_turn = await self.agent.turn()
            await self.drain()
            if report.ended_by != "reply":
                break
            if before == {n: (s.status, s.generation) for n, s in self._snapshot.nodes.items()}:
                break  # the agent answered without moving anything: a human has to look
        return self._snapshot

    async def _step(self) -> bool:
        snapshot, graph = self._snapshot, self.graph
        index = index_of(graph, snapshot)
        for node_id in index.ordered(graph, index.errors):
            state = snapshot.nodes[node_id]
            if state.status == "pending" and state.expression_error:
                await self.apply(ops.fail_node(graph, node_id, state.expression_error))
                return True
        available = index.ordered(graph, index.by_status["available"])
        for node_id in available:
            if isinstance(graph.nodes[node_id].run, RouterRun) and await self._settle_router(node_id):
                return True
        for node_id in available:
            run = graph.nodes[node_id].run
            if isinstance(run, GateRun):
                schema = run.schema_.model_dump(mode="json", by_alias=True, exclude_none=True)
                await self.apply(ops.park(node_id, Approval(kind="gate", summary=run.prompt, schema=schema)))
                return True
        for node_id in available:
            if isinstance(graph.nodes[node_id].run, SubflowRun) and await self.subflows.start(node_id):
                return True
        for node_id in available:
            if not isinstance(graph.nodes[node_id].run, FunctionRun | SubpromptRun) or (
                    self.leave_model_work and isinstance(graph.nodes[node_id].run, SubpromptRun)):
                continue
            group = graph.nodes[node_id].control.parallel_group
            if group is None:
                if await self._run_work(node_id):
                    return True
                continue
            members = [n for n in available if isinstance(graph.nodes[n].run, FunctionRun | SubpromptRun)
                       and not (self.leave_model_work and isinstance(graph.nodes[n].run, SubpromptRun))
                       and graph.nodes[n].control.parallel_group == group]
            if any(await asyncio.gather(*(self._run_work(n) for n in members))):
                return True
        return False

    async def _run_work(self, node_id: str) -> bool:
        if isinstance(self.graph.nodes[node_id].run, SubpromptRun):
            return await run_subprompt(self, node_id)
        return await self._run_process(node_id)

    async def _settle_router(self, node_id: str) -> bool:
        try:
            change = ops.settle_router(self.graph, self._snapshot, node_id)
        except WorkflowExpressionError as exc:
            await self.apply(ops.fail_node(self.graph, node_id, exc.message))
            return True
        if change is None:
            return False
        await self.apply(change)
        return True

    def _child(self, graph: WorkflowGraph, run_id: str, input: dict[str, Any]) -> WorkflowRun:
        """A sub-flow's transient child run, sharing this run's executor, workspace, resolver,
        budget and models, and counting its model calls on this run too (see
        :class:`~tether.workflow_host._subflow.SubflowHost`)."""
        return WorkflowRun(graph, executor=self.executor, run_id=run_id, input=input,
                           autonomous=self._snapshot.autonomous, workspace=self.workspace, resolve=self.resolver,
                           budget=self.budget, model=self.models, max_tool_rounds=self.max_tool_rounds,
                           _ancestry=self.ancestry, _parent=self)

    async def resolve_or_fail(self, node_id: str) -> dict[str, Binding] | None:
        """The node's bindings; ``None`` when a producer has not completed yet (the node waits)
        or when a binding reads a skipped producer (the node was just failed: check its status)."""
        try:
            bindings = resolve_bindings(self.graph, self._snapshot, node_id)
        except WorkflowExpressionError as exc:
            await self.apply(ops.fail_node(self.graph, node_id, exc.message))
            return None
        return None if isinstance(bindings, Wait) else bindings

    async def _run_process(self, node_id: str) -> bool:
        bindings = await self.resolve_or_fail(node_id)
        if bindings is None:
            return self.node(node_id).status != "available"
        try:
            request = build_request(self.graph, node_id, bindings, self.workspace)
        except ValidationError as exc:
            await self.apply(ops.fail_node(self.graph, node_id, f"node {node_id!r}: {exc.errors()[0]['msg']}"))
            return True
        abort = self.aborts[node_id] = asyncio.Event()  # registered before the node shows as running
        await self.apply(ops.start_node(node_id))
        generation = self.node(node_id).generation
        try:
            retries = max(0, self.graph.nodes[node_id].control.retries - ops.in_doubt_attempts(self.node(node_id)))
            outcome = await retry(self.executor, request, retries, abort, budget=self.budget)
        except SpawnError as exc:
            if self.node(node_id).generation == generation:
                await self.apply(spawn_failure(self.graph, node_id, generation, exc.message))
            return True
        finally:
            self.aborts.pop(node_id, None)
        if self.node(node_id).generation != generation or self.node(node_id).status != "running":
            return True  # stale: cancelled, retried or hydrated while it ran
        await self.apply(*settle_outcome(self.graph, self._snapshot, node_id, generation, request, outcome))
        return True


def _launched(snapshot: WorkflowSnapshot, launch: Mapping[str, Any] | None) -> WorkflowGraph:
    """The definition of the file ``snapshot``'s run was started from (its digest is checked next)."""
    file = (launch or {}).get("file")
    start = f"run {snapshot.run_id!r} of workflow {snapshot.workflow_id!r}"
    pinned = f" (digest {snapshot.workflow_digest})" if snapshot.workflow_digest else ""
    if not isinstance(file, str):
        raise WorkflowOperationError(
            f"{start} was started from a definition given in code{pinned}, so the store has no file to load it "
            f"from: pass it, as WorkflowRun.load(store, {snapshot.run_id!r}, definition)", code="definition-needed")
    try:
        return load_workflow_file(file)
    except WorkflowDefinitionError as exc:
        raise WorkflowOperationError(
            f"{start} was started from {file}, which does not load now ({exc.message}): pass the definition it "
            f"started with{pinned}, as WorkflowRun.load(store, {snapshot.run_id!r}, definition)",
            code="definition-needed") from None


def _check_pinned(snapshot: WorkflowSnapshot, graph: WorkflowGraph, digest: str) -> None:
    """Refuse ``snapshot`` under ``graph`` unless it is a run of that workflow and was started
    with that definition: ``digest`` is the run's pinned digest now (:func:`tree_digest`: the
    definition and its sub-flows'). An unknown digest, from before runs were pinned, is not
    checked; a run with sub-flows pinned before their definitions were covered holds
    ``graph.digest`` alone, which still matches its own definition."""
    if snapshot.workflow_id != graph.id:
        raise WorkflowOperationError(
            f"run {snapshot.run_id!r} is a run of workflow {snapshot.workflow_id!r}, not {graph.id!r}",
            code="wrong-workflow")
    if snapshot.workflow_digest is not None and snapshot.workflow_digest not in (digest, graph.digest):
        given = "the definition given now" + (", with its sub-flows" if digest != graph.digest else "")
        raise WorkflowOperationError(
            f"run {snapshot.run_id!r} of workflow {graph.id!r} was started with definition "
            f"{snapshot.workflow_digest}, not {digest} ({given}): a run is pinned to the "
            "definition it started with. Resume it with that definition, or start a new run of the changed one",
            code="definition-changed")


def _events(graph: WorkflowGraph, before: WorkflowSnapshot | None, after: WorkflowSnapshot) -> list[dict[str, Any]]:
    """Events for the store (stamped by it): one per node whose status changed, one when the run's did."""
    events: list[dict[str, Any]] = []
    changed = changed_nodes(after) if before is not None else None
    for node_id in after.nodes if changed is None else sorted(changed, key=graph.position.__getitem__):
        state = after.nodes[node_id]
        old = before.nodes[node_id].status if before is not None else None
        if old != state.status:
            event = {"type": "workflow.node", "run_id": after.run_id, "node": node_id, "status": state.status,
                     "generation": state.generation}
            if (state.attempts and state.attempts[-1].in_doubt
                    and (before is None or len(before.nodes[node_id].attempts) < len(state.attempts))):
                event["code"] = "in-doubt"
            events.append(event)
    if before is None or before.status != after.status:
        events.append({"type": "workflow.status", "run_id": after.run_id, "status": after.status})
    return events
