"""``Runtime``: the host that runs turns with persistence (the request lifecycle of seed 004).

One ``run`` call, in order: the per-session FIFO lock; the registry lookup; the agent's model
selections validated (before any session I/O); the session's cross-worker lease
(``Store.lease``, held to the end of the request, so another runtime, process or host on the same
store waits instead of loading this turn's mid-turn checkpoints); load or create (a document from
a newer tether fails with ``SESSION_VERSION_UNSUPPORTED``, untouched); the agent-match and invariant
checks; migrations and the restore hook (existing sessions only); the turn, with a checkpoint save
at every move to another node; the final compare-and-swap save with the rest of the turn's records
in the same transaction; the response envelope. ``run`` never raises: every failure becomes a
failed ``RunResponse``.

A handled failure is not a session failure: an input the engine refuses (``invalid-input``: a lone
surrogate, a NUL, a message over the size limit) fails before any session I/O, and a provider
failure (``model-<kind>``) or a step that needs a model the deploy does not configure
(``model-configuration``) fails the turn with nothing of it saved (a checkpoint it committed
stays); the session stays ``running`` and takes the next message.

Store writes. Seed 004 saves the session "mid-turn before the new step's onCrossing() runs": the
runtime gives the engine a checkpoint (``TurnOptions.checkpoint``) that, after every committed move
to another node, saves the working session under compare-and-swap with the transcript messages and
events not written yet, and hands the new revision back to the engine ("a successful save updates
the in-memory revision, so later checkpoints in the same run use a current token"). The final save
writes the remainder and the turn's wakes. So a turn crossing ``k`` nodes writes ``k + 1`` times,
each advancing the revision, and every record exactly once. A brand-new session is created by its
first write (``store.create``, revision 0): the first checkpoint, or the final save of a turn that
never moved. An existing session is saved at the end only when the turn changed something since
its last write.

Departure from seed 004, the restore save: the seed saves the restore hook's returned document at
once, and its default hook returns the document unchanged, so every request wrote the document
twice. Here a hook the user supplies (``on_restore=``) keeps that rule (its document is saved at
once, even if unchanged), but with no hook the runtime applies the default version check without
a save: nothing changed, so nothing is written (a document the migrations upgraded is saved at
once). That halves the writes of a request that does not cross nodes.

Conflicts: a ``SessionConflict`` from any save (the restore save, a checkpoint or the final save)
goes through the conflict policy (``replay`` re-runs the input on the freshly loaded document,
``reject`` fails with ``SESSION_CONFLICT``). What the failed attempt's earlier checkpoints committed
stays committed, with the turn's open-turn mark (see :mod:`tether.engine.continuation`): a replay
that finds its own mark continues its turn from the checkpoint (the input is not ingested again,
journaled effects are not run again) and the caller gets the whole reply. A replay of a new
session's request runs on the session its first checkpoint created.

Unfinished turns: a document loaded with another input's open-turn mark (its worker crashed) is
completed first (``Resume``: its reply is recorded in the transcript), and then the new input
gets a turn of its own; the same input again (same message id, wake key, approval or signal id)
continues that turn and gets its reply. Effects inside actions are journaled (started record
before, result after, each a write; see :mod:`tether.engine.effects`); the journal entries of
the live runs are loaded before a turn that may re-dispatch an action.

A tether session stays ``running`` after a flow ends (the conversation goes on); an escalation
hands it to a human (``handed_off``: messages are recorded, nobody answers, until ``release``); only
``complete``/``end_session`` marks it ``completed``, and an unexpected error marks it ``aborted``
(a checkpoint committed before the error stays: the aborted document is the last one written). A
completed or aborted session is never resumed: the next request with its id gets a new session
with a new id. The calls that change a session outside a turn (``complete``, ``release``,
``delete``) and deliver decisions and signals to parked runs (``approve``, ``signal``) live in
:mod:`tether.runtime.lifecycle`; the wake calls in :mod:`tether.runtime.scheduler`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from tether import tracing
from tether.agent import Agent, gather
from tether.clock import SystemClock, UuidIds
from tether.durable.entries import JournalEntry
from tether.durable.turns import OpenTurn
from tether.engine.continuation import is_retry
from tether.engine.input_checks import check_input
from tether.engine.inputs import Approval, Event, Message, Resume, Signal, Start, TurnInput, TurnOptions, Wake
from tether.engine.journal_runs import journal_runs
from tether.engine.ports import Clock, Ids
from tether.engine.session import LogEntry, Session, TranscriptMessage
from tether.errors import (
    FlowDriftError,
    InvalidInputError,
    ModelConfigurationError,
    ModelError,
    SessionConflict,
    SessionFlowInvariant,
    SessionFlowMismatch,
    SessionVersionUnsupported,
    StoreError,
)
from tether.flow.flow import Flow
from tether.models.types import Model
from tether.runtime import lifecycle, scheduler
from tether.runtime.attempt import Attempt, DeltaSink, one_input
from tether.runtime.commits import CommitSignal
from tether.runtime.envelope import RunResponse, describe_error, error_code, failure, failure_for, success
from tether.runtime.lifecycle import LIVE_STATUSES
from tether.runtime.locks import SessionLocks
from tether.runtime.records import turn_records
from tether.runtime.registry import agent_registry
from tether.runtime.restore import (
    MigrationRegistry,
    RestoreHook,
    call_restore_hook,
    check_supported,
    is_session_current,
)
from tether.runtime.selections import check_model_selections
from tether.runtime.turn_log import input_label, log_turn
from tether.runtime.window import WindowCache, attached, detach_window, read_tail, upgrade_v1, with_tail
from tether.stores import SQLiteStore, Store, TurnRecords
from tether.stores.leases import DEFAULT_LEASE_TIMEOUT, Leased

__all__ = ["ConflictPolicy", "Runtime", "turn_records"]

ConflictPolicy = Literal["replay", "reject"]
"""What a compare-and-swap conflict does: re-run the input on the fresh document, or fail."""


class Runtime:
    """Runs turns of registered agents with persistence.

    Args:
        agents: one agent, several, or a mapping ``{agent.id: agent}``; the id is the registry
            key a session is bound to forever. Duplicate ids raise ``FlowDefinitionError``.
        store: where sessions live (default ``SQLiteStore(".tether/tether.db")``).
        clock: the time for sessions, turns and the scheduler; when given, every agent is rebound
            to it (``agent.with_clock``). Default: the system clock (agents keep their own).
        ids: mints new session ids (default: UUID v4).
        conflict_policy: ``replay`` (re-run the same input on the freshly loaded document, up to
            ``max_replays`` times) or ``reject`` (return ``SESSION_CONFLICT`` at once).
        on_restore: ``on_restore(doc) -> doc | None`` (sync or async) for existing sessions; its
            returned document is saved at once (even if unchanged). Default: the version check of
            :func:`~tether.runtime.restore.default_restore` without a save (see the module notes).
        migrations: schema upgrades applied to every loaded running session before the hook.
        lease_timeout: seconds a request waits for the session's cross-worker lease
            (``Store.lease``) before failing with ``SESSION_LEASE_TIMEOUT``.
        gate_judge: the model that judges judge gates (seed 000's ``flowGateJudge``), a
            ``provider:model`` name or a ``Model``, for every agent that has none of its own.
    """

    def __init__(
        self,
        agents: Agent | Sequence[Agent] | Mapping[str, Agent],
        *,
        store: Store | None = None,
        clock: Clock | None = None,
        ids: Ids | None = None,
        conflict_policy: ConflictPolicy = "replay",
        max_replays: int = 3,
        on_restore: RestoreHook | None = None,
        migrations: MigrationRegistry | None = None,
        lease_timeout: float = DEFAULT_LEASE_TIMEOUT,
        gate_judge: str | Model | None = None,
    ) -> None:
        if conflict_policy not in ("replay", "reject"):
            raise ValueError(f"conflict_policy must be 'replay' or 'reject', not {conflict_policy!r}")
        if max_replays < 0:
            raise ValueError("max_replays must be >= 0")
        if lease_timeout <= 0:
            raise ValueError("lease_timeout must be > 0")
        registry = agent_registry(agents)
        if clock is not None:
            registry = {key: agent.with_clock(clock) for key, agent in registry.items()}
        if gate_judge is not None:  # an agent's own gate judge wins over the runtime's
            registry = {key: agent if agent.gate_judge is not None else agent.with_gate_judge(gate_judge)
                        for key, agent in registry.items()}
        self._agents = registry
        self._selections_checked: dict[str, Agent] = {}  # the definitions whose model selections passed
        self.clock: Clock = clock or SystemClock()
        self.ids: Ids = ids or UuidIds()
        self.store: Store = store if store is not None else SQLiteStore(".tether/tether.db", clock=clock)
        self.conflict_policy: ConflictPolicy = conflict_policy
        self.max_replays = max_replays
        self.on_restore: RestoreHook | None = on_restore
        self.migrations = migrations or MigrationRegistry()
        self.lease_timeout = lease_timeout
        self.locks = SessionLocks()
        self.flow_locks = SessionLocks()  # by agent id: publishes of one agent's flows run one at a time
        self.commits = CommitSignal()
        self.windows = WindowCache()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._scheduler: scheduler.WakeScheduler | None = None

    @property
    def agents(self) -> Mapping[str, Agent]:
        """The registered agents by id (read-only view)."""
        return dict(self._agents)

    def register_flows(self, agent_id: str, documents: Sequence[Any], registry: Any = None) -> Agent:
        """Hot registration: the agent ``agent_id`` serves the flows of ``documents`` (flow files or
        ``{"flow": ...}`` documents) from now on, each a new version of its flow id (see
        :func:`tether.dialect.register_flows`). A refused bundle raises ``FlowDefinitionError`` and
        the agent is unchanged; runs parked on a replaced version finish on it.

        Raises:
            KeyError: no agent ``agent_id`` is registered.
        """
        from tether.dialect.files import register_flows

        updated = register_flows(self._agents[agent_id], documents, registry)
        self._agents[agent_id] = updated
        return updated

    def retire_flows(self, agent_id: str, flows: Sequence[Flow]) -> Agent:
        """Keep ``flows`` on agent ``agent_id`` as replaced versions, by digest: a run parked on one
        finishes on it, new runs never start on one (:meth:`Agent.with_retired_flows`).

        Raises:
            KeyError: no agent ``agent_id`` is registered.
        """
        updated = self._agents[agent_id].with_retired_flows(*flows)
        self._agents[agent_id] = updated
        return updated

    # ------------------------------------------------------------------ requests

    async def run(
        self,
        agent_id: str,
        message: str | Message | None = None,
        *,
        session_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        wake: str | None = None,
        event: Event | None = None,
        start: Start | None = None,
        options: TurnOptions | None = None,
        on_delta: DeltaSink | None = None,
    ) -> RunResponse:
        """Run one turn of agent ``agent_id`` and persist it; never raises.

        Give exactly one input: ``message`` (text or a ``Message``), ``wake`` (a wake key),
        ``event`` or ``start``. ``session_id`` None (or unknown, completed, aborted, or reset by
        the restore hook) starts a new session with a new id: read ``response.session``.
        ``config`` is stored in ``session.metadata["config"]`` of a new session only. A wake for
        a session that does not exist (or no longer runs) does nothing (``code="no-session"``).
        ``options`` are passed to the turn with the runtime's checkpoint (it replaces any
        ``options.checkpoint``). ``on_delta`` receives the text this input's turn says as it is
        produced (see :meth:`Agent.turn_stream`); a conflict replay produces it again, so the
        envelope's ``message`` is what counts.
        """
        try:
            turn_input = one_input(message, wake, event, start)
            check_input(turn_input)  # bad input is refused before any session I/O
        except InvalidInputError as exc:
            return failure(exc.message, session_id, exc.code)
        except ValueError as exc:
            return failure(str(exc), session_id, "invalid-request")
        return await self._request(agent_id, session_id, turn_input, config, options, on_delta)

    async def _request(self, agent_id: str, session_id: str | None, turn_input: TurnInput,
                       config: Mapping[str, Any] | None, options: TurnOptions | None,
                       on_delta: DeltaSink | None = None) -> RunResponse:
        started = time.perf_counter()
        with tracing.turn_span(agent_id, session_id, input_label(turn_input)) as span:
            response = await self._locked_request(agent_id, session_id, turn_input, config, options, on_delta,
                                                  traced=span is not None)
            tracing.end_turn(span, response)
        log_turn(agent_id, session_id, turn_input, response, time.perf_counter() - started)
        return response

    async def _locked_request(self, agent_id: str, session_id: str | None, turn_input: TurnInput,
                              config: Mapping[str, Any] | None, options: TurnOptions | None,
                              on_delta: DeltaSink | None, *, traced: bool = False) -> RunResponse:
        async with self.locks.hold(session_id):
            agent = self._agents.get(agent_id)
            if agent is None:
                return failure(f"Agent {agent_id!r} not registered.", session_id, "agent-not-registered")
            if self._selections_checked.get(agent_id) is not agent:  # once per agent definition
                try:
                    check_model_selections(agent)
                except Exception as exc:
                    return failure_for(exc, session_id)
                self._selections_checked[agent_id] = agent
            if session_id is None:
                return await self._attempts(agent, None, turn_input, config, options, on_delta, None, traced)
            # other workers on this session (runtimes, processes, hosts) wait for this request
            leasing = self.store.lease_and_load(session_id, timeout=self.lease_timeout)
            try:
                lease = await leasing.__aenter__()  # its take reads the document
            except StoreError as exc:
                return failure(exc.message, session_id, exc.code)
            try:
                return await self._attempts(agent, session_id, turn_input, config, options, on_delta, lease, traced)
            finally:
                await leasing.__aexit__(None, None, None)

    async def _attempts(self, agent: Agent, session_id: str | None, turn_input: TurnInput,
                        config: Mapping[str, Any] | None, options: TurnOptions | None,
                        on_delta: DeltaSink | None, lease: Leased | None, traced: bool) -> RunResponse:
        """The request's attempts: a conflict replays the input (``conflict_policy``, at most
        ``max_replays`` times); every failure becomes the request's envelope."""
        replays = 0
        target = session_id
        mine: OpenTurn | None = None  # the open-turn mark this request's last checkpoint wrote
        while True:
            attempt = Attempt(mine=mine, on_delta=on_delta, lease=lease, traced=traced)
            try:
                return await self._attempt(agent, target, turn_input, config, options, attempt)
            except SessionConflict as exc:
                target = attempt.created or target  # a replay continues the session a checkpoint created
                if attempt.checkpointed is not None:
                    mine = attempt.checkpointed
                if self.conflict_policy == "reject" or replays >= self.max_replays:
                    return failure(exc.message, exc.session_id or target, exc.code)
                replays += 1
            except (SessionFlowMismatch, SessionFlowInvariant, SessionVersionUnsupported, FlowDriftError) as exc:
                return failure(exc.message, session_id, exc.code)  # nothing saved: fix the deploy, not the session
            except (ModelError, ModelConfigurationError) as exc:
                # a provider failure, or a step needing a model the deploy lacks, fails the turn:
                # nothing of it saved, the session stays usable
                return failure(describe_error(exc), attempt.created or session_id, exc.code)
            except Exception as exc:
                return await self._abort(attempt, exc, session_id)

    def run_sync(self, agent_id: str, message: str | Message | None = None, **kwargs: Any) -> RunResponse:
        """``run`` for scripts: runs it in a fresh event loop (``asyncio.run``)."""
        return asyncio.run(self.run(agent_id, message, **kwargs))

    async def _load(self, agent: Agent, session_id: str | None, attempt: Attempt) -> Session | None:
        """The running session to continue (migrated and restored), or None for a new one."""
        if session_id is None:
            return None
        lease = attempt.lease
        if lease is not None and lease.session_id == session_id and not lease.released:
            doc = await lease.load()  # the first time: the document read with the take
        else:
            doc = await self.store.load(session_id)
        if doc is not None:
            check_supported(doc)  # a newer tether's document is neither run nor replaced
        if doc is None or doc.status not in LIVE_STATUSES:
            return None
        if doc.agent != agent.id:
            raise SessionFlowMismatch(doc.id, bound=doc.agent, requested=agent.id)
        if doc.window_from is not None:
            attempt.tail = await read_tail(self.store, doc, self.windows)
            doc = with_tail(doc, attempt.tail)
        else:  # an inline (version 1) document: its records are not read, so nothing is cached for it
            attempt.tail = None
        attempt.stored = doc
        migrated = upgrade_v1(self.migrations.migrate(doc))
        if self.on_restore is not None:  # the user's hook: its document is saved at once (seed 004)
            restored = await call_restore_hook(self.on_restore, migrated)
        else:  # the default version check; nothing to save unless the migrations changed the document
            restored = migrated if is_session_current(migrated) else None
            if restored is not None and restored.schema_version == doc.schema_version:
                return doc
        if restored is None:
            attempt.stored = None
            return None
        await self._write(restored, None, attempt, expected=doc.revision)
        return attempt.stored

    async def _attempt(self, agent: Agent, session_id: str | None, turn_input: TurnInput,
                       config: Mapping[str, Any] | None, options: TurnOptions | None,
                       attempt: Attempt) -> RunResponse:
        doc = await self._load(agent, session_id, attempt)
        if doc is None:
            if isinstance(turn_input, Wake | Approval | Signal | Resume):
                return RunResponse(success=True, completed=True, message="", session="", code="no-session")
            metadata: dict[str, Any] = {"config": dict(config)} if config else {}
            doc = attempt.fresh = Session(id=self.ids.new_id(), agent=agent.id, created_at=self.clock.now(),
                                          metadata=metadata)
        elif doc.turn is not None and _is_mine(doc.turn, attempt.mine):
            turn_input = Resume()  # a replay: our own checkpointed turn goes on (its reply is ours)
        elif doc.turn is not None and not is_retry(doc.turn, turn_input) and not isinstance(turn_input, Resume):
            # another input's turn is unfinished: complete it first (its reply is recorded, not ours)
            await self._turn(agent, doc, Resume(), options, attempt, last=False)
            doc = attempt.stored
            assert doc is not None
            attempt.messages = attempt.events = attempt.journal = 0
            attempt.checkpointed = None
        return await self._turn(agent, doc, turn_input, options, attempt, on_delta=attempt.on_delta)

    async def _turn(self, agent: Agent, doc: Session, turn_input: TurnInput, options: TurnOptions | None,
                    attempt: Attempt, *, on_delta: DeltaSink | None = None, last: bool = True) -> RunResponse:
        """Run one turn on ``doc`` with the runtime's checkpoint and write what it produced (the
        request's ``last`` turn releases the lease with its final save)."""

        async def checkpoint(session: Session, transcript: Sequence[TranscriptMessage],
                             events: Sequence[dict[str, Any]], journal: Sequence[JournalEntry]) -> int:
            records = TurnRecords.model_construct(
                messages=list(transcript[attempt.messages:]), events=list(events[attempt.events:]),
                journal=list(journal[attempt.journal:]), wakes=[], cancel_wakes=[])
            await self._write(session, records, attempt, checkpoint=not records.journal)
            attempt.messages, attempt.events, attempt.journal = len(transcript), len(events), len(journal)
            assert attempt.stored is not None
            attempt.checkpointed = session.turn
            return attempt.stored.revision

        recorded = [entry for run_id in journal_runs(agent, doc) for entry in await self.store.journal(doc.id,
                                                                                                        run_id=run_id)]
        hooks: dict[str, Any] = {"checkpoint": checkpoint, "journal": recorded, "spawn": self._spawner(agent),
                                 "phase": tracing.phase_span if attempt.traced else None}  # under the turn span
        turn_options = TurnOptions(**hooks, sleep=asyncio.sleep, gather=gather) if options is None \
            else dataclasses.replace(options, **hooks)
        result = await agent.turn(doc, turn_input, options=turn_options, on_delta=on_delta)
        after = result.session or doc
        records = turn_records(result, messages_from=attempt.messages, events_from=attempt.events,
                               journal_from=attempt.journal)
        if attempt.fresh is not None or result.changed:  # after a checkpoint, at least its mark to clear
            await self._write(after, records, attempt, release=last)
        stored = attempt.stored or doc
        result.session = stored
        return success(result, stored.id, session_running=stored.status in LIVE_STATUSES)

    def _spawner(self, agent: Agent) -> Callable[[str, Any, Mapping[str, Any] | None], Awaitable[RunResponse]]:
        """What ``ctx.batch`` starts sessions with: ``flow`` in a new session of ``agent``."""

        async def spawn(flow: str, item: Any, config: Mapping[str, Any] | None) -> RunResponse:
            return await self.run(agent.id, start=Start(flow, input=item), config=config)

        return spawn

    async def _write(self, session: Session, records: TurnRecords | None, attempt: Attempt,
                     expected: int | None = None, *, release: bool = False, checkpoint: bool = False) -> None:
        """Create the new session (first write) or save it under compare-and-swap from
        ``expected`` (default: the revision the session carries; the engine keeps it current
        across checkpoints), with ``release`` the request's lease released by the same call, or
        as a ``checkpoint`` (``Store.save_checkpoint``: a move's save, carrying no journal entry).
        The window cache learns the stored window and seen ids (with the turn's final save: a turn
        that stops after a checkpoint leaves the cache behind the store, and the next load reads)."""
        if attempt.fresh is not None:
            stored = await self.store.create(detach_window(session), records)
            attempt.fresh = None
            attempt.created = session.id
        else:
            revision = session.revision if expected is None else expected
            lease = attempt.lease
            if release and lease is not None and lease.session_id == session.id and not lease.released:
                stored = await self.store.save_and_release(detach_window(session), revision, records, lease)
            elif checkpoint:
                stored = await self.store.save_checkpoint(detach_window(session), revision, records)
            else:
                stored = await self.store.save(detach_window(session), revision, records)
        written = records.messages if records else ()
        if checkpoint:  # the window cache learns the turn's records with its final save
            attempt.unwindowed += written
        elif attempt.tail is not None:
            attempt.tail = attempt.tail.after(stored, [*attempt.unwindowed, *written])
            attempt.unwindowed = []
            self.windows.put(stored, attempt.tail)
        attempt.stored = attached(stored, session.messages, session.inputs)
        self.commits.notify(stored.id)

    async def _abort(self, attempt: Attempt, exc: Exception, session_id: str | None) -> RunResponse:
        """Mark the session aborted with the error logged, persist it, and build the envelope."""
        message, code = describe_error(exc), error_code(exc)
        target = attempt.stored or attempt.fresh
        if target is None:
            return failure(message, session_id, code)
        aborted = detach_window(target.model_copy(deep=True))
        aborted.status = "aborted"
        aborted.error.append(LogEntry(at=self.clock.now(), level="error", message=message, code=code))
        try:
            if attempt.stored is not None:
                await self.store.save(aborted, attempt.stored.revision)
            else:
                await self.store.create(aborted)
        except Exception as save_exc:
            message += f"; failed to persist aborted session: {describe_error(save_exc)}"
        return failure(message, aborted.id, code)

    # ------------------------------------------------------------------ sessions (see tether.runtime.lifecycle)

    async def complete(self, session_id: str) -> Session | None:
        """Mark a running session ``completed`` (kept in the store; never resumed again).

        Returns the stored document (unchanged when it was missing or had already ended).
        Conflicts are retried ``max_replays`` times, then ``SessionConflict`` is raised; a
        document from a newer tether raises ``SessionVersionUnsupported`` and stays as it is.
        """
        return await lifecycle.complete(self, session_id)

    end_session = complete

    async def delete(self, session_id: str) -> None:
        """Delete a session with all its records and wakes (a missing session is a no-op).

        Runs under the session's lock and lease, so it never lands in the middle of a turn: a
        request already running finishes first, and a later one starts a new session. Raises
        ``SessionLeaseTimeout`` when another worker keeps the session longer than
        ``lease_timeout``.
        """
        await lifecycle.delete(self, session_id)

    async def release(self, session_id: str) -> Session | None:
        """Give a ``handed_off`` session back to the bot (status ``running``); returns the stored
        document (unchanged when it was missing or not handed off). Conflicts are retried
        ``max_replays`` times, then ``SessionConflict`` is raised."""
        return await lifecycle.release(self, session_id)

    async def approve(self, session_id: str, approval_id: str, decision: bool | str, *, feedback: str | None = None,
                      decided_by: str | None = None, options: TurnOptions | None = None) -> RunResponse:
        """Decide the approval ``approval_id`` a run of the session parked on (``ctx.approve``):
        ``decision`` is ``approved``/``rejected`` (or a bool). The parked action runs again and
        sees the decision; the response carries what the turn said. Never raises."""
        return await lifecycle.approve(self, self._request, session_id, approval_id, decision, feedback=feedback,
                                       decided_by=decided_by, options=options)

    async def signal(self, session_id: str, name: str, payload: Any = None, *, signal_id: str | None = None,
                     options: TurnOptions | None = None) -> RunResponse:
        """Deliver signal ``name`` with ``payload`` to the runs of the session waiting for it
        (``ctx.signal``); a ``signal_id`` seen before is ignored (``duplicate-input``). Never raises."""
        return await lifecycle.signal(self, self._request, session_id, name, payload, signal_id=signal_id,
                                      options=options)

    async def pending_approvals(self, session_id: str) -> list[JournalEntry]:
        """The started journal entries of the approvals the session's runs wait on (their
        ``key`` is the approval id, their ``request`` the frozen summary and payload)."""
        return await lifecycle.pending_approvals(self, session_id)

    # ------------------------------------------------------------------ wakes

    async def fire_due_wakes(self, limit: int = 100, *, lease: float = 30.0) -> int:
        """Claim up to ``limit`` due wakes, run each as a wake input, complete them; returns how
        many ran. See :func:`tether.runtime.scheduler.fire_due_wakes`."""
        return await scheduler.fire_due_wakes(self, limit=limit, lease=lease)

    async def rebuild_schedule(self, *, limit: int = 10_000) -> int:
        """Re-derive the wakes of running sessions from their waiting runs; returns how many were
        written. See :func:`tether.runtime.scheduler.rebuild_schedule`."""
        return await scheduler.rebuild_schedule(self, limit=limit)

    def start_scheduler(self, interval: float = 1.0, *, limit: int = 100) -> None:
        """Fire due wakes every ``interval`` seconds in a background task (needs a running loop)."""
        if self._scheduler is None:
            self._scheduler = scheduler.WakeScheduler(self, interval=interval, limit=limit)
        self._scheduler.start()

    async def stop_scheduler(self) -> None:
        """Stop the background scheduler (cancels its loop and waits for it)."""
        if self._scheduler is not None:
            await self._scheduler.stop()

    async def close(self) -> None:
        """Stop the scheduler and close the store."""
        await self.stop_scheduler()
        await self.store.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _is_mine(found: OpenTurn, mine: OpenTurn | None) -> bool:
    """True when ``found`` is the mark this request's own earlier attempt committed."""
    return mine is not None and found.input == mine.input and found.at == mine.at
