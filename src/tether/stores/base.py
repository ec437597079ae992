"""The ``Store`` contract and the helpers every backend shares.

A store keeps one JSON document per session, saved with compare-and-swap on ``revision``, plus
append-only records (transcript messages, events, the effect journal) and the wake schedule.
A store applies no policy: it loads completed, aborted and old-version documents as they are.
"""

from __future__ import annotations

import builtins
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any, ClassVar, get_args

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from tether.engine.core.ports import Clock
from tether.engine.core.session import SESSION_SCHEMA_VERSION, RunStatus, Session, SessionStatus, TranscriptMessage
from tether.errors import SessionConflict, SessionFlowInvariant, SessionVersionUnsupported, StoreError
from tether.stores.flow_versions import FlowVersion, StoredFlow
from tether.stores.leases import DEFAULT_LEASE_TIMEOUT, Leased, LocalLeases
from tether.stores.records import JournalEntry, QueuedRun, SessionSummary, StoredEvent, TurnRecords, Wake

__all__ = [
    "ENDED_STATUSES",
    "prefix_bounds",
    "ClockLike",
    "Store",
    "backend_errors",
    "duplicate_message",
    "flushes",
    "message_rows",
    "messages_from_rows",
    "parse_at",
    "utc",
]

ClockLike = Clock | Callable[[], datetime]
"""What a store accepts as its clock: a ``Clock`` (``.now()``) or a zero-argument callable."""

ENDED_STATUSES = ("completed", "aborted")
"""Session statuses that ``prune`` may delete."""

_MESSAGES = TypeAdapter(list[TranscriptMessage])


