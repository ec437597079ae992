"""Stored workflow runs driven by any process on the store (``tether worker``).

A run that has runtime work (its status is ``running``: a function, check, router, gate, sub-flow
or subprompt it can take now) and that no process drives is work for any worker:
:func:`drive_stored_runs` lists such runs (one query on the agent prefix and the stored status),
takes each one's session lease, waiting at most :data:`TAKE_TIMEOUT` (a run another worker holds is
skipped, as a row ``SKIP LOCKED`` is), loads it with the definition it was launched with (``metadata.launch``: the
workflow ``file`` and the ``workspace``, written by ``tether workflow run``, ``--detach`` included),
drains it until it waits (on a human, the agent) or ends, saves and releases it.

A worker that dies mid-run releases its lease (at once on PostgreSQL, and on SQLite for a dead
process of the same host; else when the lease expires), and the next worker to take the run
resumes it as after a crash (:meth:`WorkflowRun.load`): the work that was running returns to
admission under a new generation and runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from pathlib import Path

from tether.errors import SessionLeaseTimeout, TetherError
from tether.stores.base import Store
from tether.workflow_host._files import load_workflow_file, workflow_directory_resolver
from tether.workflow_host._run import WorkflowRun
from tether.workflow_host._store import WORKFLOW_AGENT_PREFIX, stored_run

__all__ = ["drive_stored_run", "drive_stored_runs"]

log = logging.getLogger("tether.workflow")

TAKE_TIMEOUT = 0.05
"""Seconds a worker waits for a run's lease (and, on PostgreSQL, a connection to hold it) before
it skips the run: another worker drives it."""


async def drive_stored_run(store: Store, run_id: str) -> bool:
    """Drive stored run ``run_id`` until it waits or ends, if it has runtime work and its lease is
    free now. Returns whether it moved (a save was made). A run that cannot be loaded (no launch
    file, a changed definition, a broken file) is logged and left as it is."""
    try:
        async with store.lease(run_id, timeout=TAKE_TIMEOUT):
            document = await store.load(run_id)
            snapshot = stored_run(document) if document is not None else None
            if document is None or snapshot is None or snapshot.status != "running":
                return False
            launch = document.metadata.get("launch")
            file = launch.get("file") if isinstance(launch, dict) else None
            if not isinstance(file, str):
                log.warning("workflow run %r has runtime work but no launch file: a worker cannot load it", run_id)
                return False
            path = Path(file)
            workspace = Path(str(launch.get("workspace") or ".")) if isinstance(launch, dict) else Path(".")
            try:
                graph = load_workflow_file(path)
                run = await WorkflowRun.load(store, run_id, graph, workspace=workspace,
                                             resolve=workflow_directory_resolver(path.parent))
            except (OSError, TetherError) as exc:
                log.warning("workflow run %r cannot be resumed from %s: %s", run_id, file, exc)
                return False
            before = run.revision
            await run.drain()
            return run.revision != before
    except SessionLeaseTimeout:
        return False  # another worker drives it


async def drive_stored_runs(store: Store, *, once: bool = False, poll: float = 1.0, batch: int = 100,
                            stop: asyncio.Event | None = None) -> int:
    """Drive the store's runs that have runtime work, one at a time, until ``stop`` is set (or,
    with ``once``, until a pass moves none). Between passes that move nothing it sleeps ``poll``
    seconds. Returns how many runs it moved."""
    moved = 0
    while stop is None or not stop.is_set():
        passed = await _one_pass(store, batch, stop)
        moved += passed
        if passed == 0:
            if once:
                break
            if stop is None:
                await asyncio.sleep(poll)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll)
    return moved


async def _one_pass(store: Store, batch: int, stop: asyncio.Event | None) -> int:
    """Drive the runs stored ``running``; when the newest ``batch`` of them moved
    none (parked runs are stored ``running`` too), look further back, until the store has no more."""
    asked = batch
    while True:
        rows = await store.list(agent_prefix=WORKFLOW_AGENT_PREFIX, status="running", limit=asked)
        passed = 0
        # oldest first, but each worker from its own place in the list, so two workers rarely
        # reach for the same run
        order = list(reversed(rows))
        start = random.randrange(len(order)) if order else 0
        for row in order[start:] + order[:start]:
            if stop is not None and stop.is_set():
                return passed
            passed += await drive_stored_run(store, row.id)
        if passed or len(rows) < asked:
            return passed
        asked *= 4
