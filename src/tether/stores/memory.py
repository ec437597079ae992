"""``MemoryStore``: everything in one process's memory, for tests and throwaway runs.

Documents and records are kept as JSON strings, so mutating an object a store returned (or
passed to it) never changes what is stored. No operation awaits between its first read and its last
write, so operations never interleave on the event loop: no lock is needed.
"""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, SessionFlowMismatch, StoreError
from tether.stores.base import (
    ENDED_STATUSES,
    ClockLike,
    Store,
    duplicate_message,
    message_rows,
    messages_from_rows,
    utc,
)
from tether.stores.conversation_keys import memory_put_key
from tether.stores.flow_versions import FlowVersion, StoredFlow, memory_put
from tether.stores.record_forms import (
    EventRow,
    event_row,
    events_from_row,
    journal_body,
    journal_from_row,
    page_of_rows,
)
from tether.stores.records import (
    JournalEntry,
    QueuedRun,
    SessionSummary,
    StoredEvent,
    TurnRecords,
    Wake,
    session_tenant,
)
from tether.stores.run_queue import memory_queue

__all__ = ["MemoryStore"]


_Rows = tuple[builtins.list[tuple[int, str]], EventRow | None]


class _Summary(NamedTuple):
    """A session's indexed columns (a ``SessionSummary`` is built from it only when listed)."""

    id: str
    agent: str
    status: str
    revision: int
    created_at: datetime
    saved_at: datetime


_NO_RECORDS: dict[int, str] = {}


@dataclass
class _Records:
    messages: dict[int, str] = field(default_factory=dict)
    order: builtins.list[int] = field(default_factory=list)  # message seqs, sorted: a window read is O(window)
    events: builtins.list[tuple[int, datetime, str]] = field(default_factory=list)  # (last seq, at, body) per write
    journal: dict[str, tuple[str, str, bool]] = field(default_factory=dict)  # key -> (run_id, body, final)


