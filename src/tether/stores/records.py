"""The value types a store reads and writes besides the session document.

``TurnRecords`` are the append-only records of one turn; a store writes them in the same
transaction as the document, so a save that loses its compare-and-swap writes none of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tether.durable.entries import JournalEntry, JournalStatus
from tether.engine.core.session import SessionStatus, TranscriptMessage

__all__ = [
    "DEFAULT_TENANT",
    "JournalEntry",
    "JournalStatus",
    "QueueRequest",
    "QueuedRun",
    "SessionSummary",
    "StoredEvent",
    "TurnRecords",
    "Wake",
    "WakeRequest",
    "session_tenant",
]

_STRICT = ConfigDict(extra="forbid")


class WakeRequest(BaseModel):
    """Schedule a wake for the session: ``key`` fires at ``at``.

    A request with a key that is already scheduled replaces it; ``replaces`` names another key
    of the same session to remove in the same write.
    """

    model_config = _STRICT

    key: str
    at: datetime
    replaces: str | None = None


class Wake(BaseModel):
    """A scheduled wake, as the store holds it.

    ``leased_until``/``worker`` are set while a worker holds a claim from ``due_wakes``; the claim
    lapses at ``leased_until`` and the wake becomes claimable again.
    """

    model_config = _STRICT

    session_id: str
    key: str
    at: datetime
    leased_until: datetime | None = None
    worker: str = ""


class QueueRequest(BaseModel):
    """Put the session in the run queue, or take it out, with the write (see
    :mod:`tether.stores.run_queue`): ``work`` is ``runtime`` (any worker), ``agent`` (only agent
    work left: a worker with a model) or ``None`` (out of the queue); ``at`` is when a new row
    becomes runnable (a row already queued keeps its own ``at`` and lease)."""

    model_config = _STRICT

    work: Literal["runtime", "agent"] | None
    at: datetime


class QueuedRun(BaseModel):
    """A row of the run queue, as the store holds it: ``leased_until``/``worker`` are set while a
    worker holds a take from ``Store.take_runs``; ``takes`` counts the takes (a run taken again
    after its worker died has more than one)."""

    model_config = _STRICT

    session_id: str
    at: datetime
    agent: bool = False
    leased_until: datetime | None = None
    worker: str = ""
    takes: int = 0


class StoredEvent(BaseModel):
    """An event record with its per-session sequence number (from 1).

    ``data`` is the event as written, in its JSON form (datetimes become ISO strings).
    """

    model_config = _STRICT

    seq: int
    type: str
    at: datetime
    data: dict[str, Any]


DEFAULT_TENANT = "public"
"""The tenant of a session whose ``metadata.config.tenant`` is unset (an open server's callers, ``tether chat``)."""


def session_tenant(metadata: Mapping[str, Any]) -> str:
    """The tenant a session belongs to: ``metadata.config.tenant``, else :data:`DEFAULT_TENANT`."""
    config = metadata.get("config")
    tenant = config.get("tenant") if isinstance(config, Mapping) else None
    return tenant if isinstance(tenant, str) and tenant else DEFAULT_TENANT


class SessionSummary(BaseModel):
    """One row of ``Store.list``: the indexed columns of a session, without its document."""

    model_config = _STRICT

    id: str
    agent: str
    status: SessionStatus
    revision: int
    created_at: datetime
    saved_at: datetime


class TurnRecords(BaseModel):
    """The append-only records of one turn, written in the same transaction as the document.

    Attributes:
        messages: transcript messages; ``(session_id, seq)`` is unique, a duplicate fails the write.
        events: event dicts, each with at least ``type`` (a string) and ``at`` (a datetime or ISO
            string); the store numbers them per session.
        journal: effect journal entries (started, then finalized by the same key; a final entry
            is never replaced).
        wakes: wakes to schedule (applied after ``cancel_wakes``).
        cancel_wakes: keys of wakes to remove.
        parts: document parts, ``{path: {name: JSON text}}``: each is kept beside the document
            and put back into it when it loads, at ``data[path][name]`` (``path`` is dotted:
            ``"workflow_run.nodes"`` is ``data["workflow_run"]["nodes"]``). A part written again
            replaces the stored one; a save writes only the parts it is given, so a document
            whose large members change a few at a time writes only those. Parts are removed
            with their session, never one by one.
        queue: the session's place in the run queue, changed in the same write (``None``: unchanged).
    """

    model_config = _STRICT

    messages: list[TranscriptMessage] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    journal: list[JournalEntry] = Field(default_factory=list)
    wakes: list[WakeRequest] = Field(default_factory=list)
    cancel_wakes: list[str] = Field(default_factory=list)
    parts: dict[str, dict[str, str]] = Field(default_factory=dict)
    queue: QueueRequest | None = None

    @field_validator("parts")
    @classmethod
    def _parts_are_json(cls, parts: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for path, members in parts.items():
            if not path or any(not key for key in path.split(".")):
                raise ValueError(f"part path {path!r} must be dotted names (like 'workflow_run.nodes')")
            for name, body in members.items():
                try:
                    json.loads(body)
                except ValueError as exc:
                    raise ValueError(f"part {path}[{name!r}] is not JSON: {exc}") from None
        return parts

    @field_validator("events")
    @classmethod
    def _events_have_type_and_at(cls, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, event in enumerate(events):
            if not isinstance(event.get("type"), str) or not event["type"]:
                raise ValueError(f"event {index} needs a non-empty string 'type'")
            at = event.get("at")
            if isinstance(at, str):
                try:
                    datetime.fromisoformat(at)
                except ValueError:
                    raise ValueError(f"event {index}: 'at' is not an ISO 8601 datetime: {at!r}") from None
            elif not isinstance(at, datetime):
                raise ValueError(f"event {index} needs an 'at' (datetime or ISO string)")
        return events

    def is_empty(self) -> bool:
        """True when there is nothing to write."""
        return not (self.messages or self.events or self.journal or self.wakes or self.cancel_wakes or self.parts
                    or self.queue)

    def part_rows(self) -> list[tuple[str, str, str]]:
        """``(path, name, body)`` per part."""
        return [(path, name, body) for path, members in self.parts.items() for name, body in members.items()]
