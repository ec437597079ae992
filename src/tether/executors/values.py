"""How a bound value becomes environment-variable text (pure: no I/O, shared with workflows)."""

from __future__ import annotations

import json
import math

from pydantic import JsonValue

__all__ = ["stringify_value"]


def stringify_value(value: JsonValue) -> str:
    """The deterministic environment-variable text of a binding value.

    ``str`` as is; ``True``/``False`` -> ``"true"``/``"false"``; ``None`` -> ``""``; ``int`` ->
    decimal; ``float`` -> its shortest round-trip ``repr`` (``1.0``, ``1e+20``); ``dict``/``list``
    -> canonical JSON (sorted keys, ``","``/``":"`` separators, UTF-8 kept). Non-finite floats
    and text containing NUL are rejected with :class:`ValueError`.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} has no canonical form")
        text = repr(value)
    elif isinstance(value, dict | list):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    else:  # pragma: no cover - JsonValue admits nothing else
        raise TypeError(f"cannot stringify {type(value).__name__}")
    if "\x00" in text:
        raise ValueError("value contains a NUL character, which an environment variable cannot hold")
    return text
