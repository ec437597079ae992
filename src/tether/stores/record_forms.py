"""The compact stored forms of events and journal entries, shared by every store.

**Events.** The events of one write are stored as ONE row: its ``seq`` is the number of the
write's last event, its ``type`` and ``at`` columns those of its first event, and its body a JSON
array of groups, one per run of consecutive events of the same ``run_id`` and ``flow``::

    [[run_id, flow, item, item, ...], ...]

An engine event (a known ``type`` whose dict is exactly ``type, run_id, flow, at`` and its own
fields, with the row's ``at``) is the item ``[type, value, value, ...]``: its fields by position,
trailing defaults left out. Any other event is stored whole, as its JSON object. Reading a row
gives back exactly the dicts that were written. A row written before this form (a body that is one
JSON object) is one event, and still reads.

The positions come from :data:`LAYOUTS`; stored rows depend on them, so a field is only ever
added to an event class last, with a default.

**Journal entries.** The body leaves out what the row's own columns hold (``run_id``, ``key``),
the ``idempotency_key`` when it is the usual ``<session id>:<key>`` (an entry without one stores
``null``), and ``attempt`` when it is 1. A body that still has its ``key`` (written before this
form) reads as it is.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from tether.durable.entries import JournalEntry
from tether.engine.core.events import (
    BudgetExceeded,
    CollectUpdate,
    CustomerMessage,
    CustomEvent,
    ErrorEvent,
    FieldCorrected,
    FlowDrift,
    FlowEnd,
    FlowEnter,
    FlowEvent,
    FlowTransition,
    HandoffEvent,
    NodeEnter,
    NodeExit,
    ReplyWarning,
)
from tether.engine.graph.choices import Interactive
from tether.errors import StoreError
from tether.stores.base import parse_at
from tether.stores.records import StoredEvent, TurnRecords

__all__ = [
    "LAYOUTS",
    "EventRow",
    "event_row",
    "events_from_row",
    "journal_body",
    "journal_from_row",
    "page_of_rows",
]

_HEAD = ("type", "run_id", "flow", "at")
_REQUIRED = object()


def _layout(cls: type[FlowEvent]) -> tuple[tuple[str, Any], ...]:
    """``(name, default)`` of the fields after ``run_id, flow, at``, in declaration order."""
    out = []
    for f in fields(cls):
        if f.name in _HEAD:
            continue
        if f.default is not MISSING:
            default: Any = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            default = _REQUIRED
        out.append((f.name, default))
    return tuple(out)


_CLASSES: tuple[type[FlowEvent], ...] = (
    FlowEnter, NodeEnter, NodeExit, FlowTransition, FlowEnd, HandoffEvent, ErrorEvent, CollectUpdate,
    CustomEvent, ReplyWarning, Interactive, FieldCorrected, FlowDrift, CustomerMessage, BudgetExceeded,
)
LAYOUTS: dict[str, tuple[tuple[str, Any], ...]] = {cls.type: _layout(cls) for cls in _CLASSES}
"""The positional layout of each engine event type (the fields after ``type, run_id, flow, at``)."""

_KEYS: dict[str, tuple[str, ...]] = {t: (*_HEAD, *(name for name, _ in layout)) for t, layout in LAYOUTS.items()}
_DEFAULTS: dict[str, tuple[Any, ...]] = {t: tuple(default for _, default in layout) for t, layout in LAYOUTS.items()}


class EventRow(NamedTuple):
    """The one row a write's events are stored as."""

    size: int
    type: str
    at: datetime
    body: str


def _same(value: Any, default: Any) -> bool:
    return default is not _REQUIRED and type(value) is type(default) and value == default


def _item(event: dict[str, Any], at_text: str) -> list[Any] | dict[str, Any]:
    """The compact item of an engine event, or the event itself when it does not fit a layout."""
    kind = event.get("type")
    if not isinstance(kind, str):
        return event
    keys = _KEYS.get(kind)
    if keys is None or tuple(event) != keys or event["at"] != at_text:
        return event
    item = list(event.values())  # in the layout's order: the keys were just compared
    del item[1:4]  # run_id, flow and at: the group's and the row's
    defaults = _DEFAULTS[kind]
    while len(item) > 1 and _same(item[-1], defaults[len(item) - 2]):
        item.pop()
    return item


