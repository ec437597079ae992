"""Server-sent events for a message request with ``Accept: text/event-stream``.

The stream is: ``delta`` events (``{"text": ...}``) as the turn says its text (the speak call's
reply as the model streams it; an engine-rendered message in one piece; messages separated by a
blank line), then one ``event`` event per event the turn recorded, then one ``envelope`` event with
the seed 004 envelope, and the stream ends. The envelope's ``message`` is authoritative: a retried
message id answers with the recorded reply and no deltas, and a compare-and-swap replay says its
text again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from tether.engine.core.inputs import Event, Message, TurnOptions
from tether.runtime.envelope import RunResponse
from tether.runtime.runtime import Runtime
from tether.server.views import envelope

__all__ = ["StreamedTurn", "format_event", "stream_turn", "wants_stream"]


def wants_stream(request: Request) -> bool:
    """True when the client accepts ``text/event-stream``."""
    return "text/event-stream" in request.headers.get("accept", "")


def format_event(kind: str, data: Any, event_id: int | None = None) -> str:
    """One SSE frame: ``event:``, optional ``id:``, and the JSON ``data:`` line."""
    head = f"event: {kind}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head + f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


_running: set[asyncio.Future[RunResponse]] = set()


class StreamedTurn:
    """One message (or event) turn, started at once, whose text deltas are read with ``async for``
    and whose envelope is ``response``. A client that goes away does not stop it: it runs to its
    end and is saved, then ``after`` is awaited with its envelope (an envelope it returns replaces
    it); ``on_done`` is called when it ends."""

    def __init__(self, runtime: Runtime, agent_id: str, session_id: str | None, message: Message | Event,
                 config: Mapping[str, Any], *, options: TurnOptions | None = None,
                 on_done: Callable[[], None] | None = None,
                 after: Callable[[RunResponse], Awaitable[RunResponse | None]] | None = None) -> None:
        self._deltas: asyncio.Queue[str] = asyncio.Queue()

        async def put(text: str) -> None:
            await self._deltas.put(text)

        async def run() -> RunResponse:  # ``after`` runs even when the client has gone
            response = await runtime.run(agent_id, message if isinstance(message, Message) else None,
                                         event=message if isinstance(message, Event) else None,
                                         session_id=session_id, config=config, options=options, on_delta=put)
            if after is not None:  # it may answer another envelope (what a person said, on a quiet turn)
                response = await after(response) or response
            return response

        self._turn = asyncio.ensure_future(run())
        _running.add(self._turn)
        self._turn.add_done_callback(_running.discard)
        if on_done is not None:
            self._turn.add_done_callback(lambda _: on_done())

    async def __aiter__(self) -> AsyncIterator[str]:
        turn, deltas = self._turn, self._deltas
        while not turn.done() or not deltas.empty():
            getter = asyncio.ensure_future(deltas.get())
            try:
                await asyncio.wait({getter, turn}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                yield getter.result()

    async def response(self) -> RunResponse:
        """The turn's envelope (waits for the turn)."""
        return await self._turn


def stream_turn(runtime: Runtime, agent_id: str, session_id: str, message: Message, config: Mapping[str, Any], *,
                options: TurnOptions | None = None, on_done: Callable[[], None] | None = None) -> StreamingResponse:
    """The SSE response of one message turn (see :class:`StreamedTurn`)."""
    turn = StreamedTurn(runtime, agent_id, session_id, message, config, options=options, on_done=on_done)

    async def frames() -> AsyncIterator[str]:
        async for text in turn:
            yield format_event("delta", {"text": text})
        response = await turn.response()
        result = response.result
        if result is not None:
            for event in result.events:
                yield format_event("event", event.as_dict())
        yield format_event("envelope", envelope(response))

    return StreamingResponse(frames(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})
