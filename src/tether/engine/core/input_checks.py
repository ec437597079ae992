"""Turn inputs are checked before anything runs or is saved.

Refused with :class:`~tether.errors.InvalidInputError` (code ``invalid-input``), naming the part of
the input that is wrong:

- a lone surrogate (``"\\ud800"``, which ``json.loads`` accepts from any HTTP client): the text is
  not valid Unicode, so no store could save the session;
- a NUL character: PostgreSQL cannot store it in text or JSON;
- a message longer than :data:`MAX_MESSAGE_CHARS` characters, an id or key longer than
  :data:`MAX_KEY_CHARS`;
- a payload (an event's, a start input, a signal's) nested deeper than :data:`MAX_PAYLOAD_DEPTH`:
  saving, copying and rendering it would exhaust Python's recursion limit mid-turn.

Every other character, control characters included, is accepted and stored as it is.

:func:`check_input` returns the input as a :class:`CheckedInput`: a host that checked an input
(the runtime does, before any session I/O) hands that to the turn, which then does not check it
again; a raw input given to the turn is checked there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.engine.core.inputs import Approval, Event, Message, Signal, Start, TurnInput, Wake
from tether.engine.core.storable import UNSTORABLE
from tether.errors import InvalidInputError

__all__ = ["MAX_KEY_CHARS", "MAX_MESSAGE_CHARS", "MAX_PAYLOAD_DEPTH", "CheckedInput", "check_input", "check_text",
           "check_value", "checked"]

MAX_MESSAGE_CHARS = 100_000
"""The longest customer message a turn accepts, in characters (about 25k tokens)."""
MAX_KEY_CHARS = 512
"""The longest message id, event or start key, or flow id a turn accepts."""
MAX_PAYLOAD_DEPTH = 100
"""The deepest nesting of lists and objects a payload may have."""


@dataclass(frozen=True)
class CheckedInput:
    """A turn input :func:`check_input` accepted (made only by it): ``run_turn`` takes it as it is."""

    input: TurnInput


def check_text(text: str, where: str, limit: int | None = None) -> None:
    """Raise :class:`~tether.errors.InvalidInputError` when ``text`` (named ``where``) is longer
    than ``limit`` characters or holds a character no store can save."""
    if limit is not None and len(text) > limit:
        raise InvalidInputError(f"{where} is {len(text)} characters long; the limit is {limit}", where=where)
    bad = UNSTORABLE.search(text)
    if bad is not None:
        char = bad.group()
        what = "a NUL character" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
        raise InvalidInputError(f"{where} holds {what} at index {bad.start()}; it cannot be stored", where=where)


def check_value(value: Any, where: str) -> None:
    """Raise :class:`~tether.errors.InvalidInputError` when a string inside ``value`` (keys
    included) cannot be stored, or ``value`` is nested deeper than :data:`MAX_PAYLOAD_DEPTH`;
    walked without recursion. ``where`` names it in the error."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            check_text(item, path)
            continue
        if isinstance(item, dict | list | tuple) and depth >= MAX_PAYLOAD_DEPTH:
            raise InvalidInputError(f"{where} is nested deeper than {MAX_PAYLOAD_DEPTH} levels", where=where)
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    check_text(key, f"{path} key {key[:40]!r}")
                stack.append((child, f"{path}[{key!r}]", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))


def checked(input: TurnInput | CheckedInput) -> CheckedInput:
    """``input`` checked: a :class:`CheckedInput` as it is, a raw input through :func:`check_input`."""
    return input if isinstance(input, CheckedInput) else check_input(input)


def check_input(input: TurnInput) -> CheckedInput:
    """``input``, checked; raise :class:`~tether.errors.InvalidInputError` when it cannot be taken
    safely."""
    if isinstance(input, Message):
        if not isinstance(input.text, str):
            raise InvalidInputError(f"message.text must be a string, not {type(input.text).__name__}",
                                    where="message.text")
        check_text(input.text, "message.text", MAX_MESSAGE_CHARS)
        if not input.text.strip():  # nothing said: no turn (it would count as an answer not understood)
            raise InvalidInputError("message.text is empty: a message must say something", where="message.text")
        if input.id is not None:
            check_text(input.id, "message.id", MAX_KEY_CHARS)
    elif isinstance(input, Wake):
        check_text(input.key, "wake.key")  # minted by the engine from other keys: no length limit
    elif isinstance(input, Event):
        check_text(input.name, "event.name", MAX_KEY_CHARS)
        check_text(input.key, "event.key", MAX_KEY_CHARS)
        check_value(input.payload, "event.payload")
    elif isinstance(input, Start):
        check_text(input.flow, "start.flow", MAX_KEY_CHARS)
        check_text(input.key, "start.key", MAX_KEY_CHARS)
        check_value(input.input, "start.input")
    elif isinstance(input, Signal):
        check_text(input.name, "signal.name", MAX_KEY_CHARS)
        if input.id is not None:
            check_text(input.id, "signal.id", MAX_KEY_CHARS)
        check_value(input.payload, "signal.payload")
    elif isinstance(input, Approval):
        check_text(input.approval_id, "approval.approval_id", MAX_KEY_CHARS)
        for text, where in ((input.feedback, "approval.feedback"), (input.decided_by, "approval.decided_by")):
            if text is not None:
                check_text(text, where, MAX_MESSAGE_CHARS)
    return CheckedInput(input)
