"""What a turn is given: one input (a message, a wake, an event or a manual start) plus options."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tether.durable.entries import JournalEntry
from tether.engine.core.ports import CallBudget
from tether.engine.core.session import Session, TranscriptMessage

Checkpoint = Callable[[Session, Sequence[TranscriptMessage], Sequence[Any], Sequence[JournalEntry]], Awaitable[int]]
"""A host's mid-turn save: ``(session, transcript so far, events so far, journal entries so far)
-> new revision``."""

__all__ = ["Approval", "Checkpoint", "Event", "Message", "Resume", "Signal", "Silenced", "Start", "TurnInput",
           "TurnOptions", "Wake"]


@dataclass(frozen=True)
class Message:
    """The customer wrote ``text``.

    ``id`` is the channel's message id (a repeated id is dropped as ``duplicate-input``); ``at``
    defaults to the clock's now.
    """

    text: str
    id: str | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class Wake:
    """A scheduled wake fired: ``key`` is the key the turn put in ``schedule``."""

    key: str


@dataclass(frozen=True)
class Event:
    """The host reports event ``name`` (``key`` is the host's idempotency key)."""

    name: str
    payload: Any = None
    key: str = ""
    direction: Literal["inbound", "outbound"] | None = None
    hop: int = 0


@dataclass(frozen=True)
class Start:
    """Start flow ``flow`` by hand with ``input`` (``key`` keys the run)."""

    flow: str
    input: Any = None
    key: str = ""
    hop: int = 0


@dataclass(frozen=True)
class Approval:
    """A human decided on the approval ``approval_id`` that a run parked on (``ctx.approve``).

    ``decision`` is ``approved`` or ``rejected`` (normalized by the host); a rejection is a
    decision the action sees, not an error.
    """

    approval_id: str
    decision: str
    feedback: str | None = None
    decided_by: str | None = None


@dataclass(frozen=True)
class Signal:
    """The host delivers signal ``name`` with ``payload``; ``id`` deduplicates deliveries."""

    name: str
    payload: Any = None
    id: str | None = None


@dataclass(frozen=True)
class Resume:
    """Complete the session's unfinished turn (one a crash or a lost save interrupted)."""


TurnInput = Message | Wake | Event | Start | Approval | Signal | Resume


@dataclass(frozen=True)
class Silenced:
    """The host's gate is closed: nothing is said. ``understand`` keeps the understand call;
    ``skip`` skips message steps instead of ending their runs."""

    reason: str
    understand: bool = False
    skip: bool = False


@dataclass(frozen=True)
class TurnOptions:
    """Everything else a turn may be given.

    Attributes:
        silenced: a reason string or a :class:`Silenced`; nothing is said this turn.
        context: the host's context, visible to predicates, actions and gates.
        history: the conversation before this input (default: the session's recent window).
        anchors: host anchors by name: ``{"lead": {"key": ..., "last_inbound_at": ...}}``.
        claims: claims held elsewhere: ``{"held": {dedupe_key: iso}, "active": ["flow:anchor"]}``.
        barge_in: set by the host when the customer interrupts the reply being spoken (anything with
            ``is_set()``, e.g. an ``asyncio.Event``): the stream stops, the reply node does not take
            ``next``, and the next message re-runs the same node.
        checkpoint: called after every committed move to another node (before that node runs) with
            the working session (its open-turn mark set) and the transcript messages, events and
            journal entries of the turn so far; returns the session's new revision (the host saved
            it under compare-and-swap). Effects call it too: an effect's started record and its
            result are written this way. The session passed shares its containers with the one
            the engine goes on changing as soon as the call returns or raises: write it (or copy
            it, ``model_copy(deep=True)``) during the call, never keep a reference to it.
        journal: the journal entries recorded before this turn for the session's live runs (the
            host loads them; a re-dispatched action gets their results instead of re-running).
        on_delta: receives every message's visible text as it is said (as ``run_turn``'s
            ``on_delta``), so a host that goes through the ``Runtime`` can stream replies.
        phase: ``phase(name)`` returns a context manager held around each engine phase
            (``understand``, ``decide``, ``run``, ``speak``, ``settle``): the runtime's tracing spans.
        sleep: how the engine waits between an agent step's model attempts (``Agent.turn`` passes
            ``asyncio.sleep``; None: no wait).
        gather: how parallel child steps run at once: ``gather(thunks, limit)`` awaits every
            thunk, at most ``limit`` at a time (``Agent.turn`` passes an asyncio one; None: one by
            one, in order).
        spawn: ``spawn(flow, item, config)`` starts ``flow`` in a new session of the same agent
            and returns its response (the ``Runtime`` passes one; ``ctx.batch`` needs it).
        budget: the host's spending limits, asked before and told after every model call (see
            :class:`~tether.engine.core.ports.CallBudget`); None: no limit.
        gives_session: the host gives the session it passes to the turn and does not need it
            unchanged afterwards (the ``Runtime`` passes the document it has just loaded for the
            turn): a message's turn then works on it in place, not on a copy. Other inputs, and a turn that continues an
            unfinished one, still work on a copy.
    """

    silenced: Silenced | str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    history: Sequence[TranscriptMessage] | None = None
    anchors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    claims: Mapping[str, Any] = field(default_factory=dict)
    checkpoint: Checkpoint | None = None
    barge_in: Any = None
    on_delta: Callable[[str], Awaitable[None]] | None = None
    journal: Sequence[JournalEntry] = ()
    phase: Callable[[str], AbstractContextManager[Any]] | None = None
    sleep: Callable[[float], Awaitable[Any]] | None = None
    gather: Callable[[Sequence[Callable[[], Awaitable[Any]]], int | None], Awaitable[Any]] | None = None
    spawn: Callable[[str, Any, Mapping[str, Any] | None], Awaitable[Any]] | None = None
    budget: CallBudget | None = None
    gives_session: bool = False

    @property
    def silence(self) -> Silenced | None:
        if isinstance(self.silenced, str):
            return Silenced(self.silenced)
        return self.silenced
