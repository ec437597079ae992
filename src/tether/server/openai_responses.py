"""``POST /v1/responses``: OpenAI's Responses API for text input and output, streaming included.

``input`` is a text (the user's new message) or a list of message items (``{"role", "content"}``,
content a text or ``input_text``/``output_text`` parts), which is a conversation as on
``/v1/chat/completions``: its last item is the new message, the items before it find the session
when nothing else names it, and with no user item the agent speaks first. ``previous_response_id``
continues the session of that response (the client then sends only the new input). The answer is
a ``response`` object with one assistant ``message`` item; ``stream: true`` answers the Responses
server-sent events (``response.created`` ... ``response.output_text.delta`` ...
``response.completed``, or ``response.failed``). Items other than messages (function calls,
reasoning, files, images) are refused with 400.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tether.runtime.envelope import RunResponse
from tether.server.openai_bodies import ResponsesBody, ignored_parameters
from tether.server.openai_compat import AgentTurn, OpenAIRoutes, failure_response, usage_counts
from tether.server.openai_history import Said, content_text, conversation
from tether.server.problems import ApiError
from tether.server.requests import read_body
from tether.server.sse import StreamedTurn

__all__ = ["ResponsesRoute"]


def _said(body: ResponsesBody) -> list[Said]:
    if isinstance(body.input, str):
        return conversation([("user", body.input)])
    messages: list[tuple[str, str]] = []
    for index, item in enumerate(body.input):
        where = f"input.{index}"
        if not isinstance(item, dict):
            raise ApiError(422, "invalid-body", f"{where}: an input item is an object")
        kind = item.get("type", "message")
        if kind != "message":
            raise ApiError(400, "unsupported-content",
                           f"{where}: tether reads text messages; a {kind!r} item is not supported")
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            raise ApiError(422, "invalid-body", f"{where}.role: 'user', 'assistant', 'system' or 'developer', "
                           f"not {role!r}")
        content = item.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ApiError(422, "invalid-body", f"{where}.content: a text or a list of parts")
        messages.append((role, content_text(content, f"{where}.content")))
    return conversation(messages)


def _usage(response: RunResponse | None) -> dict[str, Any]:
    prompt, completion = usage_counts(response) if response is not None else (0, 0)
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion}


class ResponsesRoute:
    """The handler, over the chat route's sessions and turns."""

    def __init__(self, chat: OpenAIRoutes, *, max_body: int) -> None:
        self.chat = chat
        self.max_body = max_body

    async def create(self, request: Request) -> Response:
        """``POST /v1/responses``: one turn of agent ``tether:<agent>``."""
        body = await read_body(request, ResponsesBody, limit=self.max_body)
        agent = self.chat.agent(body.model)
        body.refuse_unsupported()
        said = _said(body)
        turn = await self.chat.prepare(request, agent, said, name=body.conversation_name(),
                                       ignored=ignored_parameters(body), where="input",
                                       previous_response=body.previous_response_id)
        shape = _Shape(body, f"resp_{uuid.uuid4().hex}", f"msg_{uuid.uuid4().hex}")
        if not body.stream:
            response = await self.chat.run(request, turn, response_id=shape.id) if turn.resolved else None
            if response is not None and not response.success:
                return failure_response(response, turn.headers)
            return JSONResponse(shape.response("completed", response), headers=turn.headers)
        streamed = self.chat.stream(request, turn, response_id=shape.id) if turn.resolved else None
        return StreamingResponse(_events(shape, turn, streamed), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", **turn.headers})


class _Shape:
    """The objects of one response: the ``response``, its message item and its text part."""

    def __init__(self, body: ResponsesBody, response_id: str, item_id: str) -> None:
        self.body = body
        self.id = response_id
        self.item_id = item_id
        self.created = int(time.time())

    def part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def item(self, status: str, text: str | None) -> dict[str, Any]:
        return {"id": self.item_id, "type": "message", "status": status, "role": "assistant",
                "content": [] if text is None else [self.part(text)]}

    def response(self, status: str, turn: RunResponse | None, *, done: bool = True) -> dict[str, Any]:
        failed = turn is not None and not turn.success
        text = turn.message if turn is not None and not failed else ""
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "model": self.body.model, "previous_response_id": self.body.previous_response_id,
            "output": [self.item("completed", text)] if done and not failed else [],
            "error": {"code": turn.code or "turn-failed", "message": turn.message} if failed and turn else None,
            "incomplete_details": None, "instructions": self.body.instructions, "metadata": {},
            "parallel_tool_calls": False, "temperature": None, "top_p": None, "tool_choice": "auto", "tools": [],
            "text": {"format": {"type": "text"}}, "usage": _usage(turn) if done else None,
        }


async def _events(shape: _Shape, turn: AgentTurn, streamed: StreamedTurn | None) -> AsyncIterator[str]:
    sequence = 0

    def event(kind: str, **data: Any) -> str:
        nonlocal sequence
        frame = {"type": kind, "sequence_number": sequence, **data}
        sequence += 1
        return f"event: {kind}\ndata: {json.dumps(frame, separators=(',', ':'))}\n\n"

    where = {"item_id": shape.item_id, "output_index": 0, "content_index": 0}
    yield event("response.created", response=shape.response("in_progress", None, done=False))
    yield event("response.in_progress", response=shape.response("in_progress", None, done=False))
    yield event("response.output_item.added", output_index=0, item=shape.item("in_progress", None))
    yield event("response.content_part.added", **where, part=shape.part(""))
    said = ""
    response: RunResponse | None = None
    if streamed is not None:
        async for piece in streamed:
            said += piece
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        try:
            response = await streamed.response()
        except ApiError as exc:
            failed = shape.response("failed", None, done=False)
            failed["error"] = {"code": exc.code, "message": exc.message}
            yield event("response.failed", response=failed)
            return
    if response is not None and not response.success:
        yield event("response.failed", response=shape.response("failed", response))
        return
    text = response.message if response is not None else ""
    if not said and text:  # a retried or replayed turn: its recorded reply
        yield event("response.output_text.delta", **where, delta=text, logprobs=[])
    yield event("response.output_text.done", **where, text=text, logprobs=[])
    yield event("response.content_part.done", **where, part=shape.part(text))
    yield event("response.output_item.done", output_index=0, item=shape.item("completed", text))
    yield event("response.completed", response=shape.response("completed", response))
