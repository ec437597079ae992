"""The session event stream: ``GET .../sessions/{id}/stream`` as server-sent events.

Each event record of the session (the items ``GET .../events`` pages through) is one SSE frame:
``id: <seq>``, ``event: <type>``, ``data: <the record's JSON>``. The stream first replays the
records after the cursor (``Last-Event-ID`` or ``?after=``), then sends new ones as they are
committed: a turn of this process wakes it at once (``Runtime.commits``); another process's turn
is picked up by re-reading the store every ``poll`` seconds. A ``: keepalive`` comment goes out
every ``keepalive`` seconds, and the stream ends when the session is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import StreamingResponse

from tether.runtime.runtime import Runtime
from tether.server.problems import ApiError
from tether.server.sse import format_event
from tether.server.views import event_view

__all__ = ["KEEPALIVE", "POLL", "close_streams", "event_stream", "stream_cursor"]

KEEPALIVE = 15.0
"""Seconds between ``: keepalive`` comments."""

MAX_SEQ = 2**63 - 1
"""The largest event seq a store can hold (a signed 64-bit integer in SQLite and PostgreSQL)."""

POLL = 1.0
"""Seconds between re-reads of the store (for turns committed by other processes)."""

_closing = threading.Event()


def close_streams() -> None:
    """End every event stream of this process within :data:`POLL` seconds: called when the server
    begins to shut down, which waits for open connections to close (an inspector tab would
    otherwise hold a deploy until it is killed, turns in flight with it)."""
    _closing.set()


def stream_cursor(request: Request) -> int:
    """The seq to resume after: ``Last-Event-ID`` (what a reconnecting browser sends), else
    ``?after=``, else 0. 422 ``invalid-query`` when it is not a non-negative integer."""
    header = request.headers.get("last-event-id")
    text, where = (header, "Last-Event-ID") if header is not None else (request.query_params.get("after"), "after")
    if text is None or not text.strip():
        return 0
    try:
        value = int(text)
    except ValueError:
        raise ApiError(422, "invalid-query", f"{where} must be an event seq (an integer), not {text!r}") from None
    if not 0 <= value <= MAX_SEQ:
        raise ApiError(422, "invalid-query", f"{where} must be an event seq between 0 and {MAX_SEQ}")
    return value


def event_stream(runtime: Runtime, session_id: str, after: int, *, poll: float = POLL,
                 keepalive: float = KEEPALIVE) -> StreamingResponse:
    """The SSE response streaming the event records of ``session_id`` after seq ``after``."""

    async def frames() -> AsyncIterator[str]:
        cursor = after
        quiet_since = time.monotonic()
        woken = False
        with runtime.commits.watch(session_id) as committed:
            while not _closing.is_set():
                committed.clear()
                records = await runtime.store.events(session_id, after=cursor)
                for record in records:
                    yield format_event(record.type, event_view(record), record.seq)
                    cursor = record.seq
                now = time.monotonic()
                due = now - quiet_since >= keepalive
                if records:
                    quiet_since = now
                elif (woken or due) and await runtime.store.load(session_id) is None:
                    return  # deleted: nothing more will come
                elif due:
                    yield ": keepalive\n\n"
                    quiet_since = now
                wait = min(poll, max(0.0, keepalive - (time.monotonic() - quiet_since)))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(committed.wait(), timeout=wait)
                woken = committed.is_set()

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)
