"""``POST /v1/chat/completions`` and ``GET /v1/models``: agents served as OpenAI-style models.

An agent is the model ``tether:<agent id>``. tether keeps the conversation, so only the last
message of ``messages`` is the agent's input (the user's); with no user message at all (a voice
bot that lets the agent speak first) the agent says its opening. The history before the last
message is not replayed to the agent: it finds the session when nothing else names it (see
:mod:`tether.server.openai_sessions`). The response's ``X-Tether-Session`` header names the
session used. ``stream: true`` answers ``chat.completion.chunk`` server-sent events and ``data:
[DONE]``; ``stream_options.include_usage`` adds a last chunk with ``usage``. A failed turn answers
its envelope's status with the standard error body. Parameters: see
:mod:`tether.server.openai_bodies`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tether.agent import Agent
from tether.engine.core.inputs import Event, Message
from tether.errors import StoreError
from tether.runtime.envelope import RunResponse
from tether.runtime.opening import opening
from tether.runtime.runtime import Runtime
from tether.server.busy import BusyGate
from tether.server.openai_bodies import ChatCompletionBody, ignored_parameters
from tether.server.openai_history import Said, content_text, conversation
from tether.server.openai_sessions import SESSION_HEADER, Resolved, SessionFinder
from tether.server.problems import ApiError
from tether.server.requests import read_body
from tether.server.sessions import status_of
from tether.server.sse import StreamedTurn
from tether.server.takeover import takeover_reply

__all__ = ["MODEL_PREFIX", "SESSION_HEADER", "AgentTurn", "OpenAIRoutes", "usage_counts"]

MODEL_PREFIX = "tether:"
IGNORED_HEADER = "X-Tether-Ignored"


def usage_counts(response: RunResponse) -> tuple[int, int]:
    """The turn's prompt and completion tokens: what the provider reported, 0 for a count it did
    not report (and for a turn that called no model)."""
    usage = response.result.usage if response.result is not None else None
    if usage is None:
        return 0, 0
    return usage.prompt_tokens or 0, usage.completion_tokens or 0


def _chat_usage(response: RunResponse) -> dict[str, int]:
    prompt, completion = usage_counts(response)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def failure_response(response: RunResponse, headers: dict[str, str]) -> JSONResponse:
    """A failed turn: the standard error body with the envelope's status."""
    return JSONResponse({"success": False, "code": response.code or "turn-failed", "message": response.message},
                        status_code=status_of(response), headers=headers)


@dataclass
class AgentTurn:
    """One resolved turn of an OpenAI-style request: its session, its input and its headers."""

    agent: Agent
    said: list[Said]
    resolved: Resolved | None
    """None: the agent was asked to speak first and has no opening (nothing runs, no session)."""
    turn_input: Message | Event | None
    headers: dict[str, str]


