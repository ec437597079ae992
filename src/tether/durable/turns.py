"""The mark an unfinished turn leaves on the session document.

Every mid-turn write (a cross-node checkpoint, an effect's started or result record) stores the
working session with an :class:`OpenTurn`: what the turn was answering and how far its
bookkeeping had got. The final save of the turn clears it. A document loaded with a mark was
written by a turn that never finished (its worker crashed, or its final save lost a
compare-and-swap): that turn is *continued*, never restarted and never inherited by another
input (see :mod:`tether.engine.turn.continuation`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OpenTurn", "SaidMessage", "SpeakerMark"]

_STRICT = ConfigDict(extra="forbid")


class SaidMessage(BaseModel):
    """A message the unfinished turn already sent (it is part of that turn's reply)."""

    model_config = _STRICT

    text: str
    kind: Literal["ai", "verbatim"]
    key: str
    run_id: str | None = None
    node_id: str | None = None
    after_ms: int = 0


class SpeakerMark(BaseModel):
    """The turn's chosen speaker, when one was chosen before the write."""

    model_config = _STRICT

    run_id: str | None = None
    node_id: str | None = None
    fields: list[str] = Field(default_factory=list)
    then_ask: str | None = None
    batch: list[str] = Field(default_factory=list)


class OpenTurn(BaseModel):
    """An unfinished turn.

    Attributes:
        input: what the turn answers: ``{"kind": "message", "text", "id", "at"}``, ``{"kind":
            "wake", "key"}``, ``{"kind": "approval", "id", ...}``, ``{"kind": "signal", ...}``...
        at: the turn's time (the continuation keeps it, so keys derived from it do not move).
        user_seq: the transcript seq of the turn's user message.
        floor, floor_taken, consumed_by, answered_by, spoke, speaker: the turn's bookkeeping.
        said: the messages already sent.
        schedule: wakes the turn asked for so far (``{"key", "at", "replaces"}``).
    """

    model_config = _STRICT

    input: dict[str, Any]
    at: datetime
    user_seq: int | None = None
    floor: str | None = None
    floor_taken: bool = False
    consumed_by: dict[str, str] = Field(default_factory=dict)
    answered_by: list[str] = Field(default_factory=list)
    spoke: bool = False
    speaker: SpeakerMark | None = None
    said: list[SaidMessage] = Field(default_factory=list)
    schedule: list[dict[str, Any]] = Field(default_factory=list)

    def answers(self, kind: str, ident: str | None) -> bool:
        """True when an input of ``kind`` with id ``ident`` is this turn's own input (a retry)."""
        return ident is not None and self.input.get("kind") == kind and self.input.get("id") == ident
