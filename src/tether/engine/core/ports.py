"""Ports through which the pure engine reaches time and identity.

The engine never reads the wall clock or mints random ids itself: it asks a ``Clock`` and an
``Ids`` that the host injects (``tether.clock`` has the real ones, ``tether.testing`` the fakes).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "Ids"]


@runtime_checkable
class Clock(Protocol):
    """Tells the time. ``now()`` returns an aware UTC datetime."""

    def now(self) -> datetime: ...


@runtime_checkable
class Ids(Protocol):
    """Mints unique ids (session ids, tool call ids)."""

    def new_id(self) -> str: ...
