"""What a turn writes beside its session document: the append-only records."""

from __future__ import annotations

from tether.engine.results import TurnResult
from tether.stores import TurnRecords, WakeRequest

__all__ = ["turn_records"]


def turn_records(result: TurnResult) -> TurnRecords:
    """The append-only records of a turn: its transcript messages, events, journal entries and wakes.

    Built without validation: the engine made every part as the records' types say (an event
    that is not JSON-able still fails the store's write)."""
    return TurnRecords.model_construct(
        messages=result.new_transcript,
        events=[event.as_dict() for event in result.events],
        journal=result.journal,
        wakes=[WakeRequest(key=w.key, at=w.at, replaces=w.replaces) for w in result.schedule],
        cancel_wakes=[],
    )
