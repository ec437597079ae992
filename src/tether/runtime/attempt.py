"""One request's attempt at a turn: its input, and what the attempt has in hand for the abort
path and the final save (:class:`tether.runtime.request.RequestPath` makes one per try of a request)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tether.agent import Agent
from tether.durable.turns import OpenTurn
from tether.engine.core.inputs import Event, Message, Start, TurnInput, Wake
from tether.engine.core.session import Session, TranscriptMessage
from tether.runtime.envelope import RunResponse
from tether.runtime.window import Tail
from tether.stores.leases import Leased

__all__ = ["Attempt", "DeltaSink", "one_input"]

DeltaSink = Callable[[str], Awaitable[None]]
"""Receives a turn's visible text as deltas (``Runtime.run(on_delta=...)``)."""


def one_input(message: str | Message | None, wake: str | None, event: Event | None,
              start: Start | None) -> TurnInput:
    """The one input ``Runtime.run`` was given, as a turn input (a ValueError for none or several)."""
    given = [value for value in (message, wake, event, start) if value is not None]
    if len(given) != 1:
        raise ValueError("give exactly one input: a message, wake=, event= or start=")
    if isinstance(message, str):
        return Message(message)
    if wake is not None:
        return Wake(wake)
    value = given[0]
    assert isinstance(value, Message | Event | Start)
    return value


@dataclass
class Attempt:
    """What one attempt of a request has in hand, for the abort path and the final save."""

    stored: Session | None = None  # the latest stored version of the session being worked on
    fresh: Session | None = None  # a new session not written yet
    created: str | None = None  # the id of a new session this attempt created (a replay continues it)
    messages: int = 0  # how many of the turn's transcript messages are written
    events: int = 0  # how many of the turn's events are written
    journal: int = 0  # how many of the turn's journal entries are written
    checkpointed: OpenTurn | None = None  # the open-turn mark the last checkpoint wrote
    mine: OpenTurn | None = None  # the open-turn mark an earlier attempt of this request committed
    on_delta: DeltaSink | None = None  # where the text this request's own turn says goes as it is said
    tail: Tail | None = dataclasses.field(default_factory=lambda: Tail([], []))  # stored's records (None: unknown)
    unwindowed: list[TranscriptMessage] = dataclasses.field(default_factory=list)  # written since the tail
    lease: Leased | None = None  # the request's lease; its document serves the first attempt's load
    traced: bool = False  # the request has a turn span: the engine's phases get spans inside it
    agent: Agent | None = None  # the agent a stored flow reload of this request left (none reloads again)
    admit: Callable[[Session | None], RunResponse | None] | None = None  # the caller's check of the loaded session
