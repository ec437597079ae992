"""Ports through which the pure engine reaches time, identity and the host's spending limits.

The engine never reads the wall clock or mints random ids itself: it asks a ``Clock`` and an
``Ids`` that the host injects (``tether.clock`` has the real ones, ``tether.testing`` the fakes).
A ``CallBudget`` the host passes in ``TurnOptions.budget`` is asked before every model call.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from tether.engine.core.session import Session
    from tether.models.types import ModelRequest, Usage

__all__ = ["CallBudget", "Clock", "Ids"]


@runtime_checkable
class Clock(Protocol):
    """Tells the time. ``now()`` returns an aware UTC datetime."""

    def now(self) -> datetime: ...


@runtime_checkable
class Ids(Protocol):
    """Mints unique ids (session ids, tool call ids)."""

    def new_id(self) -> str: ...


class CallBudget(Protocol):
    """The host's spending limits, asked around every model call of a turn.

    ``refuse`` answers why the call must not be made (a budget it would exceed), or None: a
    refused call is not made, a ``budget-exceeded`` event is recorded and the step degrades as
    on a provider failure it cannot retry (the customer hears the agent's fixed line).
    ``spent`` is told what each call made cost, on the working session (the host may keep its
    tally in ``session.metadata``: it is saved with the turn)."""

    def refuse(self, session: Session, model: str, request: ModelRequest) -> str | None: ...

    def spent(self, session: Session, model: str, usage: Usage) -> None: ...
