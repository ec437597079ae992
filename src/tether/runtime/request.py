"""The request path: how a ``Runtime`` runs one turn with persistence (the request lifecycle of seed 004).

One request (``Runtime.run``, or ``approve`` and ``signal`` through :mod:`tether.runtime.lifecycle`),
in order: the per-session FIFO lock; the registry lookup; the agent's model selections validated
(before any session I/O); the session's cross-worker lease (``Store.lease``, held to the end of the
request, so another runtime, process or host on the same store waits instead of loading this turn's
mid-turn checkpoints); load or create (a document from a newer tether fails with
``SESSION_VERSION_UNSUPPORTED``, untouched); the agent-match and invariant checks; migrations and
the restore hook (existing sessions only); when a run of the session is pinned to a flow version
the agent does not serve and the runtime uses stored flows, one reload of the agent's stored flows
(another worker published that version: see :mod:`tether.runtime.stored_flows`); the turn, with a
checkpoint save at every move to another node; the final compare-and-swap save with the rest of the
turn's records in the same transaction; the response envelope. A request never raises: every
failure becomes a failed ``RunResponse``.

A handled failure is not a session failure: an input the engine refuses (``invalid-input``: a lone
surrogate, a NUL, a message over the size limit) fails before any session I/O, and a provider
failure (``model-<kind>``), a step that needs a model the deploy does not configure
(``model-configuration``) or a store that fails a write (``SESSION_STORE_ERROR``) fails the turn
with nothing more of it saved (a checkpoint it committed stays, with its open-turn mark); the
session keeps its status and takes the next message, and the same input again continues the turn.
A failed checkpoint stops the turn with a signal (``CheckpointFailed``) that author code catching
``Exception`` cannot swallow.

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
stays committed, with the turn's open-turn mark (see :mod:`tether.engine.turn.continuation`): a replay
that finds its own mark continues its turn from the checkpoint (the input is not ingested again,
journaled effects are not run again) and the caller gets the whole reply. A replay of a new
session's request runs on the session its first checkpoint created.

Unfinished turns: a document loaded with another input's open-turn mark (its worker crashed) is
completed first (``Resume``: its reply is recorded in the transcript), and then the new input
gets a turn of its own; the same input again (same message id, wake key, approval or signal id)
continues that turn and gets its reply. Effects inside actions are journaled (started record
before, result after, each a write; see :mod:`tether.engine.core.effects`); the journal entries of
the live runs are loaded before a turn that may re-dispatch an action.

A tether session stays ``running`` after a flow ends (the conversation goes on); an escalation
hands it to a human (``handed_off``: messages are recorded, nobody answers, until ``release``); only
``complete``/``end_session`` marks it ``completed``. No failure ends a session: author code that
fails in a node degrades its run inside the turn (the engine's business), and an error nothing
expects (a bug in tether, a restore hook that raises) fails the request like a store error, with
nothing more of the turn saved, logged with its traceback on ``tether.runtime``. The runtime never
writes ``aborted``; a document an older tether stored ``aborted``, like a completed one, is never
resumed: the next request with its id gets a new session with a new id. The calls that change a
session outside a turn (``complete``, ``release``, ``delete``) and deliver decisions and signals
to parked runs (``approve``, ``signal``) live in :mod:`tether.runtime.lifecycle`; the wake calls
in :mod:`tether.runtime.scheduler`.

:class:`RequestPath` takes the runtime as a :class:`RequestHost` (what the request path uses of it;
its settings are read at each request, as a caller may change them) and the runtime's agent
registry, so this module sits below :mod:`tether.runtime.runtime`, which calls it. The state of
one request's try lives in :class:`tether.runtime.attempt.Attempt`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Literal, Protocol

from tether import tracing
from tether.agent import Agent, gather
from tether.durable.entries import JournalEntry
from tether.durable.turns import OpenTurn
from tether.engine.core.input_checks import CheckedInput, check_input
from tether.engine.core.inputs import Approval, Resume, Signal, Start, TurnOptions, Wake
from tether.engine.core.journal_runs import journal_runs
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.session import Run, Session, TranscriptMessage
from tether.engine.turn.continuation import is_retry
from tether.errors import (
    FlowDriftError,
    ModelConfigurationError,
    ModelError,
    SessionConflict,
    SessionFlowInvariant,
    SessionFlowMismatch,
    SessionVersionUnsupported,
    StoreError,
)
from tether.metrics import record_turn
from tether.runtime.attempt import Attempt, DeltaSink
from tether.runtime.commits import CommitSignal
from tether.runtime.costs import CostLedger
from tether.runtime.envelope import RunResponse, describe_error, error_code, failure, failure_for, success
from tether.runtime.lifecycle import LIVE_STATUSES
from tether.runtime.locks import SessionLocks
from tether.runtime.records import turn_records
from tether.runtime.restore import (
    MigrationRegistry,
    RestoreHook,
    call_restore_hook,
    check_supported,
    default_restore,
)
from tether.runtime.selections import check_model_selections
from tether.runtime.turn_log import input_label, log_turn
from tether.runtime.window import WindowCache, attached, detach_window, read_tail, upgrade_builtin, with_tail
from tether.stores import Store, TurnRecords
from tether.stores.leases import Leased
from tether.stores.records import session_tenant

__all__ = ["Admit", "ConflictPolicy", "RequestHost", "RequestPath", "StoredFlowSource"]

log = logging.getLogger("tether.runtime")

RESUME = check_input(Resume())
"""The input that completes a session's unfinished turn (nothing in it to check)."""

