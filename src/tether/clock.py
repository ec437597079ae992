"""The real clock and id source, for hosts. Tests use ``tether.testing.FakeClock``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

__all__ = ["SystemClock", "UuidIds"]


class SystemClock:
    """The system time, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class UuidIds:
    """Random UUID v4 strings."""

    def new_id(self) -> str:
        return str(uuid.uuid4())
