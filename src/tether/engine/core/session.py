"""The session document: one JSON document per conversation, saved with compare-and-swap.

A session is bound to one agent forever. It holds the session-wide fields (``data``), the live
flow runs, claims, the last message ids seen, a bounded window of recent transcript messages
(the full transcript is kept by the store as append-only records), usage tallies and logs.
Everything round-trips through JSON; no pickle anywhere.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tether.durable.turns import OpenTurn

__all__ = [
    "KEEP_COMPLETED",
    "KEEP_INPUTS",
    "SESSION_SCHEMA_VERSION",
    "Claim",
    "LogEntry",
    "MemorySpace",
    "Outcome",
    "Run",
    "RunContext",
    "RunTrigger",
    "Session",
    "SessionStatus",
    "SessionUsage",
    "TranscriptMessage",
    "WaitingOn",
    "fork_run",
    "copy_data",
    "fork_session",
    "remember_completed",
    "remember_input",
]

SESSION_SCHEMA_VERSION = 5
"""Bumped when the document shape changes (a test holds its JSON Schema per version); the runtime
migrates older documents, and refuses one no migration upgrades (``SESSION_VERSION_UNSUPPORTED``).

2: ``window_from`` (the runtime stores the context window as transcript records, not inline).
3: ``clarifying`` (the flows a clarification asked the customer to choose between).
4: a transcript message's ``kind`` ``agent`` and its ``by`` (what a person who took the session
over said).
5: ``completed_inputs`` (the message ids whose turn completed: a resent one answers as it did).
The runtime upgrades version 1 to 4 documents itself: a version 1 window is inline, a document
without ``clarifying`` asked nothing, one before version 4 holds no person's message, and one
before version 5 noted no completed turn (a resent message of such a turn answers not completed);
nothing else changes."""

SessionStatus = Literal["running", "handed_off", "completed", "aborted"]
RunStatus = Literal["running", "asking", "waiting", "suspended"]

_STRICT = ConfigDict(extra="forbid")


KEEP_INPUTS = 50
"""How many input ids a session remembers for duplicate detection."""

KEEP_COMPLETED = 8
"""How many ids of messages whose turn completed a session remembers (``completed_inputs``): a
client resends the message whose answer it lost, nearly always its last; an older one resent
answers not completed. Few, so that the document stays small and flat."""


class TranscriptMessage(BaseModel):
    """One message of the conversation.

    ``seq`` numbers every message of a session from 1; ``kind`` says how an assistant message
    was produced: ``ai`` (spoken by the model), ``verbatim`` (rendered by the engine: a fixed
    reply, an ask) or ``agent`` (written by a person who took the conversation over; ``by`` names
    them). ``key`` is the deterministic message key ``run:node:visit``.
    """

    model_config = _STRICT

    seq: int
    role: Literal["user", "assistant", "system"]
    text: str
    at: datetime
    kind: Literal["user", "ai", "verbatim", "event", "note", "agent"] = "user"
    key: str | None = None
    run_id: str | None = None
    node_id: str | None = None
    after_ms: int = 0
    input_id: str | None = None
    by: str | None = None


class RunTrigger(BaseModel):
    """What started a run: ``kind`` (message, mention, silence, event, start, flow), the trigger
    ``key`` and an optional payload."""

    model_config = _STRICT

    kind: Literal["message", "mention", "silence", "event", "start", "flow"]
    key: str
    payload: Any = None
    index: int | None = None


class WaitingOn(BaseModel):
    """Why a waiting run is parked and which wake key resumes it."""

    model_config = _STRICT

    kind: Literal["timer", "event", "trigger", "retry", "defer", "signal", "approval"]
    key: str
    until: datetime | None = None
    set_at: datetime
    event: str | None = None


class Outcome(BaseModel):
    """One line of a run's log: what a step did, with a stable ``code`` where one applies."""

    model_config = _STRICT

    code: str | None = None
    status: Literal["ok", "skipped", "failed", "waiting", "deferred"] = "ok"
    kind: str | None = None
    run_id: str | None = None
    flow_id: str | None = None
    node_id: str | None = None
    key: str | None = None
    detail: str | None = None
    message: str | None = None
    next: str | None = None
    until: datetime | None = None
    at: datetime | None = None
    llm_calls: int | None = None


