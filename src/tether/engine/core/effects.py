"""The journaled effects of an action: ``ctx.tool``, ``ctx.model``, ``ctx.now``, ``ctx.uuid``,
``ctx.approve``, ``ctx.signal``.

One :class:`Effects` serves one dispatch of one action node. Effect number ``i`` of visit ``v``
of node ``n`` in run ``r`` has the key ``r:n:v:i``; a re-dispatch of the same visit meets the same
keys in the same order (keep effect order stable: branch on journaled values only).

A tool call, in order: its arguments are validated; a *finished* entry for its key returns the
recorded value (the tool does not run), an *error* entry raises the recorded error again; else a
*started* entry is committed (a host write) before the tool runs, and its value (or error,
frozen) is committed after. The started write is also a fence: under compare-and-swap it fails
when another worker wrote the session since, before the tool runs. A started entry with no result
is *in doubt* (the worker died while the tool ran, or before its result was written): the tool's
``in_doubt`` policy decides — ``retry`` (the default: run it again with the same
``idempotency_key``), ``fail`` (the effect fails with ``effect-in-doubt``) or ``ask`` (a human
approves the retry, else it fails). A model call (``ctx.model``) has no effect outside the
session and is simply made again when in doubt, so its started entry is written with its reply.

``now``/``uuid`` record their value without a started entry (they have no side effect); the
value is committed with the next write, and a re-dispatch returns it.

Approvals and signals park the run: their started entry is written with the turn, the action
raises :class:`~tether.errors.Suspend` (a BaseException user code cannot swallow) and the run
waits. The decision or signal is recorded as the entry's result by the turn that delivers it,
and the re-dispatched action reads it back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from tether.durable.decisions import ApprovalDecision, SignalResult
from tether.durable.entries import JournalEntry, effect_key
from tether.errors import EffectInDoubtError, JournalMismatchError, ModelError, Suspend, ToolError
from tether.flow.durations import parse_duration
from tether.flow.tools import Tool, ToolResult
from tether.models.parsing import extract_json
from tether.models.types import ChatMessage, ModelRequest, ResponseFormat

if TYPE_CHECKING:
    from tether.engine.core.session import Run
    from tether.engine.core.state import TurnState

__all__ = ["Effects", "jsonable"]


def jsonable(value: Any, what: str) -> Any:
    """``value`` in its JSON form (what the journal stores and a replay returns); a value that
    has none raises ``ToolError`` naming ``what``."""
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise ToolError(f"{what} cannot be journaled (not JSON-serializable): {exc}") from None


class Effects:
    """Journaled effects of one dispatch of one action node."""

    def __init__(self, ts: TurnState, run: Run, flow_id: str, node_id: str) -> None:
        self._ts, self._run, self._flow_id, self._node_id = ts, run, flow_id, node_id
        self.step_key = ts.key(run, node_id)
        self._index = 0
        self.idempotency_key: str | None = None

    # ------------------------------------------------------------------ plumbing

    def _where(self) -> str:
        return f"flow {self._flow_id!r}, node {self._node_id!r}"

    def _next_key(self) -> str:
        key = effect_key(self.step_key, self._index)
        self._index += 1
        return key

    def _entry(self, key: str, kind: str, **fields: Any) -> JournalEntry:
        return JournalEntry(run_id=self._run.id, key=key, kind=kind, node_id=self._node_id, at=self._ts.now, **fields)

    def _recorded(self, key: str, kind: str, name: str | None) -> JournalEntry | None:
        entry = self._ts.journal.get(key)
        if entry is not None and (entry.kind != kind or entry.name != name):
            raise JournalMismatchError(
                f"{self._where()}: effect {key!r} was recorded as {entry.kind} {entry.name!r} but is now "
                f"{kind} {name!r}; an action must perform its effects in the same order on every dispatch")
        return entry

    async def _commit(self) -> None:
        """Write what the journal holds now (a host checkpoint); without a host, nothing to do."""
        await self._ts.checkpoint()

    # ------------------------------------------------------------------ values

    def value(self, kind: str, make: Callable[[], Any]) -> Any:
        """A journaled value (``now``, ``uuid``): recorded once, the same on every re-dispatch."""
        key = self._next_key()
        entry = self._recorded(key, kind, kind)
        if entry is not None:
            return entry.result
        result = jsonable(make(), f"{self._where()}: ctx.{kind}()")
        self._ts.journal.record(self._entry(key, kind, name=kind, status="finished", result=result))
        return result

    async def computed(self, kind: str, name: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """A journaled value computed by ``make`` (an agent step's model reply): recorded once
        with no started entry (it has no effect outside the session), returned as recorded on a
        re-dispatch."""
        key = self._next_key()
        entry = self._recorded(key, kind, name)
        if entry is not None and entry.status == "finished":
            return entry.result
        result = jsonable(await make(), f"{self._where()}: {kind} {name!r}")
        self._ts.journal.record(self._entry(key, kind, name=name, status="finished", result=result))
        return result

    def now(self) -> datetime:
        return datetime.fromisoformat(self.value("now", lambda: self._ts.now))

    def uuid(self) -> str:
        return str(self.value("uuid", self._ts.ids.new_id))

    # ------------------------------------------------------------------ tools

    async def tool(self, tool: Tool, arguments: Mapping[str, Any], apply: Callable[[Mapping[str, Any]], None]) -> Any:
        """Call ``tool`` once per key (see the module notes). ``apply`` writes a ToolResult's data."""
        validated = tool.validate(arguments)
        request = jsonable(validated, f"{self._where()}: the arguments of tool {tool.name!r}")
        key = self._next_key()
        idempotency_key = f"{self._ts.session.id}:{key}"
        entry = self._recorded(key, "tool", tool.name)
        self.idempotency_key = idempotency_key
        attempt = 1
        if entry is not None:
            if entry.status == "finished":
                return self._replay(entry, apply)
            if entry.status == "error":
                raise ToolError(f"{self._where()}: tool {tool.name!r} failed: {entry.error}")
            attempt = entry.attempt + 1
            await self._in_doubt(tool, entry)
        self._ts.journal.record(self._entry(key, "tool", name=tool.name, request=request,
                                            idempotency_key=idempotency_key, attempt=attempt))
        await self._commit()  # the started record is durable before the effect runs (and fences it)
        try:
            result = await tool.call(validated, idempotency_key=idempotency_key)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self._ts.journal.record(self._entry(key, "tool", name=tool.name, request=request, status="error",
                                                error=error, idempotency_key=idempotency_key, attempt=attempt))
            await self._commit()
            raise
        value, data = (result.value, dict(result.data)) if isinstance(result, ToolResult) else (result, {})
        recorded = {"value": jsonable(value, f"{self._where()}: the value of tool {tool.name!r}"),
                    "data": jsonable(data, f"{self._where()}: the data of tool {tool.name!r}")}
        self._ts.journal.record(self._entry(key, "tool", name=tool.name, request=request, status="finished",
                                            result=recorded, idempotency_key=idempotency_key, attempt=attempt))
        await self._commit()  # the result is durable before the action goes on
        return self._replay(self._ts.journal.get(key), apply)

    @staticmethod
    def _replay(entry: JournalEntry | None, apply: Callable[[Mapping[str, Any]], None]) -> Any:
        assert entry is not None and isinstance(entry.result, dict)
        if entry.result.get("data"):
            apply(entry.result["data"])
        return entry.result.get("value")

    async def _in_doubt(self, tool: Tool, entry: JournalEntry) -> None:
        """A started effect with no result: apply the tool's policy (returns to retry)."""
        if tool.in_doubt == "retry":
            return
        if tool.in_doubt == "ask":
            decision = await self.approve(
                f"Tool {tool.name!r} may or may not have run (the worker stopped while it ran). Run it again "
                f"with the same idempotency key?",
                payload={"tool": tool.name, "arguments": entry.request, "idempotency_key": entry.idempotency_key},
                key=f"{entry.key}:in-doubt")
            if decision.approved:
                return
        reason = f"{self._where()}: tool {tool.name!r} is in doubt (started, no result recorded; policy " \
                 f"{tool.in_doubt!r})"
        self._ts.journal.record(entry.model_copy(update={"status": "error", "error": reason, "at": self._ts.now}))
        raise EffectInDoubtError(reason)

    # ------------------------------------------------------------------ models

    async def model(self, instructions: str, *, prompt: str | None = None, schema: type[BaseModel] | None = None,
                    tier: Literal["default", "small", "deep"] = "default") -> Any:
        """One model call (``subprompt``), journaled like a tool: started, then its reply (one
        write: a call in doubt is simply made again, it has no effect outside the session).
        Returns the text, or the validated ``schema`` instance."""
        key = self._next_key()
        entry = self._recorded(key, "model", "subprompt")
        if entry is None or entry.status != "finished":
            attempt = entry.attempt + 1 if entry is not None else 1
            request = {"instructions": instructions, "prompt": prompt, "tier": tier}
            self._ts.journal.record(self._entry(key, "model", name="subprompt", request=request, attempt=attempt))
            model = self._ts.model(tier, needed_for=f"ctx.model() in {self._where()}")
            response = await self._ts.call(model, ModelRequest(
                call="subprompt", instructions=instructions, tier=tier,
                messages=(ChatMessage("user", prompt),) if prompt else (),
                response_format=ResponseFormat(schema.__name__, schema.model_json_schema()) if schema else None))
            value = (response.data if response.data is not None else extract_json(response.text)) if schema \
                else response.text
            self._ts.journal.record(self._entry(key, "model", name="subprompt", request=request, status="finished",
                                                result={"value": jsonable(value, "the model's reply")},
                                                attempt=attempt))
            await self._commit()
            entry = self._ts.journal.get(key)
        assert entry is not None and isinstance(entry.result, dict)
        value = entry.result.get("value")
        if schema is None:
            return value
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            raise ModelError(f"{self._where()}: the model's reply does not match {schema.__name__}: {exc}",
                             kind="invalid") from None

    # ------------------------------------------------------------------ suspends

    async def approve(self, summary: str, *, payload: Any = None, key: str | None = None) -> ApprovalDecision:
        """The decision on an approval (parks the run until there is one)."""
        key = key or self._next_key()
        entry = self._recorded(key, "approval", "approval")
        if entry is None:
            request = {"summary": summary, "payload": jsonable(payload, f"{self._where()}: the approval payload")}
            self._ts.journal.record(self._entry(key, "approval", name="approval", request=request))
        elif entry.final:
            result = entry.result if isinstance(entry.result, dict) else {}
            request = entry.request if isinstance(entry.request, dict) else {}
            return ApprovalDecision(approval_id=key, decision=str(result.get("decision")),
                                    feedback=result.get("feedback"), decided_by=result.get("decided_by"),
                                    summary=str(request.get("summary", "")), payload=request.get("payload"))
        raise Suspend("approval", key=key, payload={"kind": "approval"})

    async def signal(self, name: str, *, timeout: str | None = None) -> SignalResult:
        """The signal ``name`` (or its timeout); parks the run until one arrives."""
        key = self._next_key()
        entry = self._recorded(key, "signal", name)
        if entry is not None and entry.final:
            result = entry.result if isinstance(entry.result, dict) else {}
            return SignalResult(name=name, payload=result.get("payload"), signal_id=result.get("signal_id"),
                                timed_out=bool(result.get("timed_out")))
        until: datetime | None = None
        if entry is None:
            until = self._ts.now + parse_duration(timeout) if timeout else None
            self._ts.journal.record(self._entry(key, "signal", name=name,
                                                request={"name": name, "until": jsonable(until, "until")}))
        elif isinstance(entry.request, dict) and entry.request.get("until"):
            until = datetime.fromisoformat(entry.request["until"])
        raise Suspend("signal", key=key, payload={"kind": "signal", "name": name, "until": until})