class OpenAIRoutes:
    """The handlers, bound to one runtime (``tenant`` is set on ``request.state`` by the app)."""

    def __init__(self, runtime: Runtime, busy: BusyGate, *, max_body: int) -> None:
        self.runtime = runtime
        self.busy = busy
        self.max_body = max_body
        self.finder = SessionFinder(runtime)

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: every agent as a model ``tether:<agent>``."""
        return JSONResponse({"object": "list", "data": [
            {"id": MODEL_PREFIX + agent_id, "object": "model", "created": 0, "owned_by": "tether"}
            for agent_id in self.runtime.agents]})

    def agent(self, model: str) -> Agent:
        """The agent served as ``model`` (422 for a name that is not ``tether:<agent>``, 404 for
        an agent not served here)."""
        if not model.startswith(MODEL_PREFIX):
            raise ApiError(422, "invalid-body", f"model: {model!r} is not a tether agent (use 'tether:<agent>')")
        agent_id = model.removeprefix(MODEL_PREFIX)
        agent = self.runtime.agents.get(agent_id)
        if agent is None:
            raise ApiError(404, "agent-not-found", f"model: no agent {agent_id!r} is served here")
        return agent

    async def prepare(self, request: Request, agent: Agent, said: list[Said], *, name: str | None,
                      ignored: list[str], where: str, previous_response: str | None = None) -> AgentTurn:
        """Resolve the session of a request whose conversation is ``said`` and its turn's input."""
        headers = {IGNORED_HEADER: ", ".join(ignored)} if ignored else {}
        speaks_first = all(s.role != "user" for s in said)
        if not speaks_first and said[-1].role != "user":
            raise ApiError(422, "invalid-body", f"{where}: the last message must be the user's (tether keeps the "
                           f"conversation), not the {said[-1].role}'s; to let the agent speak first, send no user "
                           "message")
        if speaks_first and opening(agent) is None:
            return AgentTurn(agent, said, None, None, headers)
        resolved = await self.finder.resolve(request, agent, said, name=name, previous_response=previous_response,
                                             where=where)
        headers[SESSION_HEADER] = resolved.session_id
        turn_input: Message | Event | None
        if speaks_first:
            turn_input = opening(agent, resolved.message_id or "")
        else:
            turn_input = Message(said[-1].text, id=resolved.message_id)
        return AgentTurn(agent, said, resolved, turn_input, headers)

    async def run(self, request: Request, turn: AgentTurn, *, response_id: str | None = None) -> RunResponse:
        """Run ``turn`` to its end (under the agent's ``on_busy``) and record what finds its
        conversation next."""
        assert turn.resolved is not None and turn.turn_input is not None
        resolved = turn.resolved
        admitted = self.busy.admit(turn.agent, resolved.session_id)
        message = turn.turn_input if isinstance(turn.turn_input, Message) else None
        event = turn.turn_input if isinstance(turn.turn_input, Event) else None
        try:
            response = await self.runtime.run(turn.agent.id, message, event=event, session_id=resolved.session_id,
                                              config={"tenant": request.state.tenant}, options=admitted.options)
        finally:
            self.busy.done(resolved.session_id, admitted)
        await self.settle(request, turn, response, response_id=response_id)
        said = await takeover_reply(self.runtime, response)  # a person has the session: what they said
        return response.model_copy(update={"message": said}) if said is not None else response

    def stream(self, request: Request, turn: AgentTurn, *, response_id: str | None = None) -> StreamedTurn:
        """Start ``turn`` as a streamed turn (see :meth:`run`)."""
        assert turn.resolved is not None and turn.turn_input is not None
        resolved = turn.resolved
        admitted = self.busy.admit(turn.agent, resolved.session_id)

        async def after(response: RunResponse) -> RunResponse | None:
            await self.settle(request, turn, response, response_id=response_id)
            said = await takeover_reply(self.runtime, response)  # a person has the session: what they said
            return response.model_copy(update={"message": said}) if said is not None else None

        return StreamedTurn(self.runtime, turn.agent.id, resolved.session_id, turn.turn_input,
                            {"tenant": request.state.tenant}, options=admitted.options,
                            on_done=lambda: self.busy.done(resolved.session_id, admitted), after=after)

    async def settle(self, request: Request, turn: AgentTurn, response: RunResponse, *,
                     response_id: str | None = None) -> None:
        """Record the turn's conversation keys; a store failure there is 503 (the turn is saved:
        the client's retry is the same turn and records them again)."""
        assert turn.resolved is not None
        if response.success and response.session:
            turn.headers[SESSION_HEADER] = response.session
        try:
            await self.finder.settle(request, turn.agent, turn.resolved, turn.said, response,
                                     response_id=response_id)
        except StoreError as exc:
            raise ApiError(503, "SESSION_STORE_ERROR", f"the reply was saved but its conversation could not be "
                           f"recorded ({exc}): send the same request again") from None

    async def completions(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: one turn of agent ``tether:<agent>``."""
        body = await read_body(request, ChatCompletionBody, limit=self.max_body)
        agent = self.agent(body.model)
        body.refuse_unsupported()
        said = conversation((m.role, content_text(m.content, f"messages.{i}.content"))
                            for i, m in enumerate(body.messages))
        turn = await self.prepare(request, agent, said, name=body.conversation_name(),
                                  ignored=ignored_parameters(body), where="messages")
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if not body.stream:
            response = await self.run(request, turn) if turn.resolved is not None else None
            if response is not None and not response.success:
                return failure_response(response, turn.headers)
            answer: dict[str, Any] = {
                "id": completion_id, "object": "chat.completion", "created": created, "model": body.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": _text(response)},
                             "finish_reason": "stop"}],
                "usage": _chat_usage(response) if response is not None else _NO_USAGE}
            return JSONResponse(answer, headers=turn.headers)
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        streamed = self.stream(request, turn) if turn.resolved is not None else None
        chunks = _chunks(streamed, lambda delta, finish=None: _chunk(completion_id, created, body.model, delta,
                                                                     finish, include_usage),
                         lambda usage: _usage_chunk(completion_id, created, body.model, usage) if include_usage
                         else None)
        return StreamingResponse(chunks, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", **turn.headers})


_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _text(response: RunResponse | None) -> str:
    return response.message if response is not None else ""


def _frame(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, separators=(',', ':'))}\n\n"


def _chunk(completion_id: str, created: int, model: str, delta: dict[str, Any], finish: str | None,
           include_usage: bool) -> str:
    data: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if include_usage:
        data["usage"] = None
    return _frame(data)


def _usage_chunk(completion_id: str, created: int, model: str, usage: dict[str, int]) -> str:
    return _frame({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [], "usage": usage})


async def _chunks(turn: StreamedTurn | None, chunk: Callable[..., str],
                  usage_chunk: Callable[[dict[str, int]], str | None]) -> AsyncIterator[str]:
    yield chunk({"role": "assistant", "content": ""})
    said = False
    response: RunResponse | None = None
    if turn is not None:
        async for piece in turn:
            said = True
            yield chunk({"content": piece})
        try:
            response = await turn.response()
        except ApiError as exc:
            yield _frame({"error": {"message": exc.message, "code": exc.code, "type": "tether_error"}})
            yield "data: [DONE]\n\n"
            return
    if response is not None and not response.success:
        yield _frame({"error": {"message": response.message, "code": response.code, "type": "tether_error"}})
    else:
        if response is not None and not said and response.message:  # a retried or replayed turn: its recorded reply
            yield chunk({"content": response.message})
        yield chunk({}, "stop")
        usage = usage_chunk(_chat_usage(response) if response is not None else _NO_USAGE)
        if usage is not None:
            yield usage
    yield "data: [DONE]\n\n"
