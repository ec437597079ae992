"""The lean path of the message routes: ``POST /v1/agents/{agent}/messages`` and
``POST /v1/agents/{agent}/sessions/{session_id}/messages`` answered as plain ASGI.

These two routes carry a conversation's turns, so what the server spends around the turn counts
on every one: Starlette's router, its ``Request`` and response objects, the headers read one by
one, the body parsed and the envelope dumped to a dict and then to JSON. :class:`MessageFastPath`
sits in front of the router and answers a JSON message turn itself: the path split once, the
headers read in one pass, the body read off ``receive``, and the envelope serialised in one step.
It calls the same functions as the routes (``KeyRing.tenant``, ``parse_body``, ``message_of``,
``SessionRoutes.message_turn`` / ``first_turn``, ``error_answer``), so the answers, errors and
logs are the same. Whatever it does not take (another route or method, an unknown agent, a key
that is refused, ``Accept: text/event-stream``, an agent whose ``on_busy`` is not ``queue``) goes
on to the router untouched, and the OpenAPI document still describes the routes there.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.agent import Agent
from tether.server.auth import KeyRing
from tether.server.bodies import MessageBody
from tether.server.problems import ApiError, error_answer, status_of
from tether.server.requests import body_too_large, parse_body
from tether.server.sessions import SessionRoutes, envelope_json, message_of

__all__ = ["MessageFastPath"]

_JSON = b"application/json"


def _route_path(scope: Scope) -> str:
    """The path the router matches (``root_path`` taken off, as Starlette's router does)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root):] if path[len(root)] == "/" else path


class MessageFastPath:
    """ASGI middleware answering JSON message turns before the router (see the module)."""

    def __init__(self, app: ASGIApp, *, routes: SessionRoutes, keys: KeyRing, max_body: int) -> None:
        self.app = app
        self.routes = routes
        self.keys = keys
        self.max_body = max_body

    def _target(self, scope: Scope) -> tuple[Agent, str | None] | None:
        """The agent and session (None: a first message) of a message route this path answers."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return None
        parts = _route_path(scope).split("/")
        # "", "v1", "agents", agent, "messages"  or  "", "v1", "agents", agent, "sessions", id, "messages"
        if len(parts) not in (5, 7) or parts[-1] != "messages" or parts[0] or parts[1] != "v1" \
                or parts[2] != "agents" or not parts[3]:
            return None
        agent = self.routes.runtime.agents.get(parts[3])
        if agent is None:
            return None
        if len(parts) == 5:
            return agent, None
        if parts[4] != "sessions" or not parts[5] or agent.on_busy != "queue":
            return None
        return agent, parts[5]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = self._target(scope)
        if target is None:
            await self.app(scope, receive, send)
            return
        authorization = api_key = idempotency_key = accept = length = None
        for name, value in scope["headers"]:  # the first of each, as Starlette's Headers.get
            if name == b"authorization":
                authorization = authorization if authorization is not None else value.decode("latin-1")
            elif name == b"x-api-key":
                api_key = api_key if api_key is not None else value.decode("latin-1")
            elif name == b"idempotency-key":
                idempotency_key = idempotency_key if idempotency_key is not None else value.decode("latin-1")
            elif name == b"accept":
                accept = accept if accept is not None else value
            elif name == b"content-length":
                length = length if length is not None else value.decode("latin-1")
        if accept is not None and b"text/event-stream" in accept:
            await self.app(scope, receive, send)  # a stream: the route's own answer
            return
        try:
            tenant = self.keys.tenant(authorization, api_key)
        except ApiError:
            await self.app(scope, receive, send)  # the route answers 401, as for every other route
            return
        agent, session_id = target
        try:
            message = message_of(idempotency_key, parse_body(await self._body(receive, length), MessageBody))
            if session_id is None:
                response = await self.routes.first_turn(agent, message, tenant)
            else:
                response = await self.routes.message_turn(agent, session_id, message, tenant)
        except Exception as exc:
            await error_answer(exc, scope["method"], Request(scope).url.path)(scope, receive, send)
            return
        data = envelope_json(response)
        await send({"type": "http.response.start", "status": status_of(response),
                    "headers": [(b"content-length", str(len(data)).encode()), (b"content-type", _JSON)]})
        await send({"type": "http.response.body", "body": data})

    async def _body(self, receive: Receive, declared: str | None) -> bytes:
        """The whole body, under the limit (413 ``body-too-large``); a client that leaves first
        raises ``ClientDisconnect``."""
        limit = self.max_body
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise body_too_large(limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            if message["type"] != "http.request":  # as Starlette's Request.stream: not the body
                continue
            chunk: Any = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    raise body_too_large(limit)
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
