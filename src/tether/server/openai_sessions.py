"""Which session an OpenAI-style request belongs to, and what makes its retry the same turn.

In order: the ``X-Tether-Session`` header (an existing session of the caller's tenant); the
response a Responses API request continues (``previous_response_id``); the client's name for the
conversation (``user``, else ``safety_identifier``, else ``prompt_cache_key``: one session per
tenant, agent and name, created on first use, even by many requests at once); else the history
the request replays (see :mod:`tether.server.openai_history`):

- a request with no history before its new message starts a new session (a retry of it, told by
  its ``Idempotency-Key`` or the OpenAI SDKs' ``x-stainless-retry-count`` header, finds the session
  the first attempt made);
- a longer one finds the session whose recorded exchange its history ends with, and is refused
  with 400 when none does (``conversation-unknown``) or when two conversations had that same
  history (``conversation-ambiguous``): the message says what to send instead.

The turn's message id is the ``Idempotency-Key`` header, else a digest of the whole history: the
same history again (a client's retry) is the same message, answered with the recorded reply
instead of running a second turn. A request that names its session with only its new message
(no history) gets no such id: the same text twice there is two messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass

from starlette.requests import Request

from tether.agent import Agent
from tether.engine.core.session import Session
from tether.errors import SessionConflict, StoreError
from tether.runtime.envelope import RunResponse
from tether.runtime.runtime import Runtime
from tether.runtime.window import detach_window
from tether.server.openai_history import Said, digest, history_key
from tether.server.problems import ApiError
from tether.server.views import tenant_of

__all__ = ["SESSION_HEADER", "Resolved", "SessionFinder", "response_key"]

SESSION_HEADER = "X-Tether-Session"

log = logging.getLogger("tether.server")

_ENDED = ("completed", "aborted")

_HOW = ("send the session id (the X-Tether-Session response header) in the X-Tether-Session header, or name the "
        "conversation with `user` (or `safety_identifier`, or `prompt_cache_key`)")


def response_key(tenant: str, response_id: str) -> str:
    """The conversation key of a Responses API response id."""
    return "response:" + digest(tenant, response_id)


@dataclass
class Resolved:
    """The session of a request and how to run and record its turn."""

    session_id: str
    message_id: str | None
    by_history: bool = False
    """The session was found from (or started for) the history: record the reply's key after the turn."""
    created: bool = False
    """This request created the (empty) session document."""
    user_key: str | None = None


