"""Streaming what the customer hears: every message of the turn reaches a ``turn_stream`` consumer
as deltas, in order.

The speak reply is an envelope ``{"message": ..., ...fields}``; while it streams, only the
``message`` string's characters are shown (decoded as they arrive). A reply that is plain text
(not JSON) streams as it comes. An engine-rendered message (``response=``, a fixed question, a
fallback) goes out as one delta when it is said, no later than the next model call, checkpoint or
the end of the turn (:class:`ReplyStream`). Messages are separated by a blank line, so the deltas
joined are the turn's ``text``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable

from tether.engine.core.storable import storable_text

__all__ = ["MessageDeltas", "ReplyStream"]

Sink = Callable[[str], Awaitable[None]]
SEPARATOR = "\n\n"
"""Between two messages, as in ``TurnResult.text``."""


class ReplyStream:
    """The turn's outbox to a delta consumer: said messages queue here, streamed replies pass through."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._pending: list[str] = []
        self._started = False  # a message has gone out (the next one needs a separator)
        self._live = False  # the last model call streamed visible text, not yet said

    def said(self, text: str, *, kind: str) -> None:
        """A message was said: queue it, unless it is the reply that just streamed live."""
        if kind == "ai" and self._live:
            self._live = False
            return
        if text:
            self._queue(text)

    def _queue(self, text: str) -> None:
        if self._started:
            self._pending.append(SEPARATOR)
        self._pending.append(text)
        self._started = True

    async def flush(self) -> None:
        """Send what is queued."""
        while self._pending:
            await self._sink(self._pending.pop(0))

    def live(self) -> Sink:
        """A sink for one streamed model call: queued messages first, then a separator before its
        first visible text."""
        self._live = False

        async def send(text: str) -> None:
            text = storable_text(text)
            if not self._live:
                await self.flush()
                if self._started:
                    await self._sink(SEPARATOR)
                self._started = self._live = True
            await self._sink(text)

        return send

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
