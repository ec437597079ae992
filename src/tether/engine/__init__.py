"""Execution: the turn pipeline and the graph engine (pure: no I/O; time and ids are injected)."""

from tether.engine.core.events import (
    CollectUpdate,
    CustomEvent,
    ErrorEvent,
    FlowEnd,
    FlowEnter,
    FlowEvent,
    FlowTransition,
    HandoffEvent,
    NodeEnter,
    NodeExit,
    ReplyWarning,
)
from tether.engine.core.input_checks import MAX_MESSAGE_CHARS
from tether.engine.core.inputs import (
    Approval,
    Event,
    Message,
    Resume,
    Signal,
    Silenced,
    Start,
    TurnInput,
    TurnOptions,
    Wake,
)
from tether.engine.core.migrate import migrate_session
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.results import (
    HandoffRequest,
    OutMessage,
    RunEnded,
    RunStarted,
    ScheduledWake,
    Skipped,
    TurnResult,
)
from tether.engine.core.session import SESSION_SCHEMA_VERSION, Run, Session, TranscriptMessage
from tether.engine.graph.choices import Interactive
from tether.engine.turn.turn import run_turn

__all__ = [
    "Approval",
    "Clock",
    "CollectUpdate",
    "CustomEvent",
    "ErrorEvent",
    "Event",
    "FlowEnd",
    "FlowEnter",
    "FlowEvent",
    "FlowTransition",
    "HandoffEvent",
    "HandoffRequest",
    "Ids",
    "Interactive",
    "MAX_MESSAGE_CHARS",
    "Message",
    "NodeEnter",
    "NodeExit",
    "OutMessage",
    "ReplyWarning",
    "Resume",
    "Run",
    "RunEnded",
    "RunStarted",
    "SESSION_SCHEMA_VERSION",
    "ScheduledWake",
    "Session",
    "Signal",
    "Silenced",
    "Skipped",
    "Start",
    "TranscriptMessage",
    "TurnInput",
    "TurnOptions",
    "TurnResult",
    "Wake",
    "migrate_session",
    "run_turn",
]
