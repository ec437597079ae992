"""``POST /v1/chat/completions`` and ``GET /v1/models``: agents served as OpenAI-style models.

An agent is the model ``tether:<agent id>``. tether keeps the conversation, so only the last
message of ``messages`` is sent (it must be the user's); the history the client sends is not
replayed. The session is, in order: the ``X-Tether-Session`` header (an existing session of the
caller's tenant), else the ``user`` field (one session per tenant, agent and user, created on first
use), else a new session per request. The response's ``X-Tether-Session`` header names the
session used. ``stream: true`` answers ``chat.completion.chunk`` server-sent events and
``data: [DONE]``. A failed turn answers its envelope's status with the standard error body.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tether.agent import Agent
from tether.engine.core.inputs import Message
from tether.engine.core.session import Session
from tether.runtime.envelope import RunResponse
from tether.runtime.runtime import Runtime
from tether.runtime.window import detach_window
from tether.server.bodies import ChatCompletionBody
from tether.server.busy import BusyGate
from tether.server.problems import ApiError
from tether.server.requests import read_body
from tether.server.sessions import status_of
from tether.server.sse import StreamedTurn
from tether.server.takeover import takeover_reply
from tether.server.views import tenant_of

__all__ = ["MODEL_PREFIX", "OpenAIRoutes"]

MODEL_PREFIX = "tether:"
SESSION_HEADER = "X-Tether-Session"


def _user_text(body: ChatCompletionBody) -> str:
    last = body.messages[-1]
    if last.role != "user":
        raise ApiError(422, "invalid-body", f"messages.{len(body.messages) - 1}.role: the last message must be the "
                       f"user's (tether keeps the conversation), not {last.role!r}")
    if isinstance(last.content, str):
        return last.content
    parts = [part.get("text") for part in last.content or [] if part.get("type") == "text"]
    if not parts or not all(isinstance(text, str) for text in parts):
        raise ApiError(422, "invalid-body", f"messages.{len(body.messages) - 1}.content: no text part")
    return "\n".join(str(text) for text in parts)


def _usage(response: RunResponse) -> dict[str, int] | None:
    """The turn's token usage when the provider reported both counts (never a made-up zero)."""
    usage = response.result.usage if response.result is not None else None
    if usage is None or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def _failure(response: RunResponse) -> JSONResponse:
    return JSONResponse({"success": False, "code": response.code or "turn-failed", "message": response.message},
                        status_code=status_of(response), headers={SESSION_HEADER: response.session})


class OpenAIRoutes:
    """The handlers, bound to one runtime (``tenant`` is set on ``request.state`` by the app)."""

    def __init__(self, runtime: Runtime, busy: BusyGate, *, max_body: int) -> None:
        self.runtime = runtime
        self.busy = busy
        self.max_body = max_body

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: every agent as a model ``tether:<agent>``."""
        return JSONResponse({"object": "list", "data": [
            {"id": MODEL_PREFIX + agent_id, "object": "model", "created": 0, "owned_by": "tether"}
            for agent_id in self.runtime.agents]})

    def _agent(self, model: str) -> Agent:
        if not model.startswith(MODEL_PREFIX):
            raise ApiError(422, "invalid-body", f"model: {model!r} is not a tether agent (use 'tether:<agent>')")
        agent_id = model.removeprefix(MODEL_PREFIX)
        agent = self.runtime.agents.get(agent_id)
        if agent is None:
            raise ApiError(404, "agent-not-found", f"model: no agent {agent_id!r} is served here")
        return agent

    async def _session(self, request: Request, agent: Agent, user: str | None) -> str:
        """The session id of the request (created for a new ``user``)."""
        tenant: str = request.state.tenant
        named = request.headers.get(SESSION_HEADER.lower())
        if named is not None:
            doc = await self.runtime.store.load(named)
            if doc is None or doc.agent != agent.id:
                raise ApiError(404, "session-not-found", f"agent {agent.id!r} has no session {named!r}")
            if tenant_of(doc) != tenant:
                raise ApiError(403, "forbidden", f"session {named!r} belongs to another tenant")
            return named
        if user is None:
            session_id = self.runtime.ids.new_id()
        else:  # the same tenant, agent and user always map to the same session
            digest = hashlib.sha256(json.dumps([tenant, agent.id, user]).encode()).hexdigest()[:32]
            session_id = f"user-{digest}"
            if await self.runtime.store.load(session_id) is not None:
                return session_id
        doc = Session(id=session_id, agent=agent.id, created_at=self.runtime.clock.now(),
                      metadata={"config": {"tenant": tenant}})
        await self.runtime.store.create(detach_window(doc))
        return session_id

    async def completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: one turn of agent ``tether:<agent>``."""
        body = await read_body(request, ChatCompletionBody, limit=self.max_body)
        agent = self._agent(body.model)
        text = _user_text(body)
        session_id = await self._session(request, agent, body.user)
        admitted = self.busy.admit(agent, session_id)
        config = {"tenant": request.state.tenant}
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if not body.stream:
            try:
                response = await self.runtime.run(agent.id, Message(text), session_id=session_id, config=config,
                                                  options=admitted.options)
            finally:
                self.busy.done(session_id, admitted)
            if not response.success:
                return _failure(response)
            content = await takeover_reply(self.runtime, response) or response.message  # a person's answer
            answer: dict[str, Any] = {
                "id": completion_id, "object": "chat.completion", "created": created, "model": body.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}]}
            if (usage := _usage(response)) is not None:
                answer["usage"] = usage
            return JSONResponse(answer, headers={SESSION_HEADER: response.session or session_id})

        turn = StreamedTurn(self.runtime, agent.id, session_id, Message(text), config, options=admitted.options,
                            on_done=lambda: self.busy.done(session_id, admitted))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            data = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": body.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"

        async def chunks() -> AsyncIterator[str]:
            yield chunk({"role": "assistant", "content": ""})
            said = False
            async for piece in turn:
                said = True
                yield chunk({"content": piece})
            response = await turn.response()
            if not response.success:
                error = {"message": response.message, "code": response.code, "type": "tether_error"}
                yield f"data: {json.dumps({'error': error})}\n\n"
            else:
                # a retried or replayed turn: its recorded reply; a quiet turn: what a person said
                text = "" if said else await takeover_reply(self.runtime, response) or response.message
                if text:
                    yield chunk({"content": text})
                yield chunk({}, "stop")
            yield "data: [DONE]\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", SESSION_HEADER: session_id})
