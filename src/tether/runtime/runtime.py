"""``Runtime``: the host that runs turns with persistence (seed 004).

A runtime holds what its requests share: the agent registry (hot registration of flows:
``register_flows``, ``retire_flows``), the store, the clock and ids, the conflict policy, the
restore hook and migrations, the per-session locks, the window cache and the commit signal. One
``run`` call refuses bad input before any session I/O, then follows the request path of
:mod:`tether.runtime.request` (its order of operations, its store writes, conflicts, unfinished
turns and session statuses are described there). ``run`` never raises: every failure becomes a
failed ``RunResponse``. The calls that change a session outside a turn (``complete``, ``release``,
``delete``) and deliver decisions and signals to parked runs (``approve``, ``signal``) live in
:mod:`tether.runtime.lifecycle`; the wake calls in :mod:`tether.runtime.scheduler`.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tether.agent import Agent
from tether.clock import SystemClock, UuidIds
from tether.durable.entries import JournalEntry
from tether.engine.core.input_checks import MAX_KEY_CHARS, MAX_MESSAGE_CHARS, check_input, check_text
from tether.engine.core.inputs import Event, Message, Start, TurnOptions
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import InvalidInputError
from tether.flow.agent_def import DEFAULT_HISTORY_WINDOW
from tether.flow.flow import Flow
from tether.models.types import Model
from tether.runtime import lifecycle, scheduler
from tether.runtime.attempt import DeltaSink, one_input
from tether.runtime.commits import CommitSignal
from tether.runtime.costs import Budgets, CostLedger, PriceTable
from tether.runtime.envelope import RunResponse, failure
from tether.runtime.locks import SessionLocks
from tether.runtime.records import turn_records
from tether.runtime.registry import agent_registry
from tether.runtime.request import Admit, ConflictPolicy, RequestPath, StoredFlowSource
from tether.runtime.restore import MigrationRegistry, RestoreHook
from tether.runtime.window import WindowCache
from tether.stores import SQLiteStore, Store
from tether.stores.leases import DEFAULT_LEASE_TIMEOUT

__all__ = ["ConflictPolicy", "Runtime", "turn_records"]

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
        prices: PriceTable | None = None,
        budgets: Budgets | None = None,
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
        self.costs = CostLedger(prices or PriceTable(), budgets or Budgets())
        """The price table, the budgets checked before every model call, and the tenants' spend of
        the day in this process (see :mod:`tether.runtime.costs`)."""
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._scheduler: scheduler.WakeScheduler | None = None
        self.stored_flows: StoredFlowSource | None = None
        """The agents' stored flows, once ``load_stored_flows`` or ``publish_flows`` ran on this
        runtime: a loaded run pinned to a version its agent does not serve (another worker
        published it) reloads them before the turn. None: this runtime serves no stored flows."""
        self._requests = RequestPath(self, self._agents)  # run, approve and signal go through it

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
        admit: Admit | None = None,
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
        envelope's ``message`` is what counts. ``admit(doc)`` checks the stored session (None when
        there is none) under the request's lease before anything else: a failed ``RunResponse``
        it returns is the answer, with nothing run or written (the HTTP routes check the caller's
        tenant this way instead of loading the session themselves).
        """
        try:
            turn_input = check_input(one_input(message, wake, event, start))  # refused before any session I/O
        except InvalidInputError as exc:
            return failure(exc.message, session_id, exc.code)
        except ValueError as exc:
            return failure(str(exc), session_id, "invalid-request")
        return await self._requests.request(agent_id, session_id, turn_input, config, options, on_delta, admit=admit)

    def run_sync(self, agent_id: str, message: str | Message | None = None, **kwargs: Any) -> RunResponse:
        """``run`` for scripts: runs it in a fresh event loop (``asyncio.run``)."""
        return asyncio.run(self.run(agent_id, message, **kwargs))

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

    async def release(self, session_id: str, *, by: str | None = None) -> Session | None:
        """Give a ``handed_off`` session back to the bot (status ``running``), with a ``released``
        event naming ``by`` (the person); returns the stored document (unchanged when it was
        missing or not handed off). Conflicts are retried ``max_replays`` times, then
        ``SessionConflict`` is raised."""
        return await lifecycle.release(self, session_id, by=by, now=self.clock.now())

    async def operator_message(self, session_id: str, text: str, *, by: str) -> tuple[Session | None,
                                                                                      TranscriptMessage | None]:
        """Record ``text`` said to the customer by ``by``, a person who has the ``handed_off``
        session: a transcript message (role ``assistant``, kind ``agent``, ``by``) and an
        ``operator-message`` event, which wakes the session's event streams. Returns the stored
        document and the message; the message is None (nothing written) when the session is
        missing or not handed off. ``text`` and ``by`` are checked as a message's text is
        (``InvalidInputError``)."""
        check_text(text, "text", MAX_MESSAGE_CHARS)
        check_text(by, "by", MAX_KEY_CHARS)

        def window(agent_id: str) -> int:
            agent = self.agents.get(agent_id)
            return agent.history_window if agent is not None else DEFAULT_HISTORY_WINDOW

        return await lifecycle.operator_message(self, session_id, text, by=by, now=self.clock.now(),
                                                history_window=window)

    async def approve(self, session_id: str, approval_id: str, decision: bool | str, *, feedback: str | None = None,
                      decided_by: str | None = None, options: TurnOptions | None = None) -> RunResponse:
        """Decide the approval ``approval_id`` a run of the session parked on (``ctx.approve``):
        ``decision`` is ``approved``/``rejected`` (or a bool). The parked action runs again and
        sees the decision; the response carries what the turn said. Never raises."""
        return await lifecycle.approve(self, self._requests.request, session_id, approval_id, decision,
                                       feedback=feedback, decided_by=decided_by, options=options)

    async def signal(self, session_id: str, name: str, payload: Any = None, *, signal_id: str | None = None,
                     options: TurnOptions | None = None) -> RunResponse:
        """Deliver signal ``name`` with ``payload`` to the runs of the session waiting for it
        (``ctx.signal``); a ``signal_id`` seen before is ignored (``duplicate-input``). Never raises."""
        return await lifecycle.signal(self, self._requests.request, session_id, name, payload,
                                      signal_id=signal_id, options=options)

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