class SessionFinder:
    """Resolves the session of OpenAI-style requests over one runtime's store."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def resolve(self, request: Request, agent: Agent, said: list[Said], *, name: str | None = None,
                      previous_response: str | None = None, where: str = "messages") -> Resolved:
        """The session of a request whose conversation is ``said`` (its last item is the new
        message, or, when no item is the user's, the agent is to speak first)."""
        tenant: str = request.state.tenant
        idempotency = request.headers.get("idempotency-key")
        if idempotency is not None and not 0 < len(idempotency) <= 200:
            raise ApiError(422, "invalid-header", "Idempotency-Key: 1 to 200 characters")
        replayed = len(said) > 1
        message_id = idempotency or (f"oa-{digest(tenant, agent.id, _pairs(said))[:40]}" if replayed else None)
        named = request.headers.get(SESSION_HEADER.lower())
        if named is not None:
            doc = await self.runtime.store.load(named)
            if doc is None or doc.agent != agent.id:
                raise ApiError(404, "session-not-found", f"agent {agent.id!r} has no session {named!r}")
            if tenant_of(doc) != tenant:
                raise ApiError(403, "forbidden", f"session {named!r} belongs to another tenant")
            return Resolved(named, message_id)
        if previous_response is not None:
            found = await self.runtime.store.find_conversation(response_key(tenant, previous_response))
            if not found or await self._owned(found, agent, tenant) is None:
                raise ApiError(404, "response-not-found", f"previous_response_id: agent {agent.id!r} gave no "
                               f"response {previous_response!r} (or its session was deleted)")
            if idempotency is None:  # the same input after the same response is a retry
                message_id = f"oa-{digest(tenant, agent.id, previous_response, _pairs(said))[:40]}"
            return Resolved(found, message_id)  # the input is only the new message: no history to record
        if name is not None:
            session_id, user_key = await self._named(agent, tenant, name)
            return Resolved(session_id, message_id, user_key=user_key)
        return await self._by_history(request, agent, tenant, said, idempotency, where)

    async def _by_history(self, request: Request, agent: Agent, tenant: str, said: list[Said],
                          idempotency: str | None, where: str) -> Resolved:
        store = self.runtime.store
        message_id = idempotency or f"oa-{digest(tenant, agent.id, _pairs(said))[:40]}"
        speaks_first = all(s.role != "user" for s in said)
        history = said if speaks_first else said[:-1]
        if not history or speaks_first:  # a new conversation
            first = "first:" + digest(tenant, agent.id, idempotency if idempotency is not None else _pairs(said))
            if idempotency is not None or _retried(request):
                found = await store.find_conversation(first)
                if found and await self._owned(found, agent, tenant) is not None:
                    return Resolved(found, message_id, by_history=True)
            session_id = await self._create(agent, tenant, self.runtime.ids.new_id())
            await store.put_conversation(first, session_id)
            return Resolved(session_id, message_id, by_history=True, created=True)
        found = await store.find_conversation(history_key(tenant, agent.id, history))
        if found == "":
            raise ApiError(400, "conversation-ambiguous",
                           f"{where}: this history ({len(history)} messages before the new one) is the history of "
                           f"more than one conversation with agent {agent.id!r}, so it cannot tell which one this "
                           f"is: {_HOW}")
        if found is None or await self._owned(found, agent, tenant) is None:
            raise ApiError(400, "conversation-unknown",
                           f"{where}: this history ({len(history)} messages before the new one) continues no "
                           f"conversation agent {agent.id!r} had (its replies must be sent back as they were "
                           f"said): {_HOW}; or start a new conversation with only its first message")
        return Resolved(found, message_id, by_history=True)

    async def _named(self, agent: Agent, tenant: str, name: str) -> tuple[str, str]:
        """The session of conversation ``name`` (created on first use) and its key."""
        user_key = "user:" + digest(tenant, agent.id, name)
        moved = await self.runtime.store.find_conversation(user_key)  # the session that followed an ended one
        if moved and (doc := await self._owned(moved, agent, tenant)) is not None and doc.status not in _ENDED:
            return moved, user_key
        # the same tenant, agent and name always map to the same first session
        session_id = "user-" + hashlib.sha256(json.dumps([tenant, agent.id, name]).encode()).hexdigest()[:32]
        if await self.runtime.store.load(session_id) is None:
            await self._create(agent, tenant, session_id)
        return session_id, user_key

    async def _create(self, agent: Agent, tenant: str, session_id: str) -> str:
        doc = Session(id=session_id, agent=agent.id, created_at=self.runtime.clock.now(),
                      metadata={"config": {"tenant": tenant}})
        # a SessionConflict: another request created it at the same moment, and it is the same session
        with contextlib.suppress(SessionConflict):
            await self.runtime.store.create(detach_window(doc))
        return session_id

    async def _owned(self, session_id: str, agent: Agent, tenant: str) -> Session | None:
        doc = await self.runtime.store.load(session_id)
        if doc is None or doc.agent != agent.id or tenant_of(doc) != tenant:
            return None
        return doc

    async def settle(self, request: Request, agent: Agent, resolved: Resolved, said: list[Said],
                     response: RunResponse, *, response_id: str | None = None) -> None:
        """Record what finds this conversation next: the key of the history with its reply, the
        response id, or the session that followed a named one. A failed turn in a session this
        request created and nothing saved leaves no session behind."""
        tenant: str = request.state.tenant
        store = self.runtime.store
        if not response.success:
            if resolved.created:
                await self._drop_empty(resolved.session_id)
            return
        session_id = response.session or resolved.session_id
        if resolved.by_history:
            answered = [*said, Said("assistant", response.message.strip())] if response.message.strip() else said
            await store.put_conversation(history_key(tenant, agent.id, answered), session_id)
        if response_id is not None:
            await store.put_conversation(response_key(tenant, response_id), session_id)
        if resolved.user_key is not None and session_id != resolved.session_id:
            await store.put_conversation(resolved.user_key, session_id)

    async def _drop_empty(self, session_id: str) -> None:
        try:
            await self.runtime.store.delete(session_id, expected_revision=0)
        except SessionConflict:
            pass  # a turn was saved in it after all (a retry's): it stays
        except StoreError:
            log.warning("could not delete the empty session %s after its first turn failed", session_id,
                        exc_info=True)


def _retried(request: Request) -> bool:
    """True when an OpenAI SDK says this request is a retry."""
    count = request.headers.get("x-stainless-retry-count", "0")
    return count.isdigit() and int(count) > 0


def _pairs(said: list[Said]) -> list[list[str]]:
    return [[s.role, s.text] for s in said]
