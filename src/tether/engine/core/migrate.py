"""Reading a stored session blob written by the seed's previous major version (falai 3.x), or by
this tether, as a current :class:`~tether.engine.core.session.Session`.

A host runs :func:`migrate_session` where it deserialises, before the turn (seed 003, Load). It
fails loudly: a blob that is neither a current session document nor a recognisable 3.x blob raises
:class:`~tether.errors.SessionFlowInvariant` naming the session; it never becomes a fresh
conversation, which would ask every known field again and fire every once-flow again.

A 3.x blob becomes:

- ``data`` verbatim;
- ``currentFlow``/``currentStep`` (``{id, enteredAt?}`` or a bare id): one run
  ``<flow>#legacy``, asking at that step (``running`` at no node when no step was entered yet),
  with its claim ``<flow>:<session>:``;
- every completed ``flowHistory`` entry and every fired signal (``signals.triggers``): a ``once``
  claim ``<flow>:<session>:`` stamped with its last exit/firing time (else ``now``), so nothing
  fires twice;
- ``pendingDirective`` dropped; ``metadata`` kept, dates as ISO text; ``history``, when present,
  becomes the transcript window (its user, assistant and system text turns, in order); no
  message ids; ``version`` kept as the revision.

Flow and signal ids go through ``flow_id_of`` (identity when the ids were kept). Pure: no clock,
the caller passes ``now``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from pydantic import ValidationError

from tether.engine.core.session import Claim, Run, RunTrigger, Session, TranscriptMessage
from tether.errors import SessionFlowInvariant, SessionFlowMismatch

__all__ = ["migrate_session"]

_ROLES = {"user": "user", "assistant": "ai", "system": "note"}


def migrate_session(blob: Any, *, session_id: str, agent: str, flow_id_of: Callable[[str], str] | None = None,
                    now: datetime) -> Session:
    """Read ``blob`` as a current session.

    Args:
        blob: the stored document, as parsed JSON (a mapping).
        session_id: the id the host stored it under; the session keeps it.
        agent: the id of the agent the session is bound to (a 3.x blob does not name one).
        flow_id_of: the current flow id of a 3.x flow or signal id (default: unchanged).
        now: stamps runs and claims that carry no date of their own.

    Returns:
        A current session: a tether document is validated and returned as it is (keys a store
        adds for its own bookkeeping, those starting with ``_``, are dropped); a 3.x blob is
        converted as the module describes.

    Raises:
        SessionFlowInvariant: the blob is neither, naming the session and what is wrong.
        SessionFlowMismatch: a tether document bound to another agent.
    """
    if not isinstance(blob, Mapping):
        raise _bad(session_id, f"expected an object, got {_kind(blob)}")
    if "schema_version" in blob:
        return _current(blob, session_id, agent)
    return _from_legacy(blob, session_id, agent, flow_id_of or (lambda key: key), now)


def _bad(session_id: str, why: str) -> SessionFlowInvariant:
    return SessionFlowInvariant(
        f"stored session {session_id!r} is unreadable: {why}. Repair or delete it; it is never replaced by a "
        "fresh conversation.", operation="migrate", session_id=session_id)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else "a long text"
    if isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "a list"
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def _current(blob: Mapping[str, Any], session_id: str, agent: str) -> Session:
    document = {key: value for key, value in blob.items() if not str(key).startswith("_")}
    if document.get("id") != session_id:
        raise _bad(session_id, f"id is {_kind(document.get('id'))}, expected {session_id!r}")
    try:
        session = Session.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<document>'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise _bad(session_id, problems) from None
    if session.agent != agent:
        raise SessionFlowMismatch(session_id, bound=session.agent, requested=agent)
    return session


def _from_legacy(blob: Mapping[str, Any], session_id: str, agent: str, flow_id_of: Callable[[str], str],
                 now: datetime) -> Session:
    data, version, metadata = blob.get("data"), blob.get("version", 0), blob.get("metadata", {})
    history, flow_history, signals = blob.get("history"), blob.get("flowHistory", []), blob.get("signals", {})
    if not isinstance(data, Mapping):
        raise _bad(session_id, f"data is {_kind(data)}, expected an object; not a 3.x session either")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise _bad(session_id, f"version is {_kind(version)}, expected a whole number")
    if not isinstance(metadata, Mapping):
        raise _bad(session_id, f"metadata is {_kind(metadata)}, expected an object")
    if history is not None and not isinstance(history, list):
        raise _bad(session_id, f"history is {_kind(history)}, expected a list")
    if not isinstance(flow_history, list):
        raise _bad(session_id, f"flowHistory is {_kind(flow_history)}, expected a list")
    if not isinstance(signals, Mapping) or not isinstance(signals.get("triggers", {}), Mapping):
        raise _bad(session_id, "signals is not an object with a triggers map")

    claims: dict[str, Claim] = {}

    def claim(flow_key: str, *stamps: Any) -> None:
        at = next((parsed for stamp in stamps if (parsed := _instant(stamp)) is not None), now)
        claims[f"{flow_id_of(flow_key)}:{session_id}:"] = Claim(at=at)

    for i, entry in enumerate(flow_history):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("flowId"), str):
            raise _bad(session_id, f"flowHistory[{i}] is not a flow entry with a flowId")
        if entry.get("completed") is True:
            claim(entry["flowId"], entry.get("exitedAt"), entry.get("enteredAt"))
    for key, state in signals.get("triggers", {}).items():
        if not isinstance(state, Mapping):
            raise _bad(session_id, f"signals.triggers.{key} is not a trigger state")
        claim(str(key), state.get("lastTriggeredAt"), state.get("firstTriggeredAt"))

    runs: list[Run] = []
    flow_ref = _reference(blob.get("currentFlow"), "currentFlow", session_id)
    step_ref = _reference(blob.get("currentStep"), "currentStep", session_id)
    if flow_ref is not None:
        flow_id = flow_id_of(flow_ref[0])
        started = _instant(flow_ref[1]) or now
        step = step_ref[0] if step_ref is not None else None
        runs.append(Run(id=f"{flow_id}#legacy", flow=flow_id, anchor=session_id,
                        dedupe_key=f"{flow_id}:{session_id}:", node=step,
                        status="asking" if step is not None else "running",  # entered, no step yet: a fresh run
                        trigger=RunTrigger(kind="message", key="legacy"), started_at=started))
        claims[f"{flow_id}:{session_id}:"] = Claim(at=started)  # a run never exists without its claim

    messages = _transcript(history or [], now)
    try:
        return Session(id=session_id, revision=version, agent=agent, created_at=now, data=dict(data), runs=runs,
                       claims=claims, inputs=[], messages=messages, message_seq=len(messages),
                       metadata={str(key): _dates_to_iso(value) for key, value in metadata.items()})
    except ValidationError as exc:
        raise _bad(session_id, str(exc.errors()[0]["msg"])) from None


def _transcript(history: list[Any], now: datetime) -> list[TranscriptMessage]:
    """The 3.x history as transcript messages: text turns of the user, the assistant and the
    system, in order (tool calls and results carry no text the model must see again)."""
    messages: list[TranscriptMessage] = []
    for entry in history:
        if not isinstance(entry, Mapping):
            continue
        role, text = entry.get("role"), entry.get("content", entry.get("text"))
        if role not in _ROLES or not isinstance(text, str) or not text:
            continue
        at = _instant(entry.get("at", entry.get("timestamp"))) or now
        messages.append(TranscriptMessage(seq=len(messages) + 1, role=role, text=text, at=at, kind=_ROLES[role]))
    return messages


def _reference(value: Any, name: str, session_id: str) -> tuple[str, Any] | None:
    """``currentFlow``/``currentStep`` as 3.x wrote them: ``{id, enteredAt?}``, or a bare id."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value, None
    if isinstance(value, Mapping) and isinstance(value.get("id"), str) and value["id"]:
        return value["id"], value.get("enteredAt")
    raise _bad(session_id, f"{name} is {_kind(value)}, expected {{id}} or a flow id")


def _instant(value: Any) -> datetime | None:
    """A datetime, ISO text or epoch milliseconds as an aware datetime; anything else is None."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and len(value) >= 10 and value[:4].isdigit() and value[4] == "-":
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return None


def _dates_to_iso(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _dates_to_iso(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_dates_to_iso(v) for v in value]
    return value
