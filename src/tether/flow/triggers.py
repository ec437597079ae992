"""Flow triggers: what starts a run, and how often.

- ``on_message(*phrases)``: phrases describing what the customer asks for, scored 0-100 by the
  understand call; a phrase starting with ``!`` is an exclusion ("score 0 when..."); no phrases
  is the catch-all, never scored.
- ``on_mention(*phrases, extract=None)``: the model answers true/false; the run starts beside the
  conversation; ``extract`` values become the run's input. No phrases = a code-only detector.
- ``on_silence(duration)``: the customer has been quiet since the assistant last spoke.
- ``on_event(name, after=None)``: a host event; its payload becomes the run's input; ``after``
  parks the run before its first step.

``repeat`` is ``"once"``, ``"always"`` or ``{"cooldown": duration}`` (default ``once``, ``always``
for events); ``if_`` is a CEL condition or a code predicate that must hold for a start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tether.flow.durations import parse_duration

__all__ = [
    "EventTrigger",
    "MentionTrigger",
    "MessageTrigger",
    "Repeat",
    "SilenceTrigger",
    "Trigger",
    "on_event",
    "on_mention",
    "on_message",
    "on_silence",
]

Repeat = Literal["once", "always"] | Mapping[str, str]


def check_repeat(repeat: Any) -> str | None:
    """A problem with a ``repeat`` value, or None."""
    if repeat in ("once", "always"):
        return None
    if isinstance(repeat, Mapping) and set(repeat) == {"cooldown"}:
        try:
            parse_duration(repeat["cooldown"])
        except ValueError as exc:
            return str(exc)
        return None
    return f"repeat must be 'once', 'always' or {{'cooldown': duration}}, got {repeat!r}"


@dataclass(frozen=True)
class MessageTrigger:
    """Starts a run when the customer's message matches (scored) or as the catch-all."""

    phrases: tuple[str, ...] = ()
    repeat: Repeat = "once"
    if_: Any = None
    kind: Literal["message"] = "message"

    @property
    def catch_all(self) -> bool:
        return not self.phrases


@dataclass(frozen=True)
class MentionTrigger:
    """Starts a run beside the conversation when the message mentions something."""

    phrases: tuple[str, ...] = ()
    extract: Mapping[str, Any] | None = None
    repeat: Repeat = "once"
    if_: Any = None
    kind: Literal["mention"] = "mention"


@dataclass(frozen=True)
class SilenceTrigger:
    """Starts a run when the customer stays quiet for ``after`` since the assistant spoke."""

    after: str
    repeat: Repeat = "once"
    if_: Any = None
    business_hours: bool = False
    kind: Literal["silence"] = "silence"


@dataclass(frozen=True)
class EventTrigger:
    """Starts a run when the host reports event ``name``."""

    name: str
    after: str | None = None
    repeat: Repeat = "always"
    if_: Any = None
    business_hours: bool = False
    kind: Literal["event"] = "event"


Trigger = MessageTrigger | MentionTrigger | SilenceTrigger | EventTrigger


def on_message(*phrases: str, repeat: Repeat = "once", if_: Any = None) -> MessageTrigger:
    """A message trigger; no phrases makes the catch-all."""
    return MessageTrigger(tuple(phrases), repeat, if_)


def on_mention(*phrases: str, extract: Mapping[str, Any] | None = None, repeat: Repeat = "once",
               if_: Any = None) -> MentionTrigger:
    """A mention trigger."""
    return MentionTrigger(tuple(phrases), extract, repeat, if_)


def on_silence(after: str, *, repeat: Repeat = "once", if_: Any = None, business_hours: bool = False) -> SilenceTrigger:
    """A silence trigger, ``after`` a duration like ``"10m"``."""
    return SilenceTrigger(after, repeat, if_, business_hours)


def on_event(name: str, *, after: str | None = None, repeat: Repeat = "always", if_: Any = None,
             business_hours: bool = False) -> EventTrigger:
    """An event trigger."""
    return EventTrigger(name, after, repeat, if_, business_hours)


def trigger_problems(trigger: Any) -> list[str]:
    """Problems with one trigger, as sentences."""
    problems: list[str] = []
    if not isinstance(trigger, MessageTrigger | MentionTrigger | SilenceTrigger | EventTrigger):
        return [f"not a trigger: {trigger!r} (use on_message, on_mention, on_silence or on_event)"]
    if (problem := check_repeat(trigger.repeat)) is not None:
        problems.append(problem)
    if isinstance(trigger, MessageTrigger | MentionTrigger):
        wrong = [p for p in trigger.phrases if not isinstance(p, str)]
        if wrong:
            return [*problems, f"phrases must be text, got {wrong[0]!r} (pass each phrase as its own argument: "
                    "on_message('book a table', 'reserve'))"]
        real = [p for p in trigger.phrases if p.strip() not in ("", "!")]
        if real and all(p.startswith("!") for p in real):
            problems.append("a trigger made only of exclusions ('!...') can never match")
    durations: list[str | None] = []
    if isinstance(trigger, SilenceTrigger):
        durations.append(trigger.after)
    if isinstance(trigger, EventTrigger):
        durations.append(trigger.after)
        if not trigger.name.strip():
            problems.append("an event trigger needs an event name")
    for value in durations:
        if value is None:
            continue
        try:
            parse_duration(value)
        except ValueError as exc:
            problems.append(str(exc))
    return problems
