"""Streaming the speak call: turn a stream of raw reply chunks into the customer-visible text.

The speak reply is an envelope ``{"message": ..., ...fields}``; while it streams, only the
``message`` string's characters are shown (decoded as they arrive). A reply that is plain text
(not JSON) streams as it comes.
"""

from __future__ import annotations

import json
import re

__all__ = ["MessageDeltas"]

_MESSAGE_KEY = re.compile(r'"message"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class MessageDeltas:
    """Feed raw chunks; get back the newly visible message text."""

    def __init__(self) -> None:
        self._buffer = ""
        self._mode: str | None = None  # "json" or "text"
        self._cursor: int | None = None  # position in the buffer inside the message string
        self._done = False

    def feed(self, chunk: str) -> str:
        self._buffer += chunk
        if self._mode is None:
            stripped = self._buffer.lstrip()
            if not stripped:
                return ""
            if stripped.startswith("```"):
                if "\n" not in stripped:
                    return ""
                stripped = stripped.split("\n", 1)[1].lstrip()
                if not stripped:
                    return ""
            self._mode = "json" if stripped.startswith("{") else "text"
            if self._mode == "text":
                return self._buffer
        if self._mode == "text":
            return chunk
        return self._json_delta()

    def _json_delta(self) -> str:
        if self._done:
            return ""
        if self._cursor is None:
            match = _MESSAGE_KEY.search(self._buffer)
            if match is None:
                return ""
            self._cursor = match.end()
        out: list[str] = []
        i = self._cursor
        text = self._buffer
        while i < len(text):
            ch = text[i]
            if ch == '"':
                self._done = True
                i += 1
                break
            if ch == "\\":
                if i + 1 >= len(text):
                    break
                code = text[i + 1]
                if code == "u":
                    if i + 6 > len(text):
                        break
                    try:
                        out.append(json.loads(f'"{text[i:i + 6]}"'))
                    except ValueError:
                        out.append(text[i:i + 6])
                    i += 6
                    continue
                out.append(_ESCAPES.get(code, code))
                i += 2
                continue
            out.append(ch)
            i += 1
        self._cursor = i
        return "".join(out)