ConflictPolicy = Literal["replay", "reject"]
"""What a compare-and-swap conflict does: re-run the input on the fresh document, or fail."""

Admit = Callable[[Session | None], RunResponse | None]
"""A caller's check of the stored session a request loaded (None: there is none), made under the
request's lease before anything else: a failed ``RunResponse`` refuses the request (nothing is run
or written, and it is the request's answer), None lets it go on. The HTTP routes check the
caller's tenant with it, so a message costs one load, not two."""


class _Refused(Exception):
    """The request's ``admit`` check refused the loaded session."""

    def __init__(self, response: RunResponse) -> None:
        super().__init__(response.message)
        self.response = response


class StoredFlowSource(Protocol):
    """Where a runtime reloads an agent's stored flows from (``Runtime.stored_flows``; see
    :class:`tether.runtime.stored_flows.StoredFlows`)."""

    async def reload(self, agent_id: str, digests: Collection[str]) -> None:
        """Reload the agent's stored flows for runs pinned to ``digests`` it does not serve."""
        ...


class RequestHost(Protocol):
    """What the request path uses of a runtime (:class:`tether.runtime.runtime.Runtime` is one)."""

    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def ids(self) -> Ids: ...
    @property
    def locks(self) -> SessionLocks: ...
    @property
    def lease_timeout(self) -> float: ...
    @property
    def conflict_policy(self) -> ConflictPolicy: ...
    @property
    def max_replays(self) -> int: ...
    @property
    def on_restore(self) -> RestoreHook | None: ...
    @property
    def migrations(self) -> MigrationRegistry: ...
    @property
    def windows(self) -> WindowCache: ...
    @property
    def commits(self) -> CommitSignal: ...
    @property
    def stored_flows(self) -> StoredFlowSource | None: ...
    @property
    def costs(self) -> CostLedger: ...

    async def run(self, agent_id: str, *, config: Mapping[str, Any] | None = None,
                  start: Start | None = None) -> RunResponse:
        """Run one turn of ``agent_id`` (here: a ``start`` input in a new session, for ``ctx.batch``)."""
        ...


