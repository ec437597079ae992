"""JSON views of what the store holds: session state, transcript messages, events, journal entries."""

from __future__ import annotations

from typing import Any

from tether.engine.core.session import Session, TranscriptMessage
from tether.runtime.costs import session_cost
from tether.runtime.envelope import RunResponse
from tether.stores.records import JournalEntry, StoredEvent, session_tenant

__all__ = ["envelope", "event_view", "message_view", "session_state", "tenant_of"]


def tenant_of(session: Session) -> str:
    """The tenant a session belongs to (``metadata.config.tenant``; ``public`` when none)."""
    return session_tenant(session.metadata)


def envelope(response: RunResponse) -> dict[str, Any]:
    """The seed 004 envelope as JSON."""
    return response.model_dump(mode="json")


def message_view(message: TranscriptMessage) -> dict[str, Any]:
    """A transcript message as JSON; a person's message (kind ``agent``) has ``role: "agent"``."""
    view = message.model_dump(mode="json", exclude_none=True)
    if message.kind == "agent":
        view["role"] = "agent"
    return view


def event_view(event: StoredEvent) -> dict[str, Any]:
    """An event record as JSON."""
    return event.model_dump(mode="json")


def _approval_view(entry: JournalEntry) -> dict[str, Any]:
    view = entry.model_dump(mode="json", exclude_none=True)
    view["approval_id"] = entry.key
    return view


def session_state(session: Session, approvals: list[JournalEntry]) -> dict[str, Any]:
    """``GET .../{id}``: the document without its transcript window, plus pending approvals and what
    each run waits on, what the session spent (``usage``) and its kept ``log``/``warn``/``error``
    entries."""
    runs = [run.model_dump(mode="json", exclude_none=True) for run in session.runs]
    waiting = [{"run": run.id, "flow": run.flow, **run.waiting.model_dump(mode="json", exclude_none=True)}
               for run in session.runs if run.waiting is not None]
    return {
        "id": session.id,
        "agent": session.agent,
        "tenant": tenant_of(session),
        "status": session.status,
        "revision": session.revision,
        "created_at": session.created_at.isoformat(),
        "saved_at": session.saved_at.isoformat() if session.saved_at is not None else None,
        "data": session.model_dump(mode="json")["data"],
        "runs": runs,
        "pending_approvals": [_approval_view(entry) for entry in approvals],
        "waiting": waiting,
        "usage": session.usage.model_dump(mode="json"),
        "cost": session_cost(session),
        "log": [entry.model_dump(mode="json") for entry in session.log],
        "warn": [entry.model_dump(mode="json") for entry in session.warn],
        "error": [entry.model_dump(mode="json") for entry in session.error],
    }
