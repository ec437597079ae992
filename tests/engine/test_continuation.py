"""Unfinished turns in the pure engine: the mark a mid-turn write leaves, and how a turn on a
document carrying it goes (continue on the same input or ``Resume``, refuse any other input)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tether import Agent, Flow, FlowRuntimeError, Message, Session, TurnOptions, action, end, on_message, reply
from tether.engine import Resume


class Crash(BaseException):
    """The worker dies at the checkpoint, right after the write."""


def relay(ran: list[str]) -> Agent:
    @action("first")
    async def first(state: dict[str, Any], ctx: Any) -> None:
        ran.append("first")

    @action("second")
    async def second(state: dict[str, Any], ctx: Any) -> None:
        ran.append("second")

    hello = reply("hello", response="step one done", next="second")
    done = reply("done", response="done: ok", next=end("done"))
    flow = Flow("r", start=first, nodes=[first, hello, second, done], on=[on_message(repeat="always")])
    return Agent("Relay", flows=[flow])


async def _crashed(agent: Agent, written: list[Session]) -> Session:
    async def checkpoint(session: Session, transcript: Sequence[Any], events: Sequence[Any],
                         journal: Sequence[Any]) -> int:
        written.append(session.model_copy(deep=True))  # valid during the call only: keep a copy
        if len(written) == 2:  # first -> hello, then hello -> second: die after the second write
            raise Crash()
        return session.revision + 1

    with pytest.raises(Crash):
        await agent.turn(None, Message("go", id="m1"), options=TurnOptions(checkpoint=checkpoint))
    return written[-1]


async def test_a_mid_turn_write_carries_the_open_turn_mark() -> None:
    written: list[Session] = []
    await _crashed(relay([]), written)
    mark = written[-1].turn
    assert mark is not None and mark.input == {"kind": "message", "id": "m1", "text": "go", "at": None}
    assert [m.text for m in mark.said] == ["step one done"]


async def test_the_same_input_continues_the_turn_with_its_whole_reply() -> None:
    ran: list[str] = []
    agent = relay(ran)
    crashed = await _crashed(agent, [])
    result = await agent.turn(crashed, Message("go", id="m1"))
    assert result.text == "step one done\n\ndone: ok"  # said before the crash, and the rest
    assert ran == ["first", "second"]  # first is not run again: the run resumed at its written node
    assert result.session is not None and result.session.turn is None
    assert [m.text for m in result.new_transcript] == ["done: ok"]  # "go" is not ingested twice
    assert "turn-continued" in result.codes()


async def test_another_input_is_refused_until_the_turn_is_resumed() -> None:
    agent = relay([])
    crashed = await _crashed(agent, [])
    with pytest.raises(FlowRuntimeError, match="unfinished") as raised:
        await agent.turn(crashed, Message("other", id="m2"))
    assert raised.value.code == "turn-unfinished"
    resumed = await agent.turn(crashed, Resume())
    assert resumed.text == "step one done\n\ndone: ok"
    assert resumed.session is not None
    nothing = await agent.turn(resumed.session, Resume())
    assert not nothing.changed and nothing.codes() == ["no-open-turn"]


async def test_a_repeated_message_id_gets_the_reply_its_turn_recorded() -> None:
    agent = relay([])
    first = await agent.turn(None, Message("go", id="m1"))
    assert first.session is not None
    again = await agent.turn(first.session, Message("go", id="m1"))  # the client lost the response
    assert not again.changed and again.codes() == ["duplicate-input"]
    assert again.text == first.text == "step one done\n\ndone: ok"
    unknown = await agent.turn(first.session, Message("go"))  # no id: a new message
    assert unknown.changed and unknown.text == first.text