class RunContext(BaseModel):
    """The run's view of the transcript (context strategies never delete messages).

    ``from_seq``: the model sees messages with ``seq >= from_seq``, plus system messages and the
    message ``keep_seq`` (the last user message kept by ``reset``); ``summary``: the system summary
    note set by ``reset_with_summary``.
    """

    model_config = _STRICT

    from_seq: int = 0
    keep_seq: int | None = None
    summary: str | None = None


class Run(BaseModel):
    """One live flow instance inside a session.

    ``outcomes`` holds only each node's current retry streak (its deferred outcomes): what a
    turn did is in its result (``TurnResult.outcomes``), not kept in the document.
    """

    model_config = _STRICT

    id: str
    flow: str
    anchor: str = "session"
    dedupe_key: str = ""
    node: str | None = None
    status: RunStatus = "running"
    trigger: RunTrigger
    input: Any = None
    hop: int = 0
    started_at: datetime
    suspended_at: datetime | None = None
    staying: bool = False
    last_talk: str | None = None
    waiting: WaitingOn | None = None
    asked: dict[str, int] = Field(default_factory=dict)
    visits: dict[str, int] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    digest: str = ""
    context: RunContext = Field(default_factory=RunContext)
    outcomes: list[Outcome] = Field(default_factory=list)
    verification: dict[str, Any] | None = None


class Claim(BaseModel):
    """A start claim (``once``/``cooldown``/``always`` repeat bookkeeping), stamped ``at``."""

    model_config = _STRICT

    at: datetime


class LogEntry(BaseModel):
    """A log line kept on the session (``log``, ``warn`` or ``error``)."""

    model_config = ConfigDict(extra="allow")

    at: datetime
    level: Literal["log", "warn", "error"] = "log"
    message: str


class MemorySpace(BaseModel):
    """One memory namespace of agent steps: its messages (JSON chat messages, each with an ``n``
    numbering it in the namespace and the ``step`` that wrote it), and the cumulative summary of
    the messages compaction folded away (``summarized_through``: the last ``n`` it covers)."""

    model_config = _STRICT

    messages: list[dict[str, Any]] = Field(default_factory=list)
    summary: str | None = None
    summarized_through: int | None = None
    next_n: int = 1


class SessionUsage(BaseModel):
    """Model calls and tokens spent over the whole session: the turns' own calls, and the calls
    its actions reported (``ctx.count_model_calls``), such as those of a workflow run a
    conversation drove. A workflow run's own stored document carries the run's calls alone."""

    model_config = _STRICT

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0
    agent_calls: int = 0
    """Model calls made by agent steps (calls the author asked for, apart from the turn budget)."""
    workflow_calls: int = 0
    """Model calls made by workflow runs this session's actions drove (``WorkflowChat``): their
    subprompts and agent turns. Included in ``llm_calls`` and the token counts."""


