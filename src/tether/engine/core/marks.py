"""What an open-turn mark records of a turn's input, and the input read back from it (the rest of
the mark is ``TurnState.open_mark``; :mod:`tether.engine.turn.continuation` continues such a turn)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tether.engine.core.inputs import Approval, Event, Message, Resume, Signal, Start, TurnInput, Wake

__all__ = ["input_from", "input_mark"]


def input_mark(value: TurnInput) -> dict[str, Any]:
    """What the open-turn mark records of an input (``id`` is what identifies a retry)."""
    if isinstance(value, Message):
        return {"kind": "message", "id": value.id, "text": value.text,
                "at": value.at.isoformat() if value.at else None}
    if isinstance(value, Wake):
        return {"kind": "wake", "id": value.key}
    if isinstance(value, Approval):
        return {"kind": "approval", "id": value.approval_id, "decision": value.decision,
                "feedback": value.feedback, "decided_by": value.decided_by}
    if isinstance(value, Signal):
        return {"kind": "signal", "id": value.id, "name": value.name, "payload": value.payload}
    if isinstance(value, Event):
        return {"kind": "event", "id": value.key or None, "name": value.name, "payload": value.payload,
                "key": value.key, "direction": value.direction, "hop": value.hop}
    if isinstance(value, Start):
        return {"kind": "start", "id": value.key or None, "flow": value.flow, "input": value.input,
                "key": value.key, "hop": value.hop}
    return {"kind": "resume", "id": None}


def input_from(mark: dict[str, Any]) -> TurnInput:
    """The input an open-turn mark recorded (the inverse of :func:`input_mark`)."""
    kind = mark.get("kind")
    if kind == "message":
        at = datetime.fromisoformat(mark["at"]) if mark.get("at") else None
        return Message(str(mark.get("text", "")), id=mark.get("id"), at=at)
    if kind == "wake":
        return Wake(str(mark["id"]))
    if kind == "approval":
        return Approval(str(mark["id"]), str(mark.get("decision")), mark.get("feedback"), mark.get("decided_by"))
    if kind == "signal":
        return Signal(str(mark.get("name")), mark.get("payload"), mark.get("id"))
    if kind == "event":
        return Event(str(mark.get("name")), mark.get("payload"), str(mark.get("key", "")), mark.get("direction"),
                     int(mark.get("hop", 0)))
    if kind == "start":
        return Start(str(mark.get("flow")), mark.get("input"), str(mark.get("key", "")), int(mark.get("hop", 0)))
    return Resume()
