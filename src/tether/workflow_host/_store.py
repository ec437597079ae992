"""Workflow run snapshots in the session stores, as documents.

A run is saved as one session document (``id`` = run id, ``agent`` = ``workflow:<workflow id>``,
``metadata.kind = "workflow"``) whose ``data.workflow_run`` holds the snapshot. That reuses every
store as it is (memory, SQLite, PostgreSQL): compare-and-swap on ``revision``, events written in
the same transaction, listing and pruning. The session ``status`` follows the run
(:func:`document_status`): ``completed`` once the run completes, ``aborted`` once it ended any
other way (cancelled, blocked, or failed with no node left to retry), ``running`` while it is
open, so ``Store.prune`` and every check of a live status treat an ended run as ended. A document
saved before that rule stored a blocked or failed run as ``running``: it loads as it is, and
its run's own status says what it is (``tether sessions list`` shows both). The document's
``usage`` is the run's (``model_calls`` and its token counts), so ``tether sessions show`` says
what the run cost. ``metadata.launch`` says how the run was started (``tether workflow run`` writes
the workflow ``file`` and the ``workspace``), so ``tether workflow runs`` can print the command that
resumes it.

Saves grow with the change, not with the workflow: on a store that keeps document parts
(:attr:`~tether.stores.Store.document_parts`: memory, SQLite, PostgreSQL) each node state is a part
(``data.workflow_run.nodes.<node id>``), and a save writes the run's roll-up (the document, without
its nodes) and the parts of the nodes the mutation changed, in the one compare-and-swap
transaction. A load reads the document and its parts in one statement, so a run still loads as one
snapshot, and a save that loses the swap, or a crash, writes none of it. The first save after a
load writes every node (a run stored whole, before parts, moves to parts then).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from tether.durable.entries import JournalEntry
from tether.engine.core.session import Session, SessionStatus, SessionUsage
from tether.errors import SessionFlowInvariant
from tether.stores.base import Store
from tether.stores.records import QueueRequest, TurnRecords
from tether.workflow import WorkflowSnapshot, ops

__all__ = ["WORKFLOW_AGENT_PREFIX", "SnapshotStore", "document_status", "stored_run"]

WORKFLOW_AGENT_PREFIX = "workflow:"
_KEY = "workflow_run"
_NODES = f"{_KEY}.nodes"  # the part path of the node states


def document_status(snapshot: WorkflowSnapshot) -> SessionStatus:
    """The status of the document that stores ``snapshot``: ``completed`` for a complete run,
    ``aborted`` for a run that ended otherwise (:func:`tether.workflow.ops.run_ended`: it stopped
    short of its end, so it did not complete), ``running`` while the run is open (a failed run
    whose failed node can still be retried is open)."""
    if snapshot.status == "complete":
        return "completed"
    return "aborted" if ops.run_ended(snapshot) else "running"


def stored_run(document: Session) -> WorkflowSnapshot | None:
    """The workflow run ``document`` stores, or ``None`` when it is not a workflow run."""
    raw = document.data.get(_KEY)
    if not document.agent.startswith(WORKFLOW_AGENT_PREFIX) or not isinstance(raw, dict):
        return None
    return WorkflowSnapshot.model_validate(raw)


class SnapshotStore:
    """Loads and saves workflow snapshots in a :class:`~tether.stores.Store` with CAS.

    ``launch`` (for example ``{"file": ..., "workspace": ...}``) is written to the document's
    ``metadata.launch`` on every save; without it, a loaded run keeps the one it was stored with.
    ``queue``: whether saves keep the run's place in the run queue (``False`` for the worker
    driving the run: it holds the run's row).
    ``tenant``: the tenant a new run belongs to (``metadata.config.tenant``, as a session's: the
    server lists and acts on a run for its tenant only); a loaded run keeps the one it was stored
    with, and a run stored without one is the default tenant's.
    """

    def __init__(self, store: Store, *, launch: Mapping[str, str] | None = None, queue: bool = True,
                 tenant: str | None = None) -> None:
        self.store = store
        self.launch = dict(launch) if launch else None
        self.queue = queue
        self.tenant = tenant
        self._queued: dict[str, str | None] = {}  # run -> the queue state this store last wrote
        self._created: dict[str, datetime] = {}
        self._launched: dict[str, Any] = {}
        self._config: dict[str, Any] = {}  # run id -> the metadata.config it was stored with
        self._whole: set[str] = set()  # runs whose every node this store wrote as a part

    def _document(self, snapshot: WorkflowSnapshot, revision: int) -> Session:
        metadata: dict[str, Any] = {"kind": "workflow", "workflow": snapshot.workflow_id,
                                    "version": snapshot.workflow_version}
        launch = self.launch if self.launch is not None else self._launched.get(snapshot.run_id)
        if launch:
            metadata["launch"] = launch
        config = self._config.get(snapshot.run_id)
        if config is None and self.tenant is not None:
            config = {"tenant": self.tenant}
        if config:
            metadata["config"] = config
        return Session(
            id=snapshot.run_id, revision=revision, agent=f"{WORKFLOW_AGENT_PREFIX}{snapshot.workflow_id}",
            status=document_status(snapshot),
            created_at=self._created.setdefault(snapshot.run_id, self.store.now()),
            data={_KEY: self._roll_up(snapshot)},
            usage=_usage(snapshot), metadata=metadata,
        )

    def _roll_up(self, snapshot: WorkflowSnapshot) -> dict[str, Any]:
        """The snapshot as the document holds it: whole, or without its nodes (kept as parts)."""
        if not self.store.document_parts:
            return snapshot.model_dump(mode="json", by_alias=True)
        return {**snapshot.model_dump(mode="json", by_alias=True, exclude={"nodes"}), "nodes": {}}

    def _queue(self, run_id: str, work: str | bool | None) -> QueueRequest | None:
        """The queue change a save of ``run_id`` with ``work`` writes (``False``: none asked)."""
        if work is False or not self.queue or (run_id in self._queued and self._queued[run_id] == work):
            return None
        return QueueRequest(work=work, at=self.store.now())

    def _records(self, snapshot: WorkflowSnapshot, changed: Collection[str] | None, events: list[dict[str, Any]],
                 journal: list[dict[str, Any]], revision: int, queue: QueueRequest | None = None) -> TurnRecords:
        at = self.store.now()
        entries = [JournalEntry(**entry, key=f"flow-tool:{revision}:{index}", at=at)
                   for index, entry in enumerate(journal)]
        parts: dict[str, dict[str, str]] = {}
        if self.store.document_parts:
            written = snapshot.nodes if changed is None or snapshot.run_id not in self._whole else changed
            parts[_NODES] = {node_id: snapshot.nodes[node_id].model_dump_json(by_alias=True) for node_id in written}
        return TurnRecords(events=[{**event, "at": at} for event in events], journal=entries, parts=parts,
                           queue=queue)

    def _wrote(self, run_id: str, queue: QueueRequest | None) -> None:
        self._whole.add(run_id)
        if queue is not None:
            self._queued[run_id] = queue.work

    async def create(self, snapshot: WorkflowSnapshot, events: list[dict[str, Any]],
                     journal: list[dict[str, Any]] | None = None, *, work: str | bool | None = False) -> int:
        """Insert a new run; returns its revision (0). An existing id raises ``SessionConflict``.
        ``work``: what the run has for a worker (``runtime``, ``agent`` or ``None``: queued
        accordingly, see the module notes; ``False``: the queue is left alone)."""
        queue = self._queue(snapshot.run_id, work)
        records = self._records(snapshot, None, events, journal or [], 0, queue)
        stored = await self.store.create(self._document(snapshot, 0), records)
        self._wrote(snapshot.run_id, queue)
        return stored.revision

    async def save(self, snapshot: WorkflowSnapshot, expected_revision: int, events: list[dict[str, Any]],
                   journal: list[dict[str, Any]] | None = None, *, changed: Collection[str] | None = None,
                   work: str | bool | None = False) -> int:
        """Replace the run if it is still at ``expected_revision``; returns the new revision.

        ``changed``: the nodes that changed since the revision expected (``None``: any); only
        those are written (every node on the first save after a load). ``journal`` holds
        effect-journal entries (the agent's tool calls) written in the same transaction, keyed by
        the revision written, so every key is unique in the run. ``work``: as for :meth:`create`.
        """
        document = self._document(snapshot, expected_revision)
        queue = self._queue(snapshot.run_id, work)
        records = self._records(snapshot, changed, events, journal or [], expected_revision + 1, queue)
        stored = await self.store.save(document, expected_revision, records)
        self._wrote(snapshot.run_id, queue)
        return stored.revision

    def launch_of(self, run_id: str) -> Mapping[str, Any] | None:
        """How run ``run_id`` was started (``metadata.launch``), once it was loaded or saved here."""
        return self.launch if self.launch is not None else self._launched.get(run_id)

    async def load(self, run_id: str) -> tuple[WorkflowSnapshot, int] | None:
        """The stored snapshot and its revision, or ``None``."""
        document = await self.store.load(run_id)
        if document is None:
            return None
        snapshot = stored_run(document)
        if snapshot is None:
            raise SessionFlowInvariant(f"session {run_id!r} is not a workflow run", operation="load",
                                       session_id=run_id)
        self._created[run_id] = document.created_at
        self._whole.discard(run_id)
        self._queued.pop(run_id, None)
        if "launch" in document.metadata:
            self._launched[run_id] = document.metadata["launch"]
        if isinstance(document.metadata.get("config"), dict):
            self._config[run_id] = document.metadata["config"]
        return snapshot, document.revision


def _usage(snapshot: WorkflowSnapshot) -> SessionUsage:
    """The run's calls and tokens as a document's usage (a token count of another name, which a
    hydrated snapshot may carry, has no place there and is left out)."""
    tokens = {name: value for name, value in snapshot.usage.items()
              if name in SessionUsage.model_fields and name.endswith("_tokens")}
    return SessionUsage(llm_calls=snapshot.model_calls, **tokens)
