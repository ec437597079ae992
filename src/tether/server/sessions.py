"""The session routes: create, message, read, transcript, events, delete and the host operations
(events, approvals, signals, release). Every route scopes the session to the caller's tenant."""

from __future__ import annotations

from typing import Any, get_args

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.agent import Agent
from tether.engine.core.input_checks import check_input
from tether.engine.core.inputs import Event, Message, Start
from tether.engine.core.session import Session, SessionStatus
from tether.errors import InvalidInputError
from tether.runtime.envelope import RunResponse, failure
from tether.runtime.runtime import Runtime
from tether.runtime.window import detach_window
from tether.server.bodies import ApprovalBody, EventBody, MessageBody, SignalBody, StartBody
from tether.server.busy import Admitted, BusyGate
from tether.server.problems import ApiError, status_of, status_of_code
from tether.server.requests import next_cursor, page_cursor, query_int, read_body
from tether.server.sse import stream_turn, wants_stream
from tether.server.stream import KEEPALIVE, POLL, event_stream, stream_cursor
from tether.server.views import envelope, event_view, message_view, session_state, tenant_of

__all__ = ["SessionRoutes", "answer", "envelope_json", "message_of", "status_of", "status_of_code"]

def message_of(idempotency_key: str | None, body: MessageBody) -> Message:
    """The message of a request: its text, with the ``Idempotency-Key`` header (or the body's
    ``id``) as its id."""
    if idempotency_key is not None and body.id is not None and idempotency_key != body.id:
        raise ApiError(422, "invalid-body", "id: differs from the Idempotency-Key header")
    return Message(body.text, id=idempotency_key or body.id)


def _message(request: Request, body: MessageBody) -> Message:
    return message_of(request.headers.get("idempotency-key"), body)


def envelope_json(response: RunResponse) -> bytes:
    """The envelope as JSON bytes (what ``JSONResponse(envelope(response))`` sends, serialised in
    one step)."""
    return response.model_dump_json().encode()


def answer(response: RunResponse) -> Response:
    """The envelope as a JSON response with its status."""
    return Response(envelope_json(response), status_of(response), media_type="application/json")


