"""Test agents and a spying store wrapper for the runtime tests."""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from tether import Agent, Field, Flow, Message, action, end, on_message, on_silence, reply, stay, wait
from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import StoreError
from tether.stores import Store, TurnRecords
from tether.stores.records import JournalEntry, SessionSummary, StoredEvent, Wake

Hook = Callable[[str], Awaitable[None]]
_ids = itertools.count(1)


def msg(text: str = "hello") -> Message:
    """A message with a unique id (a FakeClock that stands still would make every run key equal)."""
    return Message(text, id=f"m{next(_ids)}")


def counter_agent(name: str = "Counter", *, on_work: Hook | None = None, explode: list[bool] | None = None,
                  model: Any = None) -> Agent:
    """Every message starts a run: ``work`` bumps ``n`` (awaiting ``on_work(tag)`` first, the tag
    coming from the turn context), then ``say`` answers ``n=<n>`` verbatim and ends the run.
    While ``explode[0]`` is true the reply's ``next`` returns 42, not a transition: the flow's bug,
    which degrades the run."""

    @action("work")
    async def work(state: dict[str, Any], ctx: Any) -> None:
        if on_work is not None:
            await on_work(str(ctx.context.get("tag", "")))
        ctx.set(n=int(ctx.data.get("n", 0)) + 1)

    def answer(state: dict[str, Any]) -> str:
        return f"n={state['n']}"

    def after(turn: Any, state: dict[str, Any]) -> Any:
        return 42 if explode and explode[0] else end("answered")

    say = reply("say", response=answer, next=after)
    flow = Flow("count", start=work, nodes=[work, say], on=[on_message(repeat="always")])
    return Agent(name, flows=[flow], model=model)


def waiting_agent(name: str = "Waiter", fired: list[str] | None = None) -> Agent:
    """The first message is answered, then the run waits one hour (a timer wake) before ``fire``."""

    @action("fire")
    async def fire(state: dict[str, Any], ctx: Any) -> Any:
        if fired is not None:
            fired.append(ctx.key)
        ctx.set(fired=True)
        return end("fired")

    pause = wait("pause", timer="1h", then=fire)
    first = reply("first", response="I will get back to you.", next=pause)
    flow = Flow("later", start=first, nodes=[first, pause, fire], on=[on_message()])
    return Agent(name, flows=[flow])


def relay_agent(name: str = "Relay", *, on_hold: Hook | None = None) -> Agent:
    """A three-node turn: ``prep`` bumps ``prepped`` and moves to ``hold``, which awaits
    ``on_hold(tag)`` (the tag from the turn context), bumps ``held`` and moves to ``done``, which
    answers ``prepped=<p> held=<h>`` verbatim and ends the run: two moves, so two checkpoints."""

    @action("prep")
    async def prep(state: dict[str, Any], ctx: Any) -> None:
        ctx.set(prepped=int(ctx.data.get("prepped", 0)) + 1)

    @action("hold")
    async def hold(state: dict[str, Any], ctx: Any) -> None:
        if on_hold is not None:
            await on_hold(str(ctx.context.get("tag", "")))
        ctx.set(held=int(ctx.data.get("held", 0)) + 1)

    done = reply("done", response=lambda state: f"prepped={state['prepped']} held={state['held']}",
                 next=end("done"))
    flow = Flow("relay", start=prep, nodes=[prep, hold, done], on=[on_message(repeat="always")])
    return Agent(name, flows=[flow])


def tally_agent(name: str = "Tally", *, on_mull: Hook | None = None) -> Agent:
    """A three-node turn tagged by its request (``TurnOptions(context={"tag": ...})``): ``take``
    appends the tag to ``seen`` and moves to ``mull`` (a checkpoint), which awaits
    ``on_mull(tag)`` and moves to ``answer`` (a checkpoint), which says ``echo <tag>`` and ends
    the run. A request answered with another request's tag got another turn's reply."""

    @action("take")
    async def take(state: dict[str, Any], ctx: Any) -> None:
        tag = str(ctx.context.get("tag", ""))
        ctx.set(seen=[*ctx.data.get("seen", []), tag], last=tag)

    @action("mull")
    async def mull(state: dict[str, Any], ctx: Any) -> None:
        if on_mull is not None:
            await on_mull(str(ctx.context.get("tag", "")))

    answer = reply("answer", response=lambda state: f"echo {state['last']}", next=end("answered"))
    flow = Flow("tally", start=take, nodes=[take, mull, answer], on=[on_message(repeat="always")])
    return Agent(name, flows=[flow])


def silence_agent(name: str = "Nudger") -> Agent:
    """Every message gets an engine-rendered ``Got it.``; ten minutes of silence after it starts
    ``nudge``, which says ``Still there?``."""
    ack = reply("ack", response="Got it.", next=stay)
    chat = Flow("chat", start=ack, nodes=[ack], on=[on_message()])
    ping = reply("ping", response="Still there?", next=end("nudged"))
    nudge = Flow("nudge", start=ping, nodes=[ping], on=[on_silence("10m")])
    return Agent(name, flows=[chat, nudge])


