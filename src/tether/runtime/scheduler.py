"""Firing due wakes, re-deriving the schedule, and the background scheduler task.

Every wake a turn schedules is stored by that turn's save. A scheduler claims due wakes from the
store (``Store.due_wakes``: leased to one worker; with PostgreSQL claimed with
``FOR UPDATE SKIP LOCKED``, so several workers never receive one wake twice), runs each as a
``wake`` input through ``Runtime.run`` (the agent comes from the stored session) and completes it.
The engine ignores a stale wake (its run no longer waits on that key).

The functions here take the runtime as a :class:`WakeHost` (what they use of it), so this module
sits below :mod:`tether.runtime.runtime`, which calls it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from tether.background import BackgroundTask
from tether.errors import (
    SessionConflict,
    SessionFlowInvariant,
    SessionLeaseTimeout,
    SessionVersionUnsupported,
    StoreError,
)
from tether.runtime.restore import check_supported
from tether.stores.base import utc
from tether.stores.records import TurnRecords, Wake, WakeRequest

if TYPE_CHECKING:
    from tether.agent import Agent
    from tether.engine.core.ports import Clock
    from tether.runtime.envelope import RunResponse
    from tether.runtime.locks import SessionLocks
    from tether.stores.base import Store

__all__ = ["WakeHost", "WakeScheduler", "fire_due_wakes", "rebuild_schedule"]

log = logging.getLogger("tether.runtime")

_RETRY_LATER = (SessionConflict.code, StoreError.code, SessionLeaseTimeout.code, SessionVersionUnsupported.code)
"""Failures that leave a wake scheduled: the session was busy or unreadable here, not done with."""


class WakeHost(Protocol):
    """What firing wakes and rebuilding the schedule use of a runtime
    (:class:`tether.runtime.runtime.Runtime` is one)."""

    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def worker_id(self) -> str: ...
    @property
    def agents(self) -> Mapping[str, Agent]: ...
    @property
    def locks(self) -> SessionLocks: ...
    @property
    def lease_timeout(self) -> float: ...

    async def run(self, agent_id: str, *, session_id: str | None = None, wake: str | None = None) -> RunResponse:
        """Run one turn of ``agent_id`` for ``session_id`` (here: a ``wake`` input) and persist it."""
        ...

    async def fire_due_wakes(self, limit: int = 100, *, lease: float = 30.0) -> int:
        """Claim, run and complete due wakes; returns how many ran."""
        ...


async def fire_due_wakes(runtime: WakeHost, *, limit: int = 100, lease: float = 30.0) -> int:
    """Claim up to ``limit`` wakes due at ``runtime.clock.now()`` (leased for ``lease`` seconds
    to ``runtime.worker_id``), run them concurrently (one session's wakes still one at a time) and
    complete each one that ran. Returns how many ran.

    A wake whose session is gone, ended or malformed (not JSON, nested too deep to read, not a
    session) is completed without running. A wake is left to its lease (so it is claimed again
    later) when its session's agent is not registered here, the store failed, the turn lost its
    compare-and-swap more than ``max_replays`` times, or an error nothing expected stopped it
    (logged); the other wakes fire and are counted all the same.
    """
    wakes = await runtime.store.due_wakes(runtime.clock.now(), limit=limit, lease=lease, worker=runtime.worker_id)
    fired = await asyncio.gather(*(_fire_one(runtime, wake) for wake in wakes))
    return sum(fired)


async def _fire_one(runtime: WakeHost, wake: Wake) -> bool:
    """``_fire``; an error nothing expected (a bug) is logged and the wake left to its lease, so
    one session never stops the others' wakes nor loses their count."""
    try:
        return await _fire(runtime, wake)
    except Exception:
        log.exception("wake %s of session %s failed, left for a retry", wake.key, wake.session_id)
        return False


async def _fire(runtime: WakeHost, wake: Wake) -> bool:
    try:
        doc = await runtime.store.load(wake.session_id)
    except SessionFlowInvariant:
        doc = None
    except StoreError as exc:
        log.warning("wake %s of session %s: load failed: %s", wake.key, wake.session_id, exc)
        return False
    if doc is None or doc.status != "running":
        await runtime.store.complete_wake(wake)
        return False
    if doc.agent not in runtime.agents:
        log.warning("wake %s of session %s: agent %r is not registered here", wake.key, doc.id, doc.agent)
        return False
    response = await runtime.run(doc.agent, session_id=wake.session_id, wake=wake.key)
    if not response.success and response.code in _RETRY_LATER:
        log.warning("wake %s of session %s failed, left for a retry: %s", wake.key, doc.id, response.message)
        return False
    await runtime.store.complete_wake(wake)
    return True


async def rebuild_schedule(runtime: WakeHost, *, limit: int = 10_000) -> int:
    """Re-derive wakes from stored sessions: for every running session (at most ``limit``) of a
    registered agent, the wakes the engine says it waits on (``agent.pending_wakes(session)``:
    each parked run's deadline, and the silence wake of every silence flow that could still start).

    Missing wakes are written with a compare-and-swap save of the unchanged document (its
    revision advances); a session that loses that race is skipped (its writer stored its own
    wakes). Sessions of agents not registered here are skipped. Returns how many wakes were written.
    """
    agents = runtime.agents
    written = 0
    for summary in await runtime.store.list(status="running", limit=limit):
        agent = agents.get(summary.agent)
        if agent is None:
            continue
        try:  # under the session's lease: never between the checkpoints of another worker's turn
            async with runtime.locks.hold(summary.id), runtime.store.lease(summary.id, timeout=runtime.lease_timeout):
                written += await _rebuild_one(runtime, agent, summary.id)
        except (SessionLeaseTimeout, SessionVersionUnsupported) as exc:
            log.warning("wakes of session %s not rebuilt: %s", summary.id, exc.message)
    return written


async def _rebuild_one(runtime: WakeHost, agent: Agent, session_id: str) -> int:
    doc = await runtime.store.load(session_id)
    if doc is None or doc.status != "running":
        return 0
    check_supported(doc)
    have = {(w.key, utc(w.at)) for w in await runtime.store.pending_wakes(doc.id)}
    missing = [WakeRequest(key=w.key, at=w.at, replaces=w.replaces) for w in agent.pending_wakes(doc)
               if (w.key, utc(w.at)) not in have]
    if not missing:
        return 0
    try:
        await runtime.store.save(doc, doc.revision, TurnRecords(wakes=missing))
    except SessionConflict:
        return 0
    return len(missing)


class WakeScheduler(BackgroundTask):
    """A background asyncio task calling ``fire_due_wakes`` every ``interval`` seconds (at once
    again while full batches keep coming). Errors are logged, never raised."""

    name = "tether-wake-scheduler"

    def __init__(self, runtime: WakeHost, *, interval: float = 1.0, limit: int = 100) -> None:
        super().__init__()
        self.runtime = runtime
        self.interval = interval
        self.limit = limit

    async def _loop(self) -> None:
        while True:
            fired = 0
            try:
                fired = await self.runtime.fire_due_wakes(self.limit)
            except StoreError as exc:  # the store is down: one line, not a traceback every interval
                log.warning("firing due wakes failed: %s", exc.message)
            except Exception:
                log.exception("firing due wakes failed")
            if fired < self.limit:
                await asyncio.sleep(self.interval)
