"""The session lifecycle beside a request: what the server and CLI do to a stored session.

A session stays ``running`` after a flow ends (the conversation goes on). An escalation hands it
to a human (``handed_off``: messages are recorded, nobody answers) until :func:`release` gives it
back; :func:`complete` marks it ``completed`` for good; :func:`delete` removes it with all its
records and wakes. These three hold the session's FIFO lock and its cross-worker lease, so they
never land in the middle of a turn. A run parked on ``ctx.approve`` or ``ctx.signal`` is resumed
by :func:`approve` or :func:`signal`: the decision or signal is the input of a turn of the
session's stored agent, run by the runtime's request path; :func:`pending_approvals` lists the
approvals the runs wait on.

The functions take the runtime as a :class:`SessionHost` (what they use of it; its settings are
read at each call, as a caller may change them) and the request path as a :data:`Request`
callback, so this module sits below :mod:`tether.runtime.runtime`, which calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from tether.durable.decisions import normalize_decision
from tether.engine.core.input_checks import CheckedInput, check_input
from tether.engine.core.inputs import Approval, Signal, TurnInput, TurnOptions
from tether.engine.core.session import TranscriptMessage
from tether.errors import InvalidInputError, SessionConflict
from tether.runtime.envelope import RunResponse, failure, failure_for
from tether.runtime.restore import check_supported
from tether.stores.records import TurnRecords

if TYPE_CHECKING:
    from tether.durable.entries import JournalEntry
    from tether.engine.core.session import Session
    from tether.runtime.commits import CommitSignal
    from tether.runtime.locks import SessionLocks
    from tether.runtime.window import WindowCache
    from tether.stores.base import Store

__all__ = ["LIVE_STATUSES", "Request", "SessionHost", "approve", "complete", "delete", "operator_message",
           "pending_approvals", "release", "signal"]

LIVE_STATUSES = ("running", "handed_off")
"""Session statuses a request continues (a completed or aborted session is never resumed)."""

Request = Callable[[str, str, CheckedInput, Mapping[str, Any] | None, TurnOptions | None], Awaitable[RunResponse]]
"""The runtime's request path: ``(agent_id, session_id, turn_input, config, options)`` to the
envelope of the turn it ran (never raises)."""


class SessionHost(Protocol):
    """What the lifecycle calls use of a runtime (:class:`tether.runtime.runtime.Runtime` is one)."""

    @property
    def store(self) -> Store: ...
    @property
    def locks(self) -> SessionLocks: ...
    @property
    def lease_timeout(self) -> float: ...
    @property
    def max_replays(self) -> int: ...
    @property
    def windows(self) -> WindowCache: ...
    @property
    def commits(self) -> CommitSignal: ...


def _lease(runtime: SessionHost, session_id: str) -> AbstractAsyncContextManager[None]:
    """The store's lease on ``session_id``: other workers on the session wait for the call."""
    return runtime.store.lease(session_id, timeout=runtime.lease_timeout)


async def complete(runtime: SessionHost, session_id: str) -> Session | None:
    """Mark a running session ``completed``; see :meth:`tether.runtime.runtime.Runtime.complete`."""
    async with runtime.locks.hold(session_id), _lease(runtime, session_id):
        for _ in range(runtime.max_replays + 1):
            doc = await runtime.store.load(session_id)
            if doc is not None:
                check_supported(doc)
            if doc is None or doc.status not in LIVE_STATUSES:
                return doc
            try:
                return await runtime.store.save(doc.model_copy(update={"status": "completed"}), doc.revision)
            except SessionConflict:
                continue
        raise SessionConflict(session_id, operation="complete")


async def delete(runtime: SessionHost, session_id: str) -> None:
    """Delete a session with its records and wakes; see :meth:`tether.runtime.runtime.Runtime.delete`."""
    async with runtime.locks.hold(session_id), _lease(runtime, session_id):
        runtime.windows.forget(session_id)
        await runtime.store.delete(session_id)
    runtime.commits.notify(session_id)


