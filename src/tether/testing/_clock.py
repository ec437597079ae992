"""A clock and an id source that tests control."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tether.flow.durations import parse_duration as parse_flow_duration

__all__ = ["FakeClock", "SequentialIds", "parse_duration"]

def parse_duration(value: str | int | float | timedelta) -> timedelta:
    """A duration string (``"24h"``), a number of milliseconds, or a timedelta."""
    if isinstance(value, int | float):
        return timedelta(milliseconds=value)
    return parse_flow_duration(value)


def _parse_iso(value: str) -> datetime:
    at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return at if at.tzinfo else at.replace(tzinfo=UTC)


class FakeClock:
    """A clock that only moves when told to.

    >>> clock = FakeClock("2026-01-05T09:00:00Z")
    >>> clock.advance("24h")
    """

    def __init__(self, start: str | datetime = "2026-01-05T09:00:00Z") -> None:
        self._now = _parse_iso(start) if isinstance(start, str) else start

    def now(self) -> datetime:
        return self._now

    def advance(self, by: str | int | float | timedelta) -> datetime:
        """Move forward by a duration (``"24h"``, milliseconds, or a timedelta)."""
        self._now += parse_duration(by)
        return self._now

    def set(self, at: str | datetime) -> None:
        """Jump to an instant."""
        self._now = _parse_iso(at) if isinstance(at, str) else at


class SequentialIds:
    """Ids ``prefix-1``, ``prefix-2``, ... in order."""

    def __init__(self, prefix: str = "id") -> None:
        self._prefix = prefix
        self._n = 0

    def new_id(self) -> str:
        self._n += 1
        return f"{self._prefix}-{self._n}"
