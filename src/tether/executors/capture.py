"""Bounded capture of a process's output streams.

A :class:`StreamSink` keeps at most ``limit`` bytes in memory and counts the rest, so a process
writing gigabytes can neither exhaust memory nor deadlock on a full pipe: the event loop reads
both pipes concurrently, to the end, into :class:`CaptureProtocol`. Over-limit text ends with a
visible marker, never silently cut.

:class:`CaptureProtocol` also reports the two moments the executor needs separately: the direct
child was reaped (``exited``) and every pipe reached end of file (``closed``). They differ when
a grandchild still holds a pipe open after its parent exited.
"""

from __future__ import annotations

import asyncio
import codecs

__all__ = ["CaptureProtocol", "StreamSink", "truncation_marker"]


def truncation_marker(dropped: int) -> str:
    """The marker appended to text that lost ``dropped`` bytes to the capture limit."""
    return f"\n…[truncated {dropped} bytes]"


class StreamSink:
    """Keeps the first ``limit`` bytes of a stream and counts every byte."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._kept = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Account for ``chunk``, keeping what still fits under the limit."""
        room = self.limit - len(self._kept)
        if room > 0:
            self._kept += chunk[:room]
        self.total += len(chunk)

    @property
    def truncated(self) -> bool:
        """More bytes arrived than were kept."""
        return self.total > len(self._kept)

    def text(self) -> str:
        """The kept bytes as UTF-8 text (invalid bytes replaced), plus the marker if truncated.

        When truncated, a multi-byte character cut in half by the limit is dropped rather than
        rendered as a replacement character.
        """
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(bytes(self._kept), final=not self.truncated)
        if self.truncated:
            text += truncation_marker(self.total - len(self._kept))
        return text


class CaptureProtocol(asyncio.SubprocessProtocol):
    """Feeds stdout/stderr into two sinks and resolves futures on child exit and on pipe close."""

    def __init__(self, limit: int) -> None:
        loop = asyncio.get_running_loop()
        self.stdout = StreamSink(limit)
        self.stderr = StreamSink(limit)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        """Route a chunk of fd 1 or 2 to its sink."""
        (self.stdout if fd == 1 else self.stderr).feed(bytes(data))

    def process_exited(self) -> None:
        """The direct child was reaped (its exit status is on the transport)."""
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        """The child exited and every pipe is closed (or the transport was closed)."""
        if not self.closed.done():
            self.closed.set_result(None)
