"""Stored workflow runs driven by any process on the store: the run queue's workers.

:func:`queue_run` is the one way a run is started for the workers (``tether workflow run
--detach``, the HTTP routes): it stores a new run of a workflow file, with how it was launched
(``metadata.launch``: the ``file`` and the ``workspace``), queued in the same transaction. Every
later save of the run keeps its place in the queue (:class:`~tether.workflow_host.SnapshotStore`):
an approval, an answer or a retry that gives it work again queues it again, whoever made it.

:func:`drive_stored_runs` is a worker (``tether worker``, and a background task of every
``tether serve`` process, :class:`RunQueueTask`): it takes the oldest runnable run (up to
``concurrency`` runs at once, each driven by a task of its own: a run mostly waits on its nodes'
commands, so one process can drive several)
(``Store.take_runs``: leased to this worker, on PostgreSQL with ``FOR UPDATE SKIP LOCKED``),
renews the take while it drives (every third of ``lease``), takes the run's session lease, loads
it with its definition, drains it (and, with a model, gives the agent its turns) until it waits on
a person, or on agent work it has no model for, or ends; then releases the take (the run leaves
the queue, or stays queued for agent work) and the session lease.

A worker killed mid-node stops renewing: once the take's lease lapses another worker takes the
run, and loading it resolves what was in flight (:meth:`WorkflowRun.load`): a function or check
node's command is in doubt, and runs again only when its node declares retries; otherwise the
node fails ``in doubt`` for a person to retry (:func:`tether.workflow.ops.resolve_in_doubt`).
A run whose session lease another process holds (``tether workflow run`` driving it in the
foreground) is left to its take's lease, and looked at again when it lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from pathlib import Path
from typing import Any

from tether.background import BackgroundTask
from tether.errors import SessionLeaseTimeout, TetherError
from tether.models.tiers import ModelTiers
from tether.models.types import Model
from tether.stores.base import Store
from tether.stores.records import QueuedRun
from tether.workflow import WorkflowSnapshot
from tether.workflow_host._files import load_workflow_file, workflow_directory_resolver
from tether.workflow_host._queue import Work, pending_work
from tether.workflow_host._run import WorkflowRun
from tether.workflow_host._store import SnapshotStore, stored_run

__all__ = ["DEFAULT_RUN_LEASE", "RunQueueTask", "drive_stored_runs", "queue_run", "worker_name"]

log = logging.getLogger("tether.workflow")

DEFAULT_RUN_LEASE = 30.0
"""Seconds a worker's take of a run lasts without a renewal: how long a run whose worker died
waits before another worker resumes it."""

TAKE_TIMEOUT = 0.05
"""Seconds a worker waits for a taken run's session lease before it leaves the run to its take's
lease (another process drives it)."""

WorkerModel = Model | ModelTiers | str | None


def worker_name() -> str:
    """A name for this worker, unique on the store: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def queue_run(store: Store, file: str | Path, *, input: dict[str, Any] | None = None,
                    workspace: str | Path = ".", autonomous: bool = False,
                    run_id: str | None = None, tenant: str | None = None) -> WorkflowSnapshot:
    """Store a new run of the workflow in ``file`` and queue it for the workers; returns its
    first snapshot. The store keeps the file and the workspace (resolved), so any worker loads the
    definition again; the whole sub-flow tree is resolved (from the file's directory) and checked
    here, so a broken definition raises :class:`~tether.errors.WorkflowDefinitionError` before
    anything is stored. An existing ``run_id`` raises ``SessionConflict``. ``tenant``: the tenant
    the run belongs to (the server lists and acts on it for that tenant only; none: the default
    tenant's). ``tether workflow run --detach`` and the server's ``POST /v1/workflows/{id}/runs``
    both store their runs here."""
    run = WorkflowRun.from_file(file, store=store, workspace=workspace, input=input, autonomous=autonomous,
                                run_id=run_id, tenant=tenant, resolve=workflow_directory_resolver(Path(file).parent))
    await run.save()
    return run.snapshot