class Session(BaseModel):
    """The session document.

    Attributes:
        id: the session id (a UUID v4 when the runtime mints it).
        revision: the compare-and-swap token; a store save succeeds only at the stored revision.
        schema_version: the document shape version (``SESSION_SCHEMA_VERSION``).
        status: ``running``, ``handed_off`` (a human has the conversation: the bot stays quiet
            until released), ``completed`` or ``aborted`` (ended sessions are never resumed).
        agent: the id of the agent this session is bound to, forever.
        data: session-wide fields, by name.
        runs: the live flow runs.
        claims: start claims by dedupe key.
        inputs: the last 50 message ids seen (duplicate detection; a stored document keeps only the
            signal ids: the runtime reads the message ids back from the transcript records).
        messages: a bounded window of the most recent transcript messages.
        summary: the compaction summary of messages that left the window.
        message_seq: the ``seq`` of the last message ever appended.
        window_from: None while ``messages`` holds the window. The runtime stores a document with
            ``messages`` empty and ``window_from`` the ``seq`` the window starts at (the window is
            read back from the store's transcript records when the document is loaded).
        turn: set by mid-turn writes while a turn is unfinished (cleared by its final save).
        memory: the agent steps' memory namespaces, by name.
        clarifying: the flows a clarification asked the customer to choose between (the next
            message picks one).
        completed_inputs: the ids of the last :data:`KEEP_COMPLETED` messages whose turn completed
            (ended its flow or handed the conversation off): a message resent with one of them
            gets the recorded reply with ``completed`` as the first answer had it.
    """

    model_config = _STRICT

    id: str
    revision: int = 0
    schema_version: int = SESSION_SCHEMA_VERSION
    status: SessionStatus = "running"
    agent: str
    created_at: datetime
    saved_at: datetime | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    runs: list[Run] = Field(default_factory=list)
    claims: dict[str, Claim] = Field(default_factory=dict)
    inputs: list[str] = Field(default_factory=list)
    last_user_at: datetime | None = None
    last_assistant_at: datetime | None = None
    messages: list[TranscriptMessage] = Field(default_factory=list)
    message_seq: int = 0
    window_from: int | None = None
    summary: str | None = None
    usage: SessionUsage = Field(default_factory=SessionUsage)
    log: list[LogEntry] = Field(default_factory=list)
    warn: list[LogEntry] = Field(default_factory=list)
    error: list[LogEntry] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    clarifying: list[str] = Field(default_factory=list)
    completed_inputs: list[str] = Field(default_factory=list)
    turn: OpenTurn | None = None
    memory: dict[str, MemorySpace] = Field(default_factory=dict)

    @field_validator("id", "agent")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("revision")
    @classmethod
    def _non_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be >= 0")
        return value


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def copy_data(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists and scalars: what a session holds), several
    times cheaper than ``copy.deepcopy``; any other value is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _IMMUTABLE else copy_data(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _IMMUTABLE else copy_data(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def fork_run(run: Run) -> Run:
    """A copy of ``run`` that the engine may mutate freely: every container the engine changes
    is copied (user state deeply); records it never changes (outcomes, waiting) are shared."""
    return run.model_copy(update={
        "state": copy_data(run.state),
        "visits": dict(run.visits),
        "asked": dict(run.asked),
        "outcomes": list(run.outcomes),
        "context": run.context.model_copy(),
    })


def fork_session(session: Session) -> Session:
    """A copy of ``session`` for one turn to work on, without deep-copying the whole document:
    its cost does not grow with the transcript window (messages, claims and log entries are
    never mutated once written, so they are shared)."""
    return session.model_copy(update={
        "data": copy_data(session.data),
        "runs": [fork_run(run) for run in session.runs],
        "claims": dict(session.claims),
        "inputs": list(session.inputs),
        "messages": list(session.messages),
        "usage": session.usage.model_copy(),
        "log": list(session.log),
        "warn": list(session.warn),
        "error": list(session.error),
        "metadata": copy_data(session.metadata),
        "clarifying": list(session.clarifying),
        "completed_inputs": list(session.completed_inputs),
        "memory": {name: space.model_copy(update={"messages": list(space.messages)})
                   for name, space in session.memory.items()},
    })


def remember_input(session: Session, input_id: str) -> None:
    """Record ``input_id`` as seen (the newest :data:`KEEP_INPUTS` are kept)."""
    session.inputs.append(input_id)
    del session.inputs[: max(0, len(session.inputs) - KEEP_INPUTS)]


def remember_completed(session: Session, input_id: str) -> None:
    """Record that the turn of message ``input_id`` completed (the newest :data:`KEEP_COMPLETED` kept)."""
    if input_id not in session.completed_inputs:
        session.completed_inputs.append(input_id)
        del session.completed_inputs[: max(0, len(session.completed_inputs) - KEEP_COMPLETED)]
