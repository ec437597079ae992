"""Server-sent events for a message request with ``Accept: text/event-stream``.

The stream is: one ``delta`` event per message the turn said (``{"text": ...}``), one ``event``
event per event the turn recorded, then one ``envelope`` event with the seed 004 envelope, and
the stream ends. This first version runs the turn to its end before sending (the runtime has no
delta hook yet), so a delta is a whole message, not a token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from tether.engine.inputs import Message
from tether.runtime.runtime import Runtime
from tether.server.views import envelope

__all__ = ["format_event", "stream_turn", "wants_stream"]


def wants_stream(request: Request) -> bool:
    """True when the client accepts ``text/event-stream``."""
    return "text/event-stream" in request.headers.get("accept", "")


def format_event(kind: str, data: Any, event_id: int | None = None) -> str:
    """One SSE frame: ``event:``, optional ``id:``, and the JSON ``data:`` line."""
    head = f"event: {kind}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head + f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


def stream_turn(runtime: Runtime, agent_id: str, session_id: str, message: Message,
                config: Mapping[str, Any]) -> StreamingResponse:
    """The SSE response of one message turn."""

    async def frames() -> AsyncIterator[str]:
        response = await runtime.run(agent_id, message, session_id=session_id, config=config)
        result = response.result
        if result is not None:
            for said in result.messages:
                yield format_event("delta", {"text": said.text})
            for event in result.events:
                yield format_event("event", event.as_dict())
        yield format_event("envelope", envelope(response))

    return StreamingResponse(frames(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})
