"""The HTTP/1.1 protocol ``tether serve`` gives uvicorn without the ``fast`` extra: uvicorn's h11
protocol, with the writes of one step of the event loop sent as one.

uvicorn's h11 protocol writes a response in two pieces, the status line with the headers when the
app sends ``http.response.start`` and the body when it sends ``http.response.body``, and the
event loop's socket transport sends each at once: two ``send`` calls per answer, and a client
woken twice to read it. :class:`CoalescingH11Protocol` hands uvicorn a transport whose ``write``
keeps what is written until the end of the current step of the loop (``call_soon``) and then
writes it all with one call: the head and the body of an answer go out in one ``send``. Nothing
waits for more than that step, the order of the bytes is kept, and closing the transport writes
what is kept first. Everything else of the transport is the loop's own.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["CoalescingH11Protocol", "CoalescingTransport", "fast_installed", "http_protocol", "http_stack"]


class CoalescingTransport:
    """A transport that writes what one step of the loop wrote in one call (see the module)."""

    __slots__ = ("_kept", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._kept: list[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Keep ``data`` until the end of this step of the loop (nothing: written at once, as the
        transport would not send it)."""
        if not data:
            return
        if self._kept is None:
            self._kept = [bytes(data)]
            self._loop.call_soon(self._flush)
        else:
            self._kept.append(bytes(data))

    def _flush(self) -> None:
        kept, self._kept = self._kept, None
        if kept:
            self._transport.write(kept[0] if len(kept) == 1 else b"".join(kept))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def close(self) -> None:
        """Write what is kept, then close."""
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:  # everything else: the transport's own
        return getattr(self._transport, name)


class CoalescingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol on a :class:`CoalescingTransport` (see the module)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]


def fast_installed() -> bool:
    """True when the ``fast`` extra's packages are importable (uvloop needs not be: it has no Windows build)."""
    return importlib.util.find_spec("httptools") is not None


def http_stack() -> str:
    """What serves HTTP, for the start-up lines: the ``fast`` extra's parser and loop, or h11 with
    the hint that installs them (they cost the server less CPU per turn: docs/server.md)."""
    if fast_installed():
        loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
        return f"HTTP on httptools and {loop}"
    return "HTTP on h11 and asyncio (pip install 'tether[fast]' for httptools and uvloop: less CPU per turn)"


def http_protocol() -> Any:
    """The HTTP/1.1 protocol ``tether serve`` gives uvicorn: ``"auto"`` when the ``fast`` extra is
    installed (uvicorn picks httptools'), else :class:`CoalescingH11Protocol`."""
    if fast_installed():
        return "auto"
    return CoalescingH11Protocol