async def drive_stored_runs(store: Store, *, model: WorkerModel = None, once: bool = False, poll: float = 1.0,
                            lease: float = DEFAULT_RUN_LEASE, worker: str | None = None,
                            stop: asyncio.Event | None = None, concurrency: int = 1) -> int:
    """Drive queued runs, up to ``concurrency`` at once, until ``stop`` is set (or, with ``once``,
    until the queue has nothing runnable for this worker); while it has room and the queue has
    nothing, it looks again every ``poll`` seconds. Once ``stop`` is set it takes no more runs and
    returns when the runs it drives wait or end. Without ``model``, runs whose only work is agent
    work are left for a worker with one. Returns how many runs it moved."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, not {concurrency!r}")
    worker = worker or worker_name()
    moved = 0
    driving: set[asyncio.Task[int]] = set()
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        while stop is None or not stop.is_set():
            room = concurrency - len(driving)
            taken = await store.take_runs(store.now(), limit=room, lease=lease, worker=worker,
                                          agent=model is not None) if room else []
            for run in taken:
                driving.add(asyncio.create_task(_drive_taken(store, run, model, lease),
                                                name=f"tether-run-{run.session_id}"))
            if taken and len(taken) == room:
                continue  # full, or the queue may hold more: look again before waiting
            if not driving and once:
                break
            # wait for a run to finish (room again), a new run to be queued (the next look) or stop
            waiting: set[asyncio.Future[Any]] = {*driving, *([stopping] if stopping is not None else [])}
            if waiting:
                done, _ = await asyncio.wait(waiting, timeout=None if room == len(taken) and driving else poll,
                                             return_when=asyncio.FIRST_COMPLETED)
            else:
                await asyncio.sleep(poll)
                done = set()
            for task in done & driving:
                driving.discard(task)
                moved += task.result()
        moved += sum(await asyncio.gather(*driving))  # stopped: the runs being driven wait or end first
    except BaseException as exc:  # the runs it drives are never left behind unawaited
        if isinstance(exc, asyncio.CancelledError):  # a server's stop after its grace: they stop too
            for task in driving:
                task.cancel()
        await asyncio.gather(*driving, return_exceptions=True)  # a store error: they finish first
        raise
    finally:
        if stopping is not None:
            stopping.cancel()
    return moved


async def _renew(store: Store, taken: QueuedRun, lease: float) -> None:
    while True:
        await asyncio.sleep(lease / 3)
        try:
            if not await store.renew_run(taken, store.now(), lease=lease):
                log.warning("workflow run %r: this worker's take lapsed while it drove the run", taken.session_id)
                return
        except TetherError as exc:  # the store is down: the next renewal may reach it
            log.warning("workflow run %r: renewing the take failed: %s", taken.session_id, exc.message)


async def _drive_taken(store: Store, taken: QueuedRun, model: WorkerModel, lease: float) -> int:
    """Drive one taken run; 1 when it moved. An error (a model or store failure, a bug) is logged
    and the take left to lapse, so the run is tried again a lease later."""
    renewing = asyncio.create_task(_renew(store, taken, lease), name=f"tether-run-take-{taken.session_id}")
    try:
        async with store.lease(taken.session_id, timeout=TAKE_TIMEOUT):
            moved, work = await _drive(store, taken.session_id, model)
            await store.release_run(taken, work)  # under the session lease: no save can come between
            return moved
    except SessionLeaseTimeout:
        return 0  # driven by another process: looked at again when the take lapses
    except Exception:
        log.exception("workflow run %r failed in this worker; it is tried again when the take lapses",
                      taken.session_id)
        return 0
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing


async def _drive(store: Store, run_id: str, model: WorkerModel) -> tuple[int, Work | None]:
    """Load, drive and leave run ``run_id``: ``(moved, work left for the queue)``."""
    document = await store.load(run_id)
    snapshot = stored_run(document) if document is not None else None
    if document is None or snapshot is None:
        return 0, None
    launch = document.metadata.get("launch")
    file = launch.get("file") if isinstance(launch, dict) else None
    if not isinstance(launch, dict) or not isinstance(file, str):
        log.warning("workflow run %r was queued but has no launch file: a worker cannot load it", run_id)
        return 0, None
    path = Path(file)
    try:
        graph = load_workflow_file(path)
        run = await WorkflowRun.load(SnapshotStore(store, queue=False), run_id, graph,
                                     workspace=Path(str(launch.get("workspace") or ".")),
                                     resolve=workflow_directory_resolver(path.parent), model=model,
                                     leave_model_work=model is None)
    except (OSError, TetherError) as exc:
        log.warning("workflow run %r cannot be resumed from %s (left out of the queue until it changes): %s",
                    run_id, file, exc)
        return 0, None
    before = run.revision
    await (run.advance() if model is not None else run.drain())
    work = pending_work(run.graph, run.snapshot)
    if work == "agent" and model is not None:
        log.warning("workflow run %r has agent work the model did not move; left out of the queue until it "
                    "changes (tether workflow runs shows it)", run_id)
        work = None
    return int(run.revision != before), work


class RunQueueTask(BackgroundTask):
    """A worker as a background task of a server process (``tether serve``): :meth:`start` it in
    the running loop; it drives queued runs until :meth:`stop`, which lets the run it drives
    finish (up to ``grace`` seconds) before it cancels, so a shutdown rarely leaves a node in doubt."""

    name = "tether-workflow-runs"

    def __init__(self, store: Store, *, model: WorkerModel = None, poll: float = 1.0,
                 lease: float = DEFAULT_RUN_LEASE, grace: float = 10.0) -> None:
        super().__init__()
        self.store, self.model, self.poll, self.lease, self.grace = store, model, poll, lease, grace
        self._stop = asyncio.Event()

    def start(self) -> None:
        """Start driving queued runs in the running loop (no-op when it runs already); a ``stop``
        from now on ends it, even one made before its first step."""
        if not self.running:
            self._stop.clear()
        super().start()

    async def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                await drive_stored_runs(self.store, model=self.model, poll=self.poll, lease=self.lease,
                                        stop=self._stop)
            except TetherError as exc:  # the store is down: one line, not a traceback every poll
                log.warning("driving workflow runs failed: %s", exc.message)
                await asyncio.sleep(self.poll)
            except Exception:
                log.exception("driving workflow runs failed")
                await asyncio.sleep(self.poll)

    async def stop(self) -> None:
        """Stop after the run being driven (cancelled after ``grace`` seconds)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout=self.grace)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
