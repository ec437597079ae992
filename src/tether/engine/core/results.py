"""What a turn returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from tether.engine.core.events import FlowEvent
from tether.engine.core.session import Outcome, Session
from tether.models.types import Usage

__all__ = ["HandoffRequest", "OutMessage", "RunEnded", "RunStarted", "ScheduledWake", "Skipped", "TurnResult"]


@dataclass(frozen=True)
class OutMessage:
    """A message for the customer.

    ``kind`` is ``ai`` (spoken by the model) or ``verbatim`` (rendered by the engine); send it
    after ``after_ms``. ``key`` is deterministic (``run:node:visit``; ``idle:<trigger key>``).
    """

    text: str
    kind: Literal["ai", "verbatim"]
    key: str
    run_id: str | None = None
    node_id: str | None = None
    after_ms: int = 0


@dataclass(frozen=True)
class ScheduledWake:
    """Wake the session with ``key`` at ``at``; ``replaces`` names a wake this one supersedes."""

    key: str
    at: datetime
    replaces: str | None = None


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    flow: str
    anchor: str
    dedupe_key: str


@dataclass(frozen=True)
class RunEnded:
    run_id: str
    flow: str
    reason: str


@dataclass(frozen=True)
class Skipped:
    """A trigger that matched but did not start a run, with the reason code."""

    flow: str
    code: str
    message: str
    anchor: str = "session"
    trigger_key: str = ""


@dataclass(frozen=True)
class HandoffRequest:
    """The conversation is handed to ``agent`` (``human`` for escalations)."""

    agent: str
    reason: str | None = None
    run_id: str | None = None


@dataclass
class TurnResult:
    """The result of one turn.

    Attributes:
        session: the new session (its ``revision`` unchanged: the store bumps it on save). The
            session passed in is never mutated. None only when a wake found no session.
        changed: False when the input was ignored, or nothing at all came of it.
        status: ``ended`` (a run finished and nobody waits for the user), ``handoff``,
            ``awaiting_approval`` (a run is parked on ``ctx.approve`` and none asks the user), or
            ``awaiting_user``.
        messages: what to send, in emission order.
        schedule: wakes to store.
        outcomes: what each step did, with stable codes.
        llm_calls: model calls spent by this turn; ``usage`` their tokens.
        agent_calls: how many of them agent steps made (calls the author asked for, counted apart
            from the message-turn budget).
        workflow_calls: how many of them workflow runs made that the turn's actions drove (a
            ``WorkflowChat``'s subprompts and agent turns; also apart from the budget).
        content_type: what the reply is (the content type of the agent step that spoke last;
            ``text/plain`` otherwise).
        events: the flow events, in order.
        new_transcript: the transcript messages this turn appended (the store keeps them).
        journal: the effect journal entries this turn wrote (the store keeps them).
    """

    session: Session | None
    changed: bool
    status: Literal["ended", "handoff", "awaiting_user", "awaiting_approval"] = "awaiting_user"
    messages: list[OutMessage] = field(default_factory=list)
    schedule: list[ScheduledWake] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    started: list[RunStarted] = field(default_factory=list)
    ended: list[RunEnded] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    llm_calls: int = 0
    agent_calls: int = 0
    workflow_calls: int = 0
    content_type: str = "text/plain"
    usage: Usage = field(default_factory=Usage)
    events: list[FlowEvent] = field(default_factory=list)
    handoff: HandoffRequest | None = None
    new_transcript: list[Any] = field(default_factory=list)
    journal: list[Any] = field(default_factory=list)

    @property
    def text(self) -> str:
        """All messages' text joined by blank lines (handy in tests and terminals)."""
        return "\n\n".join(m.text for m in self.messages)

    def codes(self) -> list[str]:
        """The outcome codes, in order (lines with no code omitted)."""
        return [o.code for o in self.outcomes if o.code]