def event_row(records: TurnRecords) -> EventRow | None:
    """The row that stores the events of ``records`` (None when there are none); an event that is
    not JSON-serializable raises ``StoreError``."""
    events = records.events
    if not events:
        return None
    first = events[0]
    at = parse_at(first["at"])
    at_text = at.isoformat()
    groups: list[list[Any]] = []
    for event in events:
        scope = (event.get("run_id"), event.get("flow"))
        if not groups or (groups[-1][0], groups[-1][1]) != scope:
            groups.append([*scope])
        groups[-1].append(_item(event, at_text))
    try:
        body = to_json(groups).decode()
    except PydanticSerializationError as exc:
        raise StoreError(f"an event is not JSON-serializable: {exc}", operation="save") from exc
    return EventRow(len(events), str(first["type"]), at, body)


def _event(item: Any, run_id: Any, flow: Any, at_text: str) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    kind, *values = item
    layout = LAYOUTS.get(kind)
    if layout is None:  # written by a tether that knows an event type this one does not
        raise StoreError(f"a stored event row holds a compact {kind!r} event, a type this tether does not know; "
                         "upgrade tether to read it", operation="events")
    event: dict[str, Any] = {"type": kind, "run_id": run_id, "flow": flow, "at": at_text}
    for index, (name, default) in enumerate(layout):
        if index < len(values):
            event[name] = values[index]
        else:  # a trailing default left out (or a field added to the class since)
            event[name] = None if default is _REQUIRED else copy.deepcopy(default)
    return event


R = TypeVar("R")


def page_of_rows(rows: Sequence[R], decode: Callable[[R], list[StoredEvent]], limit: int | None,
                 newest: int | None) -> list[StoredEvent]:
    """The events of event ``rows`` (in seq order, each decoded by ``decode``): the first ``limit``
    or the last ``newest`` (``Store.events``); a store reads no more rows than that many, since
    every row read holds one or more of the events asked for."""
    if limit is not None and newest is not None:
        raise ValueError("Store.events takes limit (the first events) or newest (the last), not both")
    found = [event for row in rows for event in decode(row)]
    if newest is not None:
        return found[len(found) - newest:] if newest else []
    return found if limit is None else found[:limit]


def events_from_row(seq: int, at: datetime, body: str, *, after: int = 0) -> list[StoredEvent]:
    """The events of one stored row (``seq``: its last event's number), those numbered above ``after``."""
    data = json.loads(body)
    if isinstance(data, dict):  # one event, written before the compact form
        events = [data]
    else:
        at_text = at.isoformat()
        events = [_event(item, group[0], group[1], at_text) for group in data for item in group[2:]]
    first = seq - len(events) + 1
    return [
        StoredEvent.model_construct(seq=n, type=e["type"], at=parse_at(e["at"]), data=e)
        for n, e in enumerate(events, first)
        if n > after
    ]


def journal_body(session_id: str, entry: JournalEntry) -> str:
    """The stored body of ``entry`` (see the module docstring)."""
    body = entry.model_dump(mode="json", exclude_none=True)
    del body["run_id"], body["key"]
    if entry.idempotency_key == f"{session_id}:{entry.key}":
        del body["idempotency_key"]
    elif entry.idempotency_key is None:
        body["idempotency_key"] = None
    if entry.attempt == 1:
        del body["attempt"]
    return to_json(body).decode()


def journal_from_row(session_id: str, key: str, run_id: str, body: str | bytes) -> JournalEntry:
    """The journal entry of a stored row (either form)."""
    data = json.loads(body)
    if "key" not in data:
        data["run_id"], data["key"] = run_id, key
        data.setdefault("idempotency_key", f"{session_id}:{key}")
    return JournalEntry.model_validate(data)
