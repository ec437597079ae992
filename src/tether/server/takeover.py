"""Human takeover: the routes of the people who answer a conversation a flow handed off.

A flow that escalates marks its session ``handed_off``: the bot stays quiet, customer messages are
recorded (each with a ``customer-message`` event on the session's stream, for the person's screen).
An operator (a key of ``operator_keys`` once any is configured, else any key of the tenant):

- lists the sessions waiting for a person, oldest hand-off first, with the reason, a page at a
  time (``GET /v1/handoffs``: every waiting session of the tenant is sorted, so none is missed);
- answers the customer (``POST .../operator-messages``: a transcript message ``role: "agent"``
  with ``by``, and an ``operator-message`` event that reaches the customer's event stream);
- gives the session back to the bot (``POST .../release``).

A customer on the OpenAI-compatible endpoint gets, as the answer to a message the bot stays quiet
on, what the person said since the customer's previous message (or :data:`WAITING_REPLY` while
nobody has answered yet): never an empty answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.errors import InvalidInputError
from tether.runtime.envelope import RunResponse
from tether.runtime.runtime import Runtime
from tether.server.bodies import OperatorMessageBody, ReleaseBody
from tether.server.problems import ApiError
from tether.server.requests import next_cursor, page_cursor, query_int, read_body
from tether.server.views import message_view

__all__ = ["WAITING_REPLY", "TakeoverRoutes", "require_operator", "takeover_reply"]

WAITING_REPLY = "A person from our team has this conversation and will answer you here shortly."
"""The answer to a customer message while a person has the conversation and has not answered yet."""

_TAIL = 200
"""How many of the latest transcript messages a quiet turn's answer is looked for in."""


def require_operator(request: Request) -> None:
    """403 ``operator-only`` unless the request's key may act as an operator."""
    if not getattr(request.state, "operator", False):
        raise ApiError(403, "operator-only", "this route needs an operator key (TETHER_OPERATOR_KEYS)")


async def takeover_reply(runtime: Runtime, response: RunResponse) -> str | None:
    """What a customer's client shows for a turn the bot stayed quiet on because a person has the
    session: the person's messages since the customer's previous message, else
    :data:`WAITING_REPLY`. None for any other turn (its own message stands)."""
    result = response.result
    if not response.success or result is None or response.message:
        return None
    if not any(outcome.code == "handed-off" for outcome in result.outcomes):
        return None
    doc = result.session
    after = max(0, doc.message_seq - _TAIL) if doc is not None else 0
    tail = await runtime.store.transcript(response.session, after_seq=after)
    customer = [i for i, message in enumerate(tail) if message.role == "user"]
    since = customer[-2] if len(customer) >= 2 else -1  # the customer's message before this one
    said = [message.text for message in tail[since + 1:] if message.kind == "agent"]
    return "\n\n".join(said) if said else WAITING_REPLY


class TakeoverRoutes:
    """The operator handlers, bound to one runtime (``tenant`` and ``operator`` are set on
    ``request.state`` by the app; the session is resolved by ``session_of``)."""

    def __init__(self, runtime: Runtime, session_of: Any, *, max_body: int) -> None:
        self.runtime = runtime
        self.session_of = session_of
        self.max_body = max_body

    async def operator_message(self, request: Request) -> Response:
        """``POST .../operator-messages``: a person answers the customer of a handed-off session."""
        require_operator(request)
        _, doc = await self.session_of(request)
        body = await read_body(request, OperatorMessageBody, limit=self.max_body)
        try:
            stored, said = await self.runtime.operator_message(doc.id, body.text, by=body.by)
        except InvalidInputError as exc:
            raise ApiError(422, "invalid-input", str(exc)) from None
        if said is None:
            status = stored.status if stored is not None else "deleted"
            raise ApiError(409, "not-handed-off", f"session {doc.id!r} is {status}, not handed_off: "
                           "the bot has it (a flow hands a conversation to a person with escalate)")
        return JSONResponse({"session": doc.id, "message": message_view(said)})

    async def release(self, request: Request) -> Response:
        """``POST .../release``: give a handed-off session back to the bot."""
        require_operator(request)
        _, doc = await self.session_of(request)
        body = await read_body(request, ReleaseBody, limit=self.max_body, optional=True)
        if doc.status != "handed_off":  # nothing to give back: say so, as operator-messages does
            raise ApiError(409, "not-handed-off", f"session {doc.id!r} is {doc.status}, not handed_off: "
                           "the bot already has it")
        try:
            stored = await self.runtime.release(doc.id, by=body.by)
        except InvalidInputError as exc:
            raise ApiError(422, "invalid-input", str(exc)) from None
        return JSONResponse({"session": doc.id, "status": stored.status if stored is not None else "deleted"})

    async def handoffs(self, request: Request) -> Response:
        """``GET /v1/handoffs``: the caller's sessions waiting for a person, oldest hand-off first,
        a page at a time (``limit``; ``after``: the ``next`` of the page before)."""
        require_operator(request)
        limit = query_int(request, "limit", 100, low=1, high=500)
        after = page_cursor(request, at="since", item="session")
        store = self.runtime.store
        waiting: list[dict[str, Any]] = []
        # every waiting session of the tenant (the store's handed-off index holds only those),
        # sorted here by its hand-off, so a page never misses the oldest behind newer saves
        for summary in await store.list(status="handed_off", tenant=request.state.tenant, limit=_ALL):
            if summary.agent not in self.runtime.agents:
                continue
            events = await store.events(summary.id, newest=_RECENT)
            if len(events) == _RECENT and not any(e.type == "handoff" for e in events):
                events = await store.events(summary.id)  # handed off further back: read it all
            handoff = next((e for e in reversed(events) if e.type == "handoff"), None)
            asked = [e for e in events if e.type == "customer-message" and (handoff is None or e.seq > handoff.seq)]
            answered = [e for e in events if e.type == "operator-message" and (handoff is None or e.seq > handoff.seq)]
            waiting.append({
                "session": summary.id, "agent": summary.agent,
                "since": (handoff.at if handoff is not None else summary.saved_at).isoformat(),
                "reason": handoff.data.get("reason") if handoff is not None else None,
                "customer_messages": len(asked), "operator_messages": len(answered),
                "last_customer_message": asked[-1].data.get("text") if asked else None,
            })
        waiting.sort(key=_key)
        if after is not None:
            waiting = [row for row in waiting if _key(row) > after]
        page = waiting[:limit]
        more = len(waiting) > limit
        return JSONResponse({"sessions": page, "next": next_cursor(_key(page[-1]) if more else None)})


_RECENT = 200
"""The newest events ``GET /v1/handoffs`` reads of a session, where its hand-off usually is."""

_ALL = 1_000_000
"""How many waiting sessions of one tenant ``GET /v1/handoffs`` sorts at most (all of them, in practice)."""


def _key(row: dict[str, Any]) -> tuple[datetime, str]:
    return datetime.fromisoformat(row["since"]), row["session"]

