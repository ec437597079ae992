"""Trigger keys for inputs the host did not key.

A run's id, its claim and its message keys derive from the key of the input that started it. A
message without an id, an event without a key and a manual start without a key get one minted
here: never from a millisecond timestamp alone, since two inputs can share a millisecond (the
second start would then be skipped as ``already-claimed``).

- A message: ``<ms>-<seq>``, with ``seq`` the per-session transcript sequence of the customer's
  message. Replaying the same input on the same stored session mints the same key.
- An event or a start: ``<ms>-<id>``, with ``id`` from the ``Ids`` port.
"""

from __future__ import annotations

from tether.engine.core.state import TurnState

__all__ = ["input_key", "message_key"]


def _ms(ts: TurnState) -> int:
    message = ts.message
    at = message.at if message is not None and message.at is not None else ts.now
    return int(at.timestamp() * 1000)


def message_key(ts: TurnState) -> str:
    """The trigger key of this turn's message: its id, else ``<ms>-<seq>``."""
    message = ts.message
    if message is not None and message.id:
        return message.id
    if ts.user_seq is not None:
        return f"{_ms(ts)}-{ts.user_seq}"
    return input_key(ts, "")


def input_key(ts: TurnState, given: str) -> str:
    """The host's key for an event or a start, else ``<ms>-<id>`` from the ``Ids`` port."""
    return given or f"{_ms(ts)}-{ts.ids.new_id()}"