class MemoryStore(Store):
    """A store that lives in memory: one process, nothing durable. Same contract as the others."""

    document_parts = True

    def __init__(self, *, clock: ClockLike | None = None) -> None:
        super().__init__(clock=clock)
        self._docs: dict[str, str] = {}
        self._summaries: dict[str, _Summary] = {}
        self._tenants: dict[str, str] = {}
        self._records: dict[str, _Records] = {}
        self._parts: dict[str, dict[tuple[str, str], str]] = {}  # session -> (path, name) -> body
        self._wakes: dict[tuple[str, str], str] = {}
        self._queue: dict[str, QueuedRun] = {}
        self._closed = False
        self._flows: builtins.list[StoredFlow] = []
        self._conversations: dict[str, str] = {}

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise StoreError("store is closed", operation=operation)

    # ------------------------------------------------------------------ the document

    async def load(self, session_id: str) -> Session | None:
        self._check_open("load")
        text = self._docs.get(session_id)
        if text is None:
            return None
        parts = self._parts.get(session_id)
        rows = [(path, name, body) for (path, name), body in parts.items()] if parts else None
        return self._decode(session_id, text, self._summaries[session_id].revision, rows)

    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        stored, text = self._prepare(session, revision=0, operation="create")
        self._check_open("create")
        if stored.id in self._docs:
            raise SessionConflict(
                stored.id, expected=None, actual=self._summaries[stored.id].revision, operation="create"
            )
        rows = self._check_records(stored.id, records)
        self._put(stored, text)
        self._write_records(stored.id, records, rows)
        return stored

    async def save(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        return self._save(session, expected_revision, records)

    async def save_checkpoint(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        """``save`` with the document checked without a parse (see ``Store._prepare``)."""
        return self._save(session, expected_revision, records, checked=False)

    def _save(self, session: Session, expected_revision: int, records: TurnRecords | None, *,
              checked: bool = True) -> Session:
        stored, text = self._prepare(session, revision=expected_revision + 1, operation="save", checked=checked)
        self._check_open("save")
        current = self._summaries.get(stored.id)
        if current is None or current.revision != expected_revision:
            raise SessionConflict(
                stored.id,
                expected=expected_revision,
                actual=current.revision if current else None,
                operation="save",
            )
        if current.agent != stored.agent:
            raise SessionFlowMismatch(stored.id, bound=current.agent, requested=stored.agent)
        rows = self._check_records(stored.id, records)
        self._put(stored, text)
        self._write_records(stored.id, records, rows)
        return stored

    async def delete(self, session_id: str, expected_revision: int | None = None) -> None:
        self._check_open("delete")
        current = self._summaries.get(session_id)
        if expected_revision is not None and (current is None or current.revision != expected_revision):
            raise SessionConflict(
                session_id,
                expected=expected_revision,
                actual=current.revision if current else None,
                operation="delete",
            )
        self._drop(session_id)

    async def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 100,
        agent_prefix: str | None = None, tenant: str | None = None, after: tuple[datetime, str] | None = None,
    ) -> builtins.list[SessionSummary]:
        self._check_open("list")
        rows = [
            s
            for s in self._summaries.values()
            if (agent is None or s.agent == agent) and (status is None or s.status == status)
            and (agent_prefix is None or s.agent.startswith(agent_prefix))
            and (tenant is None or self._tenants[s.id] == tenant)
            and (after is None or s.saved_at < after[0] or (s.saved_at == after[0] and s.id > after[1]))
        ]
        rows.sort(key=lambda s: s.id)
        rows.sort(key=lambda s: s.saved_at, reverse=True)
        return [SessionSummary.model_construct(**row._asdict()) for row in rows[:limit]]

    async def prune(self, *, older_than: datetime) -> int:
        cutoff = utc(older_than)
        self._check_open("prune")
        doomed = [
            s.id for s in self._summaries.values() if s.status in ENDED_STATUSES and s.saved_at < cutoff
        ]
        for session_id in doomed:
            self._drop(session_id)
        return len(doomed)

    # ------------------------------------------------------------------ records

    async def transcript(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[TranscriptMessage]:
        self._check_open("transcript")
        bucket = self._records.get(session_id, _Records())
        start = bisect.bisect_right(bucket.order, after_seq)
        seqs = bucket.order[start:] if limit is None else bucket.order[start:start + limit]
        return messages_from_rows(bucket.messages[seq] for seq in seqs)

    async def events(self, session_id: str, *, after: int = 0, limit: int | None = None,
                     newest: int | None = None) -> builtins.list[StoredEvent]:
        self._check_open("events")
        rows = self._records.get(session_id, _Records()).events
        rows = rows[bisect.bisect_right(rows, after, key=lambda row: row[0]):]  # rows are in seq order
        # as the SQL stores read: as many rows as events asked for (a row holds one or more)
        rows = rows[:limit] if newest is None else rows[len(rows) - newest:] if newest else []
        return page_of_rows(rows, lambda row: events_from_row(*row, after=after), limit, newest)

    async def journal(self, session_id: str, *, run_id: str | None = None) -> builtins.list[JournalEntry]:
        self._check_open("journal")
        entries = self._records.get(session_id, _Records()).journal.items()
        return [
            journal_from_row(session_id, key, rid, body)
            for key, (rid, body, _) in entries
            if run_id is None or rid == run_id
        ]

    # ------------------------------------------------------------------ wakes

    async def due_wakes(
        self, now: datetime, *, limit: int = 100, lease: float = 30.0, worker: str = ""
    ) -> builtins.list[Wake]:
        now = utc(now)
        until = now + timedelta(seconds=lease)
        self._check_open("due_wakes")
        wakes = [Wake.model_validate_json(text) for text in self._wakes.values()]
        due = [w for w in wakes if w.at <= now and (w.leased_until is None or w.leased_until <= now)]
        due.sort(key=lambda w: (w.at, w.session_id, w.key))
        claimed = []
        for wake in due[:limit]:
            leased = wake.model_copy(update={"leased_until": until, "worker": worker})
            self._wakes[(wake.session_id, wake.key)] = leased.model_dump_json()
            claimed.append(leased)
        return claimed

    async def complete_wake(self, wake: Wake) -> None:
        self._check_open("complete_wake")
        text = self._wakes.get((wake.session_id, wake.key))
        stored = None if text is None else Wake.model_validate_json(text)
        if stored is not None and stored.at == utc(wake.at) and stored.worker == wake.worker:
            del self._wakes[(wake.session_id, wake.key)]

    async def pending_wakes(self, session_id: str | None = None) -> builtins.list[Wake]:
        self._check_open("pending_wakes")
        wakes = [
            Wake.model_validate_json(text)
            for (sid, _), text in self._wakes.items()
            if session_id is None or sid == session_id
        ]
        wakes.sort(key=lambda w: (w.at, w.session_id, w.key))
        return wakes

    # ------------------------------------------------------------------ the run queue

    async def take_runs(
        self, now: datetime, *, limit: int = 1, lease: float = 30.0, worker: str = "", agent: bool = True
    ) -> builtins.list[QueuedRun]:
        self._check_open("take_runs")
        now = utc(now)
        free = sorted((q for q in self._queue.values() if q.at <= now and (agent or not q.agent)
                       and (q.leased_until is None or q.leased_until <= now)), key=lambda q: (q.at, q.session_id))
        taken = []
        for queued in free[:limit]:
            held = queued.model_copy(update={"leased_until": now + timedelta(seconds=lease), "worker": worker,
                                             "takes": queued.takes + 1})
            self._queue[queued.session_id] = held
            taken.append(held)
        return taken

    async def renew_run(self, run: QueuedRun, now: datetime, *, lease: float = 30.0) -> bool:
        self._check_open("renew_run")
        held = self._queue.get(run.session_id)
        if held is None or held.worker != run.worker:
            return False
        self._queue[run.session_id] = held.model_copy(update={"leased_until": utc(now) + timedelta(seconds=lease)})
        return True

    async def release_run(self, run: QueuedRun, work: str | None = None) -> None:
        self._check_open("release_run")
        held = self._queue.get(run.session_id)
        if held is None or held.worker != run.worker:
            return
        if work is None:
            del self._queue[run.session_id]
        else:
            self._queue[run.session_id] = held.model_copy(update={"leased_until": None, "worker": "",
                                                                  "agent": work == "agent"})

    async def queued_runs(self, session_id: str | None = None) -> builtins.list[QueuedRun]:
        self._check_open("queued_runs")
        return sorted((q for q in self._queue.values() if session_id is None or q.session_id == session_id),
                      key=lambda q: (q.at, q.session_id))

    async def put_flows(self, agent: str, bundle: Iterable[FlowVersion]) -> None:
        self._check_open("put_flows")
        self._flows = memory_put(self._flows, agent, builtins.list(bundle), self.now())

    async def put_conversation(self, key: str, session_id: str) -> None:
        self._check_open("put_conversation")
        memory_put_key(self._conversations, key, session_id)

    async def find_conversation(self, key: str) -> str | None:
        self._check_open("find_conversation")
        return self._conversations.get(key)

    async def active_flows(self, agent: str) -> builtins.list[StoredFlow]:
        self._check_open("active_flows")
        return [r for r in self._flows if r.agent == agent and r.status == "active"]

    async def superseded_flows(self, agent: str) -> builtins.list[StoredFlow]:
        self._check_open("superseded_flows")
        return [r for r in self._flows if r.agent == agent and r.status == "superseded"]

    async def close(self) -> None:
        self._closed = True

    # ------------------------------------------------------------------ internals

    def _put(self, stored: Session, text: str) -> None:
        assert stored.saved_at is not None
        self._docs[stored.id] = text
        self._summaries[stored.id] = _Summary(  # from a document just validated
            stored.id, stored.agent, stored.status, stored.revision, utc(stored.created_at), utc(stored.saved_at))
        self._tenants[stored.id] = session_tenant(stored.metadata)

    def _drop(self, session_id: str) -> None:
        self._docs.pop(session_id, None)
        self._summaries.pop(session_id, None)
        self._tenants.pop(session_id, None)
        self._records.pop(session_id, None)
        self._parts.pop(session_id, None)
        for key in [k for k in self._wakes if k[0] == session_id]:
            del self._wakes[key]
        self._queue.pop(session_id, None)
        for conversation in [k for k, held in self._conversations.items() if held == session_id]:
            del self._conversations[conversation]

    def _check_records(self, session_id: str, records: TurnRecords | None) -> _Rows:
        """Encode the records and fail before anything is written, so a failed write leaves no trace."""
        if records is None:
            return [], None
        rows = message_rows(session_id, records)
        bucket = self._records.get(session_id)
        existing = bucket.messages if bucket is not None else _NO_RECORDS
        for seq, _ in rows:
            if seq in existing:
                raise duplicate_message(session_id, seq)
        return rows, event_row(records)

    def _write_records(self, session_id: str, records: TurnRecords | None, rows: _Rows) -> None:
        if records is None:
            return
        if records.parts:
            stored = self._parts.setdefault(session_id, {})
            for path, name, body in records.part_rows():
                stored[(path, name)] = body
        bucket = self._records.get(session_id)
        if bucket is None:  # not setdefault: its default would be built on every write
            bucket = self._records[session_id] = _Records()
        messages, events = rows
        for seq, text in messages:
            bucket.messages[seq] = text
            if bucket.order and seq < bucket.order[-1]:
                bisect.insort(bucket.order, seq)
            else:
                bucket.order.append(seq)
        if events is not None:
            last = bucket.events[-1][0] if bucket.events else 0
            bucket.events.append((last + events.size, events.at, events.body))
        for entry in records.journal:
            kept = bucket.journal.get(entry.key)
            if kept is not None and kept[2]:
                continue  # a recorded result never changes
            bucket.journal[entry.key] = (entry.run_id, journal_body(session_id, entry), entry.final)
        for key in records.cancel_wakes:
            self._wakes.pop((session_id, key), None)
        for request in records.wakes:
            if request.replaces is not None and request.replaces != request.key:
                self._wakes.pop((session_id, request.replaces), None)
            wake = Wake(session_id=session_id, key=request.key, at=utc(request.at))
            self._wakes[(session_id, request.key)] = wake.model_dump_json()
        if records.queue is not None:
            memory_queue(self._queue, session_id, records.queue)
