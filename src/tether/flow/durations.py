"""Durations: a number and a unit, ``s``, ``m``, ``h`` or ``d`` (decimals allowed: ``"1.5d"``)."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["Duration", "parse_duration"]

Duration = str | timedelta
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: Duration) -> timedelta:
    """Parse ``"10s"``, ``"5m"``, ``"1.5d"``...; a ``timedelta`` passes through.

    Raises:
        ValueError: anything else, naming the value.
    """
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError(f"duration must not be negative: {value!r}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"not a duration: {value!r} (expected a string like '10s', '5m', '2h', '1.5d')")
    match = _DURATION.match(value.strip())
    if not match:
        raise ValueError(f"not a duration: {value!r} (expected a number and one of s, m, h, d, like '1.5d')")
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
