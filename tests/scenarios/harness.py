"""A small driver for whole-conversation scenarios: one agent, one session, a fake clock."""

from __future__ import annotations

from typing import Any

from tether import Agent, Event, Message, Start, TurnOptions, TurnResult, Wake
from tether.engine.core.session import Run, Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds


class Conversation:
    """Drives turns of one agent over one session; every result is kept in ``results``."""

    def __init__(self, agent: Agent, model: ScriptedModel | None = None, *, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock("2026-01-05T09:00:00Z")
        self.model = model if model is not None else ScriptedModel()
        self.agent = agent.with_model(self.model).with_clock(self.clock, SequentialIds("sess"))
        self.session: Session | None = None
        self.results: list[TurnResult] = []
        self._n = 0

    async def _turn(self, input_: Any, **options: Any) -> TurnResult:
        before = self.session.model_copy(deep=True) if self.session is not None else None
        result = await self.agent.turn(self.session, input_, options=TurnOptions(**options))
        if before is not None:
            assert self.session == before, "a turn mutated the session it was given"
        if result.session is not None and result.changed:
            # every session must survive a JSON round trip between turns
            self.session = Session.model_validate_json(result.session.model_dump_json())
        self.results.append(result)
        return result

    async def say(self, text: str, *, id: str | None = None, **options: Any) -> TurnResult:
        self._n += 1
        return await self._turn(Message(text, id=id or f"m{self._n}"), **options)

    async def wake(self, key: str, **options: Any) -> TurnResult:
        return await self._turn(Wake(key), **options)

    async def event(self, name: str, payload: Any = None, *, key: str = "e1", **kw: Any) -> TurnResult:
        return await self._turn(Event(name, payload, key, **kw))

    async def start(self, flow: str, input: Any = None, *, key: str = "k1") -> TurnResult:
        return await self._turn(Start(flow, input, key))

    @property
    def runs(self) -> list[Run]:
        return list(self.session.runs) if self.session is not None else []

    def run(self, flow: str) -> Run:
        return next(r for r in self.runs if r.flow == flow)