class SessionRoutes:
    """The handlers, bound to one runtime; ``tenant`` is set on ``request.state`` by the app."""

    def __init__(self, runtime: Runtime, *, max_body: int, stream_poll: float = POLL,
                 stream_keepalive: float = KEEPALIVE) -> None:
        self.runtime = runtime
        self.max_body = max_body
        self.stream_poll = stream_poll
        self.stream_keepalive = stream_keepalive
        self.busy = BusyGate(runtime)

    def _agent(self, request: Request) -> Agent:
        agent_id = request.path_params["agent"]
        agent = self.runtime.agents.get(agent_id)
        if agent is None:
            raise ApiError(404, "agent-not-found", f"no agent {agent_id!r} is served here")
        return agent

    async def session_of(self, request: Request) -> tuple[Agent, Session]:
        """The agent and the stored session of the path, owned by the caller's tenant."""
        agent = self._agent(request)
        session_id = request.path_params["session_id"]
        doc = await self.runtime.store.load(session_id)
        self._check(agent, session_id, doc, request.state.tenant)
        assert doc is not None
        return agent, doc

    @staticmethod
    def _check(agent: Agent, session_id: str, doc: Session | None, tenant: str) -> None:
        """Raise 404 when ``doc`` is not a session of ``agent``, 403 when another tenant owns it."""
        if doc is None or doc.agent != agent.id:
            raise ApiError(404, "session-not-found", f"agent {agent.id!r} has no session {session_id!r}")
        if tenant_of(doc) != tenant:
            raise ApiError(403, "forbidden", f"session {session_id!r} belongs to another tenant")

    async def create(self, request: Request) -> Response:
        """``POST /v1/agents/{agent}/sessions``: a new session of the caller's tenant; with ``flow``
        the flow is started at once and its reply is in ``reply``."""
        agent = self._agent(request)
        body = await read_body(request, StartBody, limit=self.max_body, optional=True)
        if body.flow is not None and body.flow not in agent.flows_by_id:
            raise ApiError(422, "invalid-body", f"flow: agent {agent.id!r} has no flow {body.flow!r}")
        start = Start(body.flow, body.input, body.key) if body.flow is not None else None
        if start is not None:
            try:
                check_input(start)  # a start the turn would refuse leaves no empty session behind
            except InvalidInputError as exc:
                raise ApiError(422, "invalid-input", str(exc)) from None
        runtime = self.runtime
        doc = Session(id=runtime.ids.new_id(), agent=agent.id, created_at=runtime.clock.now(),
                      metadata={"config": {"tenant": request.state.tenant}})
        await runtime.store.create(detach_window(doc))
        result: dict[str, Any] = {"session": doc.id, "agent": agent.id, "status": doc.status, "reply": None}
        if start is not None:
            response = await runtime.run(agent.id, start=start, session_id=doc.id,
                                         config={"tenant": request.state.tenant})
            result["reply"] = envelope(response)
            result["session"] = response.session or doc.id
        return JSONResponse(result, status_code=201)

    async def list(self, request: Request) -> Response:
        """``GET /v1/agents/{agent}/sessions``: the caller's sessions of the agent, newest saved
        first, a page at a time (``limit``; ``after``: the ``next`` of the page before)."""
        agent = self._agent(request)
        limit = query_int(request, "limit", 50, low=1, high=500)
        status = request.query_params.get("status")
        if status is not None and status not in get_args(SessionStatus):  # a typo would list nothing, silently
            raise ApiError(422, "invalid-query", f"status must be one of {', '.join(get_args(SessionStatus))}, "
                           f"not {status!r}")
        after = page_cursor(request, at="saved_at", item="session")
        found = await self.runtime.store.list(agent=agent.id, status=status, tenant=request.state.tenant,
                                              limit=limit + 1, after=after)
        page = found[:limit]
        end = (page[-1].saved_at, page[-1].id) if len(found) > limit else None
        return JSONResponse({"sessions": [summary.model_dump(mode="json") for summary in page],
                             "next": next_cursor(end)})

    async def message(self, request: Request) -> Response:
        """``POST .../messages``: one turn; the envelope (or an SSE stream of it).

        Under the default ``on_busy="queue"`` a JSON turn loads the session once: the runtime's
        load, which checks the agent and the tenant (``Runtime.run(admit=...)``); a stream, or a
        policy that acts on the running turn before the message waits, checks the session first."""
        if wants_stream(request) or self._agent(request).on_busy != "queue":
            agent, doc = await self.session_of(request)
            session_id = doc.id
        else:
            agent, session_id = self._agent(request), request.path_params["session_id"]
        body = await read_body(request, MessageBody, limit=self.max_body)
        message = _message(request, body)
        tenant = request.state.tenant
        turn = self.busy.admit(agent, session_id)
        if wants_stream(request):
            return stream_turn(self.runtime, agent.id, session_id, message, {"tenant": tenant}, options=turn.options,
                               on_done=lambda: self.busy.done(session_id, turn))
        return answer(await self._admitted_turn(agent, session_id, message, tenant, turn))

    async def message_turn(self, agent: Agent, session_id: str, message: Message, tenant: str) -> RunResponse:
        """The JSON turn of ``POST .../messages`` once the request is read (``agent.on_busy`` is
        ``queue``: the runtime's load checks the agent and the tenant). Raises ``ApiError`` 404
        when the session is not the agent's, 403 when another tenant's."""
        return await self._admitted_turn(agent, session_id, message, tenant, self.busy.admit(agent, session_id))

    async def _admitted_turn(self, agent: Agent, session_id: str, message: Message, tenant: str,
                             turn: Admitted) -> RunResponse:
        refused: list[ApiError] = []

        def admit(doc: Session | None) -> RunResponse | None:
            try:
                self._check(agent, session_id, doc, tenant)
            except ApiError as exc:
                refused.append(exc)
                return failure(exc.message, session_id, exc.code)
            return None

        try:
            response = await self.runtime.run(agent.id, message, session_id=session_id, config={"tenant": tenant},
                                              options=turn.options, admit=admit)
        finally:
            self.busy.done(session_id, turn)
        if refused:
            raise refused[0]
        return response

    async def first_message(self, request: Request) -> Response:
        """``POST /v1/agents/{agent}/messages``: a conversation's first message, which creates its
        session (of the caller's tenant): the envelope's ``session`` is the id to use next (no
        separate create request needed)."""
        agent = self._agent(request)
        body = await read_body(request, MessageBody, limit=self.max_body)
        return answer(await self.first_turn(agent, _message(request, body), request.state.tenant))

    async def first_turn(self, agent: Agent, message: Message, tenant: str) -> RunResponse:
        """The turn of ``POST /v1/agents/{agent}/messages`` once the request is read: a new session
        of ``tenant``."""
        return await self.runtime.run(agent.id, message, config={"tenant": tenant})

    async def state(self, request: Request) -> Response:
        """``GET .../{id}``: status, data, runs, what they wait on and the pending approvals."""
        _, doc = await self.session_of(request)
        approvals = await self.runtime.pending_approvals(doc.id)
        return JSONResponse(session_state(doc, approvals))

    async def transcript(self, request: Request) -> Response:
        """``GET .../transcript?after=SEQ&limit=N``."""
        _, doc = await self.session_of(request)
        after = query_int(request, "after", 0)
        limit = query_int(request, "limit", 100, low=1, high=1000)
        messages = await self.runtime.store.transcript(doc.id, after_seq=after, limit=limit + 1)
        more = len(messages) > limit
        messages = messages[:limit]
        return JSONResponse({"messages": [message_view(m) for m in messages],
                             "next": messages[-1].seq if more else None})

    async def events(self, request: Request) -> Response:
        """``GET .../events?after=SEQ&limit=N``."""
        _, doc = await self.session_of(request)
        after = query_int(request, "after", 0)
        limit = query_int(request, "limit", 100, low=1, high=1000)
        found = await self.runtime.store.events(doc.id, after=after, limit=limit + 1)
        page = found[:limit]
        return JSONResponse({"events": [event_view(e) for e in page],
                             "next": page[-1].seq if len(found) > limit else None})

    async def stream(self, request: Request) -> Response:
        """``GET .../stream``: the session's event records as SSE, live (``Last-Event-ID`` resumes)."""
        _, doc = await self.session_of(request)
        after = stream_cursor(request)
        return event_stream(self.runtime, doc.id, after, poll=self.stream_poll, keepalive=self.stream_keepalive)

    async def delete(self, request: Request) -> Response:
        """``DELETE .../{id}``: the session and all its records, under the session's lock and lease."""
        _, doc = await self.session_of(request)
        await self.runtime.delete(doc.id)
        return Response(status_code=204)

    async def event(self, request: Request) -> Response:
        """``POST .../events``: the host reports an event; the turn's envelope."""
        agent, doc = await self.session_of(request)
        body = await read_body(request, EventBody, limit=self.max_body)
        response = await self.runtime.run(agent.id, event=Event(body.name, body.payload, body.key),
                                          session_id=doc.id, config={"tenant": request.state.tenant})
        return answer(response)

    async def approval(self, request: Request) -> Response:
        """``POST .../approvals/{approval_id}``: decide a pending approval; the turn's envelope."""
        _, doc = await self.session_of(request)
        body = await read_body(request, ApprovalBody, limit=self.max_body)
        approval_id = request.path_params["approval_id"]
        pending = {entry.key for entry in await self.runtime.pending_approvals(doc.id)}
        if approval_id not in pending:
            raise ApiError(404, "approval-not-found", f"session {doc.id!r} waits on no approval {approval_id!r}")
        response = await self.runtime.approve(doc.id, approval_id, body.decision, feedback=body.feedback,
                                              decided_by=body.decided_by)
        return answer(response)

    async def signal(self, request: Request) -> Response:
        """``POST .../signals/{name}``: deliver a signal; the turn's envelope."""
        _, doc = await self.session_of(request)
        body = await read_body(request, SignalBody, limit=self.max_body, optional=True)
        response = await self.runtime.signal(doc.id, request.path_params["name"], body.payload, signal_id=body.id)
        return answer(response)
