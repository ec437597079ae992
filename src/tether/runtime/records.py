"""What a turn writes beside its session document: the append-only records."""

from __future__ import annotations

from tether.engine.core.results import TurnResult
from tether.stores import TurnRecords, WakeRequest

__all__ = ["turn_records"]


def turn_records(result: TurnResult, *, messages_from: int = 0, events_from: int = 0,
                 journal_from: int = 0) -> TurnRecords:
    """The append-only records of a turn: its transcript messages, events, journal entries and wakes
    (the ``*_from`` first of each left out: what the turn's checkpoints already wrote).

    Built without validation: the engine made every part as the records' types say (an event
    that is not JSON-able still fails the store's write)."""
    return TurnRecords.model_construct(
        messages=result.new_transcript[messages_from:],
        events=[event.as_dict() for event in result.events[events_from:]],
        journal=result.journal[journal_from:],
        wakes=[WakeRequest.model_construct(key=w.key, at=w.at, replaces=w.replaces) for w in result.schedule],
        cancel_wakes=[],
        parts={},  # every field given: model_construct reads a missing factory's signature each call
    )