def utc(at: datetime) -> datetime:
    """``at`` as an aware UTC datetime (a naive datetime is taken to be UTC already)."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def parse_at(value: datetime | str) -> datetime:
    """A datetime or an ISO 8601 string (``Z`` allowed) as an aware UTC datetime."""
    return utc(value if isinstance(value, datetime) else datetime.fromisoformat(value))


def flushes(records: TurnRecords | None) -> bool:
    """Whether a checkpoint carrying ``records`` is flushed: when it carries effect journal
    entries (see ``Store.save_checkpoint``)."""
    return records is not None and bool(records.journal)


def duplicate_message(session_id: str, seq: int) -> StoreError:
    """The error for a transcript message whose ``(session_id, seq)`` is already stored."""
    return StoreError(
        f"Session {session_id!r} already has a transcript message with seq {seq}",
        operation="save",
        session_id=session_id,
    )


class Store(ABC):
    """Where sessions live: the document with compare-and-swap, its records and the wakes.

    Every method is a coroutine. Backend failures surface as ``StoreError``
    (``SESSION_STORE_ERROR``), stale revisions as ``SessionConflict`` (``SESSION_CONFLICT``) and
    malformed documents as ``SessionFlowInvariant`` (``SESSION_FLOW_INVARIANT``).
    """

    document_parts: ClassVar[bool] = False
    """Whether the store keeps ``TurnRecords.parts`` (and puts them back into the document when
    it loads). A store that does not must be given whole documents."""

    def __init__(self, *, clock: ClockLike | None = None) -> None:
        if clock is None:
            self._clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        elif isinstance(clock, Clock):
            self._clock = clock.now
        else:
            self._clock = clock
        self._local_leases = LocalLeases()

    # ------------------------------------------------------------------ the document

    @abstractmethod
    async def load(self, session_id: str) -> Session | None:
        """The stored document, or None. No policy: ended or old documents load as they are.

        Every call returns a new object the caller owns (and may change: the runtime attaches the
        window to it in place); ``create`` and ``save`` return new objects too, never the one given.

        Raises ``SessionFlowInvariant`` when the stored row no longer validates.
        """

    @abstractmethod
    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        """Insert a new document at revision 0 (``saved_at`` stamped) with its first records.

        Returns the stored copy. An existing id raises ``SessionConflict``; an invalid document
        raises ``SessionFlowInvariant``.
        """

    @abstractmethod
    async def save(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        """Replace the document if the stored revision is ``expected_revision``.

        The document and ``records`` are written in one transaction. Returns a copy at revision
        ``expected_revision + 1`` with ``saved_at`` stamped. A stale revision or a missing row
        raises ``SessionConflict`` and writes nothing.
        """

    async def save_checkpoint(
        self, session: Session, expected_revision: int, records: TurnRecords | None = None
    ) -> Session:
        """``save`` for a mid-turn checkpoint: every save of a turn but its last.

        The runtime saves a turn's cross-node checkpoints and its effects' started and result
        records this way (never the turn's final save). A checkpoint that carries no effect journal
        entry needs no flush of its own: a durable store may commit it without waiting for the
        disk. It survives a crash of this process at once, and a power loss from the next flushed
        commit on, which makes every earlier commit durable too (SQLite's WAL and PostgreSQL's WAL
        are written in order); a checkpoint lost to a power loss loses only a turn that had not
        answered yet, as if the machine had stopped before it. A checkpoint that carries journal
        entries is flushed like a save (:func:`flushes`): the journal's order needs an effect's
        started record on disk before the effect runs.

        The stores check a checkpoint's document without parsing it again (a turn's final save
        parses its document: one validation per turn; see ``_prepare``): it is refused as
        malformed (``SessionFlowInvariant``) like a save's, and the copy returned is a shallow
        copy of ``session`` (the caller's working copy). This default is ``save``.
        """
        return await self.save(session, expected_revision, records)

    @abstractmethod
    async def delete(self, session_id: str, expected_revision: int | None = None) -> None:
        """Delete a session with all its records and wakes.

        With ``expected_revision`` the delete is compare-and-swap (stale or missing ->
        ``SessionConflict``); without it, it is unconditional and a missing session is a no-op.
        """

    @abstractmethod
    async def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 100,
        agent_prefix: str | None = None, tenant: str | None = None, after: tuple[datetime, str] | None = None,
    ) -> builtins.list[SessionSummary]:
        """Summaries of the stored sessions, newest ``saved_at`` first (then by id): of ``agent``
        exactly, or of every agent whose name starts with ``agent_prefix`` (``"workflow:"``: the
        workflow runs), in ``status``; one query on the agent index. With ``tenant``, only that
        tenant's (``session_tenant`` of the document's metadata), filtered in the query, before
        ``limit``. ``after``: the ``(saved_at, id)`` of the last summary of the page before, so
        the next page starts behind it (a session saved meanwhile moves to the front)."""

    @abstractmethod
    async def prune(self, *, older_than: datetime) -> int:
        """Delete ended (completed/aborted) sessions saved before ``older_than``, with all their
        records and wakes. Returns how many sessions were deleted."""

    # ------------------------------------------------------------------ the lease

    def lease(
        self, session_id: str, *, timeout: float = DEFAULT_LEASE_TIMEOUT
    ) -> AbstractAsyncContextManager[None]:
        """Hold the session's lease for the body: other workers on this store wait for it.

        The runtime holds it from the load to the last save of a request, so two workers never
        run turns of one session at the same time. Raises ``SessionLeaseTimeout`` when the lease
        is not obtained within ``timeout`` seconds. A holder that dies releases it at once (its
        connection on PostgreSQL, its process's locks on SQLite).

        This default is process-local (enough for ``MemoryStore``); durable stores override it.
        """
        return self._local_leases.hold(session_id, timeout)

    def lease_and_load(
        self, session_id: str, *, timeout: float = DEFAULT_LEASE_TIMEOUT
    ) -> AbstractAsyncContextManager[Leased]:
        """Hold the session's lease (as ``lease``) and read its document with the take.

        The body gets a ``Leased``: ``await held.load()`` is the document (its first call answers
        from the read made with the take), ``held.release()`` ends the lease early, and
        ``save_and_release`` ends it with a save. This default composes ``lease`` and ``load``
        (the first ``load()`` reads); durable stores read in the same call as the take.
        """
        return _ComposedLease(self, session_id, timeout)

    async def save_and_release(
        self, session: Session, expected_revision: int, records: TurnRecords | None, held: Leased
    ) -> Session:
        """``save``, then release ``held`` (a lease from this store's ``lease_and_load``).

        Durable stores release in the same transaction as the save (one call). When the save
        raises, nothing is written and the lease stays held (leaving its ``async with`` still
        releases it). This default saves, then releases.
        """
        stored = await self.save(session, expected_revision, records)
        await held.release()
        return stored

    # ------------------------------------------------------------------ records

    @abstractmethod
    async def transcript(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None
    ) -> builtins.list[TranscriptMessage]:
        """Transcript messages with ``seq > after_seq``, in ``seq`` order (at most ``limit``)."""

    @abstractmethod
    async def events(self, session_id: str, *, after: int = 0, limit: int | None = None,
                     newest: int | None = None) -> builtins.list[StoredEvent]:
        """Events with sequence number ``> after``, in order: the first ``limit`` of them, or the
        last ``newest`` (not both); either reads as many of the stored rows as it needs, not the
        whole session's."""

    @abstractmethod
    async def journal(self, session_id: str, *, run_id: str | None = None) -> builtins.list[JournalEntry]:
        """Journal entries in the order their keys were first written (optionally one run's)."""

    # ------------------------------------------------------------------ wakes

    @abstractmethod
    async def due_wakes(
        self, now: datetime, *, limit: int = 100, lease: float = 30.0, worker: str = ""
    ) -> builtins.list[Wake]:
        """Claim up to ``limit`` wakes due at ``now`` that no live lease holds.

        Each returned wake is leased to ``worker`` until ``now + lease`` seconds, so concurrent
        callers (in any process) never receive the same wake; after the lease lapses an
        uncompleted wake is claimable again. Ordered by ``at``.
        """

    @abstractmethod
    async def complete_wake(self, wake: Wake) -> None:
        """Delete a claimed wake, unless it was rescheduled or claimed by another worker since
        (same key, ``at`` and ``worker`` only: a worker whose claim lapsed and was taken over
        cannot delete the wake from under its new claimant)."""

    @abstractmethod
    async def pending_wakes(self, session_id: str | None = None) -> builtins.list[Wake]:
        """Every scheduled wake (leased or not), ordered by ``at`` (optionally one session's)."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and threads. The store cannot be used afterwards."""

    # ------------------------------------------------------------------ the run queue

    async def take_runs(
        self, now: datetime, *, limit: int = 1, lease: float = 30.0, worker: str = "", agent: bool = True
    ) -> builtins.list[QueuedRun]:
        """Take up to ``limit`` queued runs runnable at ``now`` that no live lease holds, oldest
        first, each leased to ``worker`` until ``now + lease`` seconds, so concurrent callers (in
        any process) never take the same run; with ``agent=False``, not the runs whose only work
        is agent work. See :mod:`tether.stores.run_queue`."""
        raise StoreError(f"{type(self).__name__} has no run queue", operation="take_runs")

    async def renew_run(self, run: QueuedRun, now: datetime, *, lease: float = 30.0) -> bool:
        """Extend the lease of a taken run to ``now + lease``; False when ``run.worker`` no longer
        holds it (its lease lapsed and another worker took it)."""
        raise StoreError(f"{type(self).__name__} has no run queue", operation="renew_run")

    async def release_run(self, run: QueuedRun, work: str | None = None) -> None:
        """End a take: with ``work`` ``None`` the run leaves the queue (it waits or ended), else it
        stays queued, unleased, for ``work`` (``runtime`` or ``agent``). Nothing happens when
        ``run.worker`` no longer holds it."""
        raise StoreError(f"{type(self).__name__} has no run queue", operation="release_run")

    async def queued_runs(self, session_id: str | None = None) -> builtins.list[QueuedRun]:
        """Every queued run (leased or not), oldest first (optionally one session's)."""
        raise StoreError(f"{type(self).__name__} has no run queue", operation="queued_runs")

    # ------------------------------------------------------------------ flow versions

    async def put_flows(self, agent: str, bundle: Iterable[FlowVersion]) -> None:
        """Store a bundle of flow versions for ``agent`` (hot registration) in one transaction:
        each becomes the active version of its flow id and supersedes the previous active one.
        Concurrent bundles of one agent take turns (the later one wins); a flow never has two
        active versions. A failure stores nothing of the bundle. See
        :mod:`tether.stores.flow_versions`."""
        raise StoreError(f"{type(self).__name__} does not store flow versions", operation="put_flows")

    async def active_flows(self, agent: str) -> builtins.list[StoredFlow]:
        """The active stored flow versions of ``agent``, oldest first."""
        raise StoreError(f"{type(self).__name__} does not store flow versions", operation="active_flows")

    async def superseded_flows(self, agent: str) -> builtins.list[StoredFlow]:
        """The superseded stored flow versions of ``agent`` (each replaced by a later one), oldest
        first: the versions runs parked before a publish may still be pinned to."""
        raise StoreError(f"{type(self).__name__} does not store flow versions", operation="superseded_flows")

    # ------------------------------------------------------------------ conversation keys

    async def put_conversation(self, key: str, session_id: str) -> None:
        """Record that the conversation ``key`` (a digest a host makes of a history) is session
        ``session_id``. When another session already holds ``key`` the key becomes ambiguous for
        good. A session's keys go with it (delete, prune). See
        :mod:`tether.stores.conversation_keys`."""
        raise StoreError(f"{type(self).__name__} does not store conversation keys", operation="put_conversation")

    async def find_conversation(self, key: str) -> str | None:
        """The session of conversation ``key``, ``""`` when two sessions wrote it, or None."""
        raise StoreError(f"{type(self).__name__} does not store conversation keys", operation="find_conversation")

    # ------------------------------------------------------------------ shared helpers

    def now(self) -> datetime:
        """The store clock's time, as aware UTC."""
        return utc(self._clock())

    def _prepare(self, session: Session, *, revision: int, operation: str,
                 checked: bool = True) -> tuple[Session, str]:
        """Check ``session`` and return the copy to store (``revision``, ``saved_at`` stamped) with
        its JSON. Raises ``SessionFlowInvariant`` when the document does not validate.

        ``checked`` (every save but a checkpoint): one serialization and one validation; the JSON
        that is stored is the JSON that was validated, and the copy returned is parsed from it (it
        shares nothing with ``session``). A checkpoint (``checked=False``) is not parsed again: its
        turn's final save is, so a turn validates its document once. What a checkpoint stores is
        still checked: the serialization refuses any value that does not fit its field's type (a
        non-JSON value in ``data`` or a run's state, a wrong type in a typed field, a list item
        that is not its model), and :func:`_check_head` checks what serialization does not: the
        document's own fields (its validators, its status, its required fields) and each run's
        status, the values tether's code sets by assignment after a model is built (whose
        literal values ``mypy --strict`` holds to their types). The copy returned is a shallow copy
        of ``session``.
        """
        session_id = str(getattr(session, "id", "?"))
        try:
            stamped = session.model_copy(update={"revision": revision, "saved_at": self.now()})
            text = stamped.model_dump_json(warnings="error", exclude_none=True)
            if checked:
                stored = Session.model_validate_json(text)
            else:
                _check_head(stamped)
                stored = stamped
        except (ValidationError, PydanticSerializationError, AttributeError, TypeError, ValueError) as exc:
            raise SessionFlowInvariant(
                f"Session {session_id!r} is malformed and was not written: {exc}",
                operation=operation,
                session_id=session_id,
            ) from exc
        return stored, text

    def _leased(self, session_id: str, found: tuple[str | bytes, int, Any] | None,
                release: Callable[[], Awaitable[None]], backend: object) -> Leased:
        """The ``Leased`` of a durable store's ``lease_and_load``: ``found`` is the ``(doc, revision,
        parts)`` row read with the take (None: no such session), decoded on the first ``load()``."""

        def first() -> Session | None:
            return None if found is None else self._decode(session_id, found[0], found[1], found[2])

        held = Leased(session_id, first, lambda: self.load(session_id), release)
        held.backend = backend
        return held

    @staticmethod
    def _decode(session_id: str, text: str | bytes, revision: int | None = None, parts: Any = None) -> Session:
        """Parse a stored document and put its parts back (``parts``: ``(path, name, value)``
        rows, or their JSON array as text; see ``TurnRecords.parts``); a row that no longer
        validates raises ``SessionFlowInvariant`` (``SessionVersionUnsupported`` when it names a
        newer ``schema_version`` than ours)."""
        try:
            session = Session.model_validate_json(text)
        except ValidationError as exc:
            stored_version = _schema_version(text)
            if stored_version is not None and stored_version > SESSION_SCHEMA_VERSION:
                raise SessionVersionUnsupported(
                    session_id, stored=stored_version, supported=SESSION_SCHEMA_VERSION
                ) from exc
            unknown = _unknown_fields(exc)
            if stored_version == SESSION_SCHEMA_VERSION and unknown:  # a newer tether added a field
                raise SessionVersionUnsupported(
                    session_id, stored=stored_version, supported=SESSION_SCHEMA_VERSION, unknown_fields=unknown
                ) from exc
            raise SessionFlowInvariant(
                f"Stored session {session_id!r} is malformed: {exc}", operation="load", session_id=session_id
            ) from exc
        if session.id != session_id:
            raise SessionFlowInvariant(
                f"Stored session {session_id!r} holds a document with id {session.id!r}",
                operation="load",
                session_id=session_id,
            )
        if revision is not None and session.revision != revision:
            session = session.model_copy(update={"revision": revision})
        if parts:
            _put_parts(session, json.loads(parts) if isinstance(parts, str | bytes) else parts)
        return session


def _put_parts(session: Session, rows: Iterable[Any]) -> None:
    """Put ``(path, name, value)`` rows back into ``session.data`` (see ``TurnRecords.parts``)."""
    for path, name, value in rows:
        into: Any = session.data
        for key in path.split("."):
            into = into.setdefault(key, {}) if isinstance(into, dict) else None
        if not isinstance(into, dict):
            raise SessionFlowInvariant(
                f"Stored session {session.id!r} has a part at {path!r}, where its document holds no object",
                operation="load", session_id=session.id)
        into[name] = json.loads(value) if isinstance(value, str | bytes) else value


class _ComposedLease:
    """``Store.lease_and_load`` from ``lease`` and ``load``: the body gets a ``Leased`` whose first
    ``load()`` reads; the lease ends early with ``held.release()``, else when the body is left.
    (A class, not a generator: every request of a store that does not override it enters one.)"""

    __slots__ = ("_held", "_lease")

    def __init__(self, store: Store, session_id: str, timeout: float) -> None:
        lease = self._lease = store.lease(session_id, timeout=timeout)

        async def end() -> None:  # closes over the lease, not over self: no reference cycle to collect
            await lease.__aexit__(None, None, None)

        self._held = Leased(session_id, None, lambda: store.load(session_id), end)

    async def __aenter__(self) -> Leased:
        await self._lease.__aenter__()
        return self._held

    async def __aexit__(self, *exc: object) -> None:
        await self._held.release()  # nothing when the body released it already


_STATUSES = frozenset(get_args(SessionStatus))
_RUN_STATUSES = frozenset(get_args(RunStatus))


def _check_head(session: Session) -> None:
    """What serialization does not check, checked as validation would (cheap): the document's own
    scalar fields (a copy made with ``model_copy(update=...)`` or ``model_construct`` skips their
    validators, literal and required fields) and each run's status (set by assignment)."""
    values = session.__dict__
    for name in ("id", "agent"):
        value = values.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name}: must be a string that is not blank, not {value!r}")
    if values.get("status") not in _STATUSES:
        raise ValueError(f"status: must be one of {sorted(_STATUSES)}, not {values.get('status')!r}")
    if not isinstance(values.get("created_at"), datetime):
        raise ValueError(f"created_at: must be a datetime, not {values.get('created_at')!r}")
    for name in ("revision", "schema_version"):
        value = values.get(name)
        if type(value) is not int or value < 0:
            raise ValueError(f"{name}: must be an integer >= 0, not {value!r}")
    for index, run in enumerate(values.get("runs") or ()):
        status = getattr(run, "status", None)
        if status not in _RUN_STATUSES:
            raise ValueError(f"runs.{index}.status: must be one of {sorted(_RUN_STATUSES)}, not {status!r}")


def _unknown_fields(exc: ValidationError) -> list[str]:
    """The fields (dotted paths) of a document that failed validation only because our model does
    not know them (none when anything else is wrong with it: that document is malformed)."""
    errors = exc.errors()
    if any(e["type"] != "extra_forbidden" for e in errors):
        return []
    return sorted(".".join(str(part) for part in e["loc"]) for e in errors)


def _schema_version(text: str | bytes) -> int | None:
    """The ``schema_version`` of a stored document that did not validate, when it has one."""
    try:
        version = json.loads(text).get("schema_version")
    except (ValueError, AttributeError, RecursionError):  # not JSON, not an object, nested too deep to read
        return None
    return version if isinstance(version, int) else None


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """``(low, high)``: every string that starts with ``prefix`` is ``>= low`` and ``< high``
    in code point order (``high`` is ``None`` when no string bounds them: ``prefix`` is empty or
    ends with the last code point)."""
    if not prefix or ord(prefix[-1]) == 0x10FFFF:
        return prefix, None
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def messages_from_rows(bodies: Iterable[str]) -> list[TranscriptMessage]:
    """Transcript messages from their stored JSON, parsed and validated in one pass."""
    return _MESSAGES.validate_json(f"[{','.join(bodies)}]")


def message_rows(session_id: str, records: TurnRecords) -> list[tuple[int, str]]:
    """``(seq, json)`` per message; a duplicate ``seq`` inside one write raises ``StoreError``."""
    seen: set[int] = set()
    rows = []
    for message in records.messages:
        if message.seq in seen:
            raise duplicate_message(session_id, message.seq)
        seen.add(message.seq)
        rows.append((message.seq, message.model_dump_json(exclude_defaults=True)))  # defaults fill in on read
    return rows


@contextmanager
def backend_errors(
    errors: tuple[type[BaseException], ...], operation: str, session_id: str | None = None
) -> Iterator[None]:
    """Re-raise a backend exception (one of ``errors``) as ``StoreError``; tether errors pass."""
    try:
        yield
    except (SessionConflict, SessionFlowInvariant, StoreError):
        raise
    except errors as exc:
        raise StoreError(
            f"store {operation} failed: {type(exc).__name__}: {exc}",
            operation=operation,
            session_id=session_id,
        ) from exc