async def release(runtime: SessionHost, session_id: str, *, by: str | None = None,
                  now: datetime | None = None) -> Session | None:
    """Give a ``handed_off`` session back to the bot; see :meth:`tether.runtime.runtime.Runtime.release`."""
    at = now or datetime.now(UTC)
    records = TurnRecords(events=[{"type": "released", "at": at.isoformat(), "by": by}])
    async with runtime.locks.hold(session_id), _lease(runtime, session_id):
        for _ in range(runtime.max_replays + 1):
            doc = await runtime.store.load(session_id)
            if doc is None or doc.status != "handed_off":
                return doc
            try:
                stored = await runtime.store.save(doc.model_copy(update={"status": "running"}), doc.revision, records)
            except SessionConflict:
                continue
            runtime.windows.forget(session_id)
            runtime.commits.notify(session_id)
            return stored
        raise SessionConflict(session_id, operation="release")


async def operator_message(runtime: SessionHost, session_id: str, text: str, *, by: str, now: datetime,
                           history_window: Callable[[str], int]) -> tuple[Session | None, TranscriptMessage | None]:
    """Record what a person who took the session over says to the customer; see
    :meth:`tether.runtime.runtime.Runtime.operator_message`."""
    async with runtime.locks.hold(session_id), _lease(runtime, session_id):
        for _ in range(runtime.max_replays + 1):
            doc = await runtime.store.load(session_id)
            if doc is not None:
                check_supported(doc)
            if doc is None or doc.status != "handed_off":
                return doc, None
            seq = doc.message_seq + 1
            said = TranscriptMessage(seq=seq, role="assistant", text=text, at=now, kind="agent", by=by)
            update: dict[str, Any] = {"message_seq": seq}
            keep = history_window(doc.agent)
            if doc.window_from is None:  # a document that keeps its window inline
                update["messages"] = [*doc.messages, said][-keep:]
            else:  # the window is the transcript's tail from window_from
                update["window_from"] = max(doc.window_from, seq - keep + 1)
            event = {"type": "operator-message", "at": now.isoformat(), "seq": seq, "by": by, "text": text}
            try:
                stored = await runtime.store.save(doc.model_copy(update=update), doc.revision,
                                                  TurnRecords(messages=[said], events=[event]))
            except SessionConflict:
                continue
            runtime.windows.forget(session_id)
            runtime.commits.notify(session_id)
            return stored, said
        raise SessionConflict(session_id, operation="operator-message")


async def approve(runtime: SessionHost, request: Request, session_id: str, approval_id: str,
                  decision: bool | str, *, feedback: str | None, decided_by: str | None,
                  options: TurnOptions | None) -> RunResponse:
    """Decide a parked approval with a turn; see :meth:`tether.runtime.runtime.Runtime.approve`."""
    try:
        normalized = normalize_decision(decision)
    except ValueError as exc:
        return failure(str(exc), session_id, "invalid-request")
    return await _deliver(runtime, request, session_id, Approval(approval_id, normalized, feedback, decided_by),
                          options)


async def signal(runtime: SessionHost, request: Request, session_id: str, name: str, payload: Any, *,
                 signal_id: str | None, options: TurnOptions | None) -> RunResponse:
    """Deliver a signal with a turn; see :meth:`tether.runtime.runtime.Runtime.signal`."""
    return await _deliver(runtime, request, session_id, Signal(name, payload, signal_id), options)


async def pending_approvals(runtime: SessionHost, session_id: str) -> list[JournalEntry]:
    """The started journal entries of the approvals the session's runs wait on; see
    :meth:`tether.runtime.runtime.Runtime.pending_approvals`."""
    doc = await runtime.store.load(session_id)
    if doc is None:
        return []
    waiting = {r.waiting.key: r.id for r in doc.runs if r.waiting is not None and r.waiting.kind == "approval"}
    found: list[JournalEntry] = []
    for run_id in sorted(set(waiting.values())):
        found += [e for e in await runtime.store.journal(session_id, run_id=run_id) if e.key in waiting]
    return found


async def _deliver(runtime: SessionHost, request: Request, session_id: str, turn_input: TurnInput,
                   options: TurnOptions | None) -> RunResponse:
    """Run ``turn_input`` as a turn of the live session's stored agent (``no-session`` when the
    session is missing or has ended); an input that cannot be taken is refused before any I/O."""
    try:
        checked = check_input(turn_input)
    except InvalidInputError as exc:
        return failure(exc.message, session_id, exc.code)
    try:
        doc = await runtime.store.load(session_id)
    except Exception as exc:
        return failure_for(exc, session_id)
    if doc is None or doc.status not in LIVE_STATUSES:
        return RunResponse(success=True, completed=True, message="", session="", code="no-session")
    return await request(doc.agent, session_id, checked, None, options)