class RequestPath:
    """The request path of one runtime: :meth:`request` runs one input as a turn of a session of a
    registered agent and persists it (the order of operations is in the module notes).

    Args:
        runtime: the runtime the requests run on (its settings are read at each request).
        agents: the runtime's agent registry, read at each request (hot registration replaces its
            entries in place).
    """

    def __init__(self, runtime: RequestHost, agents: Mapping[str, Agent]) -> None:
        self.runtime = runtime
        self._agents = agents
        self._selections_checked: dict[str, Agent] = {}  # the definitions whose model selections passed

    async def request(self, agent_id: str, session_id: str | None, turn_input: CheckedInput,
                      config: Mapping[str, Any] | None, options: TurnOptions | None,
                      on_delta: DeltaSink | None = None, *, admit: Admit | None = None) -> RunResponse:
        """Run ``turn_input`` (checked by the caller, before any session I/O) as a turn of agent
        ``agent_id`` in session ``session_id`` (None: a new one) under the request's trace span and
        log line; never raises. ``admit`` checks the stored session first (see :data:`Admit`)."""
        started = time.perf_counter()
        with tracing.turn_span(agent_id, session_id, input_label(turn_input.input)) as span:
            response = await self._locked_request(agent_id, session_id, turn_input, config, options, on_delta,
                                                  traced=span is not None, admit=admit)
            tracing.end_turn(span, response)
        seconds = time.perf_counter() - started
        log_turn(agent_id, session_id, turn_input.input, response, seconds)
        record_turn(agent_id, seconds, response.success)
        return response

    async def _locked_request(self, agent_id: str, session_id: str | None, turn_input: CheckedInput,
                              config: Mapping[str, Any] | None, options: TurnOptions | None,
                              on_delta: DeltaSink | None, *, traced: bool = False,
                              admit: Admit | None = None) -> RunResponse:
        async with self.runtime.locks.hold(session_id):
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
            leasing = self.runtime.store.lease_and_load(session_id, timeout=self.runtime.lease_timeout)
            try:
                lease = await leasing.__aenter__()  # its take reads the document
            except StoreError as exc:
                return failure(exc.message, session_id, exc.code)
            try:
                return await self._attempts(agent, session_id, turn_input, config, options, on_delta, lease, traced,
                                            admit)
            finally:
                await leasing.__aexit__(None, None, None)

    async def _attempts(self, agent: Agent, session_id: str | None, turn_input: CheckedInput,
                        config: Mapping[str, Any] | None, options: TurnOptions | None,
                        on_delta: DeltaSink | None, lease: Leased | None, traced: bool,
                        admit: Admit | None = None) -> RunResponse:
        """The request's attempts: a conflict replays the input (``conflict_policy``, at most
        ``max_replays`` times); every failure becomes the request's envelope."""
        replays = 0
        target = session_id
        mine: OpenTurn | None = None  # the open-turn mark this request's last checkpoint wrote
        reloaded: Agent | None = None  # the agent as the request's stored flow reload left it
        while True:
            attempt = Attempt(mine=mine, on_delta=on_delta, lease=lease, traced=traced, agent=reloaded, admit=admit)
            try:
                return await self._attempt(reloaded or agent, target, turn_input, config, options, attempt)
            except _Refused as exc:
                return exc.response
            except SessionConflict as exc:
                reloaded = attempt.agent
                target = attempt.created or target  # a replay continues the session a checkpoint created
                if attempt.checkpointed is not None:
                    mine = attempt.checkpointed
                if self.runtime.conflict_policy == "reject" or replays >= self.runtime.max_replays:
                    return failure(exc.message, exc.session_id or target, exc.code)
                replays += 1
            except (SessionFlowMismatch, SessionFlowInvariant, SessionVersionUnsupported, FlowDriftError) as exc:
                return failure(exc.message, session_id, exc.code)  # nothing saved: fix the deploy, not the session
            except (ModelError, ModelConfigurationError, StoreError) as exc:
                # a provider failure, a step needing a model the deploy lacks, or a store that
                # failed a save fails the turn: nothing more of it saved (a checkpoint it committed
                # stays, with its open-turn mark), the session keeps its status, and the retry of
                # the same input continues the turn
                return failure(describe_error(exc), attempt.created or session_id, exc.code)
            except Exception as exc:  # a bug: tether's, or author code outside a node (the restore hook)
                log.error("turn of agent %r, session %r failed: %s", agent.id, attempt.created or session_id,
                          describe_error(exc), exc_info=exc)
                return failure(describe_error(exc), attempt.created or session_id, error_code(exc))

    async def _load(self, agent: Agent, session_id: str | None, attempt: Attempt) -> Session | None:
        """The running session to continue (migrated and restored), or None for a new one."""
        if session_id is None:
            return None
        lease = attempt.lease
        if lease is not None and lease.session_id == session_id and not lease.released:
            doc = await lease.load()  # the first time: the document read with the take
        else:
            doc = await self.runtime.store.load(session_id)
        if attempt.admit is not None:
            refused = attempt.admit(doc)
            if refused is not None:
                raise _Refused(refused)
        if doc is not None:
            check_supported(doc)  # a newer tether's document is neither run nor replaced
        if doc is None or doc.status not in LIVE_STATUSES:
            return None
        if doc.agent != agent.id:
            raise SessionFlowMismatch(doc.id, bound=doc.agent, requested=agent.id)
        if doc.window_from is not None:
            attempt.tail = await read_tail(self.runtime.store, doc, self.runtime.windows)
            doc = with_tail(doc, attempt.tail)
        else:  # an inline (version 1) document: its records are not read, so nothing is cached for it
            attempt.tail = None
        attempt.stored = doc
        migrated = upgrade_builtin(self.runtime.migrations.migrate(doc))
        if self.runtime.on_restore is not None:  # the user's hook: its document is saved at once (seed 004)
            restored = await call_restore_hook(self.runtime.on_restore, migrated)
        else:  # the default version check; nothing to save unless the migrations changed the document
            restored = default_restore(migrated)  # another version nothing upgraded: refused, kept
            if restored is not None and restored.schema_version == doc.schema_version:
                return doc
        if restored is None:
            attempt.stored = None
            return None
        await self._write(restored, None, attempt, expected=doc.revision)
        return attempt.stored

    async def _attempt(self, agent: Agent, session_id: str | None, turn_input: CheckedInput,
                       config: Mapping[str, Any] | None, options: TurnOptions | None,
                       attempt: Attempt) -> RunResponse:
        doc = await self._load(agent, session_id, attempt)
        if doc is not None and attempt.agent is None and self.runtime.stored_flows is not None:
            unknown = _unknown_pins(agent, doc.runs)  # a dict lookup per run: every turn passes here
            if unknown:
                try:
                    agent = attempt.agent = await self._reload_flows(agent, unknown)
                except StoreError as exc:  # nothing done yet: the next request reloads
                    return failure(exc.message, session_id, exc.code)
        if doc is None:
            if isinstance(turn_input.input, Wake | Approval | Signal | Resume):
                return RunResponse(success=True, completed=True, message="", session="", code="no-session")
            metadata: dict[str, Any] = {"config": dict(config)} if config else {}
            doc = attempt.fresh = Session(id=self.runtime.ids.new_id(), agent=agent.id,
                                          created_at=self.runtime.clock.now(), metadata=metadata)
        elif doc.turn is not None and _is_mine(doc.turn, attempt.mine):
            turn_input = RESUME  # a replay: our own checkpointed turn goes on (its reply is ours)
        elif doc.turn is not None and not is_retry(doc.turn, turn_input.input) \
                and not isinstance(turn_input.input, Resume):
            # another input's turn is unfinished: complete it first (its reply is recorded, not ours)
            await self._turn(agent, doc, RESUME, options, attempt, last=False)
            doc = attempt.stored
            assert doc is not None
            attempt.messages = attempt.events = attempt.journal = 0
            attempt.checkpointed = None
        return await self._turn(agent, doc, turn_input, options, attempt, on_delta=attempt.on_delta)

    async def _turn(self, agent: Agent, doc: Session, turn_input: CheckedInput, options: TurnOptions | None,
                    attempt: Attempt, *, on_delta: DeltaSink | None = None, last: bool = True) -> RunResponse:
        """Run one turn on ``doc`` with the runtime's checkpoint and write what it produced (the
        request's ``last`` turn releases the lease with its final save)."""

        async def checkpoint(session: Session, transcript: Sequence[TranscriptMessage],
                             events: Sequence[dict[str, Any]], journal: Sequence[JournalEntry]) -> int:
            records = TurnRecords.model_construct(
                messages=list(transcript[attempt.messages:]), events=list(events[attempt.events:]),
                journal=list(journal[attempt.journal:]), wakes=[], cancel_wakes=[], parts={})
            await self._write(session, records, attempt, checkpoint=True)
            attempt.messages, attempt.events, attempt.journal = len(transcript), len(events), len(journal)
            assert attempt.stored is not None
            attempt.checkpointed = session.turn
            return attempt.stored.revision

        recorded = [entry for run_id in journal_runs(agent, doc) for entry in await self.runtime.store.journal(doc.id,
                                                                                                        run_id=run_id)]
        now = self.runtime.clock.now()
        await self.runtime.costs.seed(self.runtime.store, session_tenant(doc.metadata), now)
        hooks: dict[str, Any] = {"checkpoint": checkpoint, "journal": recorded, "spawn": self._spawner(agent),
                                 "phase": tracing.phase_span if attempt.traced else None,  # under the turn span
                                 "budget": self.runtime.costs.budget_for(now),
                                 "gives_session": True}  # loaded for this turn: nothing needs it unchanged
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

    async def _reload_flows(self, agent: Agent, digests: set[str]) -> Agent:
        """The agent after reloading its stored flows for runs pinned to ``digests`` (another
        worker published them; another request may have reloaded them already), its model
        selections checked."""
        assert self.runtime.stored_flows is not None
        await self.runtime.stored_flows.reload(agent.id, digests)
        agent = self._agents[agent.id]
        if self._selections_checked.get(agent.id) is not agent:
            check_model_selections(agent)  # ModelConfigurationError: the request fails, nothing saved
            self._selections_checked[agent.id] = agent
        return agent

    def _spawner(self, agent: Agent) -> Callable[[str, Any, Mapping[str, Any] | None], Awaitable[RunResponse]]:
        """What ``ctx.batch`` starts sessions with: ``flow`` in a new session of ``agent``."""

        async def spawn(flow: str, item: Any, config: Mapping[str, Any] | None) -> RunResponse:
            return await self.runtime.run(agent.id, start=Start(flow, input=item), config=config)

        return spawn

    async def _write(self, session: Session, records: TurnRecords | None, attempt: Attempt,
                     expected: int | None = None, *, release: bool = False, checkpoint: bool = False) -> None:
        """Create the new session (first write) or save it under compare-and-swap from
        ``expected`` (default: the revision the session carries; the engine keeps it current
        across checkpoints), with ``release`` the request's lease released by the same call, or
        as a ``checkpoint`` (``Store.save_checkpoint``: a save of the turn before its last).
        The window cache learns the stored window and seen ids (with the turn's final save: a turn
        that stops after a checkpoint leaves the cache behind the store, and the next load reads)."""
        if attempt.fresh is not None:
            stored = await self.runtime.store.create(detach_window(session), records)
            attempt.fresh = None
            attempt.created = session.id
        else:
            revision = session.revision if expected is None else expected
            lease = attempt.lease
            if release and lease is not None and lease.session_id == session.id and not lease.released:
                stored = await self.runtime.store.save_and_release(detach_window(session), revision, records, lease)
            elif checkpoint:
                stored = await self.runtime.store.save_checkpoint(detach_window(session), revision, records)
            else:
                stored = await self.runtime.store.save(detach_window(session), revision, records)
        written = records.messages if records else ()
        if checkpoint:  # the window cache learns the turn's records with its final save
            attempt.unwindowed += written
        elif attempt.tail is not None:
            attempt.tail = attempt.tail.after(stored, [*attempt.unwindowed, *written])
            attempt.unwindowed = []
            self.runtime.windows.put(stored, attempt.tail)
        attempt.stored = attached(stored, session.messages, session.inputs)
        self.runtime.commits.notify(stored.id)


def _unknown_pins(agent: Agent, runs: Sequence[Run]) -> set[str] | None:
    """The digests ``runs`` are pinned to that ``agent`` serves neither as its flow's current
    version nor as a retired one (None when it knows them all)."""
    served, retired = agent.flows_by_id, agent.retired_flows
    unknown: set[str] | None = None
    for run in runs:
        flow = served.get(run.flow)
        if flow is None or (run.digest != flow.digest and run.digest and run.digest not in retired):
            if unknown is None:
                unknown = set()
            unknown.add(run.digest)
    return unknown


def _is_mine(found: OpenTurn, mine: OpenTurn | None) -> bool:
    """True when ``found`` is the mark this request's own earlier attempt committed."""
    return mine is not None and found.input == mine.input and found.at == mine.at