class SpyStore(Store):
    """Delegates to ``inner`` and records every call; can fail or interfere with saves.

    ``calls`` lists ``(method, session_id)``; ``saves`` lists ``(session, expected, records)``
    (checkpoints too; ``unflushed`` lists the expected revisions of those saved as checkpoints).
    ``before_save(session, expected)`` runs before each delegated save (to simulate another
    writer); ``fail_saves`` makes every save and create raise ``StoreError``, and
    ``fail_writes(1, 3)`` only the first and third writes (create, save, checkpoint) from now on.
    """

    def __init__(self, inner: Store) -> None:
        super().__init__()
        self.inner = inner
        self.calls: builtins.list[tuple[str, str | None]] = []
        self.saves: builtins.list[tuple[Session, int, TurnRecords | None]] = []
        self.unflushed: builtins.list[int] = []
        self.before_save: Callable[[Session, int], Awaitable[None]] | None = None
        self.fail_saves: str | None = None
        self.failing: set[int] = set()  # the ordinals (from 1, counted by ``written``) of writes that fail
        self.written = 0

    def fail_writes(self, *ordinals: int) -> None:
        """Make the writes numbered ``ordinals`` from now on (1: the next one) raise ``StoreError``."""
        self.written = 0
        self.failing = set(ordinals)

    def _fails(self, operation: str, session_id: str) -> None:
        self.written += 1
        if self.fail_saves or self.written in self.failing:
            raise StoreError(self.fail_saves or f"store down (write {self.written})", operation=operation,
                             session_id=session_id)

    def writes(self) -> builtins.list[tuple[str, str | None]]:
        return [c for c in self.calls if c[0] in ("create", "save", "delete")]

    async def load(self, session_id: str) -> Session | None:
        self.calls.append(("load", session_id))
        return await self.inner.load(session_id)

    async def create(self, session: Session, records: TurnRecords | None = None) -> Session:
        self.calls.append(("create", session.id))
        self._fails("create", session.id)
        return await self.inner.create(session, records)

    async def save(self, session: Session, expected_revision: int, records: TurnRecords | None = None) -> Session:
        return await self._save(session, expected_revision, records, self.inner.save)

    async def save_checkpoint(self, session: Session, expected_revision: int,
                              records: TurnRecords | None = None) -> Session:
        if not (records and records.journal):  # a checkpoint with journal entries is flushed
            self.unflushed.append(expected_revision)
        return await self._save(session, expected_revision, records, self.inner.save_checkpoint)

    async def _save(self, session: Session, expected_revision: int, records: TurnRecords | None,
                    write: Callable[[Session, int, TurnRecords | None], Awaitable[Session]]) -> Session:
        self.calls.append(("save", session.id))
        self.saves.append((session.model_copy(deep=True), expected_revision, records))  # the caller goes on changing it
        self._fails("save", session.id)
        if self.before_save is not None:
            await self.before_save(session, expected_revision)
        return await write(session, expected_revision, records)

    def lease(self, session_id: str, *, timeout: float = 30.0) -> AbstractAsyncContextManager[None]:
        self.calls.append(("lease", session_id))
        return self.inner.lease(session_id, timeout=timeout)

    async def delete(self, session_id: str, expected_revision: int | None = None) -> None:
        self.calls.append(("delete", session_id))
        await self.inner.delete(session_id, expected_revision)

    async def list(self, *, agent: str | None = None, status: str | None = None, tenant: str | None = None,
                   limit: int = 100, after: tuple[datetime, str] | None = None) -> builtins.list[SessionSummary]:
        self.calls.append(("list", None))
        return await self.inner.list(agent=agent, status=status, tenant=tenant, limit=limit, after=after)

    async def prune(self, *, older_than: datetime) -> int:
        return await self.inner.prune(older_than=older_than)

    async def transcript(self, session_id: str, *, after_seq: int = 0,
                         limit: int | None = None) -> builtins.list[TranscriptMessage]:
        self.calls.append(("transcript", session_id))
        return await self.inner.transcript(session_id, after_seq=after_seq, limit=limit)

    async def events(self, session_id: str, *, after: int = 0, limit: int | None = None,
                     newest: int | None = None) -> builtins.list[StoredEvent]:
        return await self.inner.events(session_id, after=after, limit=limit, newest=newest)

    async def journal(self, session_id: str, *, run_id: str | None = None) -> builtins.list[JournalEntry]:
        return await self.inner.journal(session_id, run_id=run_id)

    async def due_wakes(self, now: datetime, *, limit: int = 100, lease: float = 30.0,
                        worker: str = "") -> builtins.list[Wake]:
        self.calls.append(("due_wakes", None))
        return await self.inner.due_wakes(now, limit=limit, lease=lease, worker=worker)

    async def complete_wake(self, wake: Wake) -> None:
        self.calls.append(("complete_wake", wake.session_id))
        await self.inner.complete_wake(wake)

    async def pending_wakes(self, session_id: str | None = None) -> builtins.list[Wake]:
        return await self.inner.pending_wakes(session_id)

    async def close(self) -> None:
        await self.inner.close()


def greet(version: str, done: str) -> dict[str, Any]:
    """A stored flow document: ``greet`` parks at a collect until the customer gives a name (3
    characters or more), then says ``done``."""
    return {"flow": {"id": "greet", "version": version, "on": [{"kind": "message"}], "nodes": [
        {"kind": "collect", "id": "ask_name", "fields": ["name"], "ask": "Your name?",
         "resolvers": [{"kind": "whole_message", "field": "name", "min_length": 3}]},
        {"kind": "reply", "id": "hello", "response": {"template": done}, "next": {"end": "greeted"}},
    ]}}


def plain_agent() -> Agent:
    """The agent ``greet`` documents are published to: no flows of its own."""
    return Agent("Pia", fields={"name": Field("string")})


async def park(runtime: Any) -> str:
    """Start a new session of ``greet`` on a runtime serving it and leave it waiting for a name;
    its id."""
    parked = await runtime.run("Pia", "hi")  # too short to be a name: the collect asks and waits
    assert parked.success and not parked.completed and parked.message == "Your name?", parked
    return str(parked.session)

