"""Flow events: how a run narrates itself (``flow-enter``, ``node-enter``, ``node-exit``,
``flow-transition``, ``flow-end``, ``handoff``, ``error``, ``warning``), with typed payloads.

Order on a transition: ``node-exit``, ``flow-transition``, ``node-enter``. No ``node-exit`` is
emitted at flow end.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar, overload

from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = [
    "BudgetExceeded",
    "CollectUpdate",
    "CustomEvent",
    "CustomerMessage",
    "ErrorEvent",
    "FieldCorrected",
    "FlowEnd",
    "FlowDrift",
    "FlowEnter",
    "FlowEvent",
    "FlowTransition",
    "HandoffEvent",
    "NodeEnter",
    "NodeExit",
    "ReplyWarning",
    "StoredForms",
]


@dataclass(frozen=True, kw_only=True)
class FlowEvent:
    """Base: which run and flow, and when."""

    type: ClassVar[str] = "event"
    run_id: str | None
    flow: str | None
    at: datetime

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict with ``type``: the event as it is stored.

        Built once per event (events are frozen) and cached; every call returns a shallow copy
        of that record, so a checkpoint and the final save never convert an event again.
        """
        values = self.__dict__
        record: dict[str, Any] | None = values.get("_record")
        if record is None:
            record = {"type": self.type}
            plain = True
            for name in _field_names(type(self)):
                value = record[name] = values[name]
                plain = plain and (type(value) in _PLAIN or name == "at")
            if not plain:  # most events hold only strings: nothing to convert
                try:
                    record = to_jsonable_python(record)
                except PydanticSerializationError:  # not JSON-able: kept as given (the store's write refuses it)
                    record = copy.deepcopy(record)
            record["at"] = self.at.isoformat()
            self.__dict__["_record"] = record  # frozen: bypass __setattr__ (not a field: eq/repr unchanged)
        return dict(record)


class StoredForms(Sequence[dict[str, Any]]):
    """``events`` as their stored dicts (:meth:`FlowEvent.as_dict`), each made when it is read: a
    checkpoint hands a turn's events so far to its host (a snapshot: events emitted later are not
    in it), which writes only those it has not written."""

    __slots__ = ("_events",)

    def __init__(self, events: Sequence[FlowEvent]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [event.as_dict() for event in self._events[index]]
        return self._events[index].as_dict()


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_PLAIN = frozenset({str, int, bool, type(None)})  # JSON as they are


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass(frozen=True, kw_only=True)
class FlowDrift(FlowEvent):
    """A run parked on another definition of its flow met the current one (a deploy): ``code`` is
    ``flow-drift-continued`` (it goes on at ``node``), ``flow-drift-migrated`` or
    ``flow-drift-restarted``; ``pinned`` and ``current`` are the two digests, ``reason`` why it
    could not simply continue (None when it did)."""

    type: ClassVar[str] = "flow-drift"
    code: str
    node: str | None
    pinned: str
    current: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class FlowEnter(FlowEvent):
    type: ClassVar[str] = "flow-enter"


@dataclass(frozen=True, kw_only=True)
class NodeEnter(FlowEvent):
    type: ClassVar[str] = "node-enter"
    node: str


@dataclass(frozen=True, kw_only=True)
class NodeExit(FlowEvent):
    type: ClassVar[str] = "node-exit"
    node: str


@dataclass(frozen=True, kw_only=True)
class FlowTransition(FlowEvent):
    type: ClassVar[str] = "flow-transition"
    source: str
    target: str


@dataclass(frozen=True, kw_only=True)
class FlowEnd(FlowEvent):
    type: ClassVar[str] = "flow-end"
    reason: str
    gates: list[dict[str, Any]] = field(default_factory=list)
    outcome: str | None = None


@dataclass(frozen=True, kw_only=True)
class HandoffEvent(FlowEvent):
    type: ClassVar[str] = "handoff"
    agent: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(FlowEvent):
    type: ClassVar[str] = "error"
    node: str | None = None
    error: str


@dataclass(frozen=True, kw_only=True)
class CollectUpdate(FlowEvent):
    type: ClassVar[str] = "collect-update"
    node: str
    collected: dict[str, Any]
    missing: list[str]
    sources: dict[str, str]
    rejected: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class FieldCorrected(FlowEvent):
    """The customer corrected a value collected before (the correction repair pattern): ``old`` and
    ``new`` values, the step that collected it (``node``), and how it was read (``source``:
    ``deterministic`` or ``model``)."""

    type: ClassVar[str] = "field-corrected"
    node: str
    field: str
    old: Any
    new: Any
    source: str


@dataclass(frozen=True, kw_only=True)
class CustomEvent(FlowEvent):
    type: ClassVar[str] = "custom"
    name: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CustomerMessage(FlowEvent):
    """A customer message to a session a person has (``handed_off``): recorded, answered by nobody
    until the person does; the event pushes it to the operators watching the session's stream."""

    type: ClassVar[str] = "customer-message"
    seq: int
    text: str


@dataclass(frozen=True, kw_only=True)
class BudgetExceeded(FlowEvent):
    """A model call was not made: it would exceed a spending limit of the host (``reason``)."""

    type: ClassVar[str] = "budget-exceeded"
    model: str
    call: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class ReplyWarning(FlowEvent):
    """Parts of a model reply were not accepted (``call``: understand, extract, decide);
    ``dropped`` lists their paths, ``message`` says why."""

    type: ClassVar[str] = "warning"
    call: str
    message: str
    dropped: list[str] = field(default_factory=list)
