"""The engine refuses input no store could save, before anything runs; everything else is taken."""

from __future__ import annotations

import pytest

from tether import Agent, Flow, InvalidInputError, Message, end, on_message, reply
from tether.engine.core.input_checks import MAX_MESSAGE_CHARS
from tether.engine.core.session import Session
from tether.testing import FakeClock, SequentialIds


def _agent() -> Agent:
    echo = reply("echo", response=lambda state: "ok", next=end("done"))
    flows = [Flow("echo", "echo", nodes=[echo], on=[on_message(repeat="always")])]
    return Agent("Ava", flows=flows).with_clock(FakeClock(), SequentialIds("s"))


@pytest.mark.parametrize(("text", "what"), [("\ud800", "lone surrogate (U+D800) at index 0"),
                                            ("ab\x00", "NUL character at index 2"),
                                            ("z" * (MAX_MESSAGE_CHARS + 1), "the limit is 100000"),
                                            ("", "message.text is empty"), (" \n\t ", "message.text is empty")])
async def test_refused_before_anything_runs(text: str, what: str) -> None:
    agent = _agent()
    first = await agent.turn(None, "hello")
    assert first.session is not None
    before = first.session.model_copy(deep=True)
    with pytest.raises(InvalidInputError) as caught:
        await agent.turn(first.session, Message(text))
    assert caught.value.code == "invalid-input" and caught.value.where == "message.text"
    assert what in caught.value.message
    assert first.session == before
    again = await agent.turn(first.session, "still there?")
    assert again.text == "ok"


async def test_control_characters_survive_a_json_round_trip() -> None:
    text = "a\tb\x01c\x1bd\x7fe\u2028f\ufffe"
    result = await _agent().turn(None, text)
    assert result.session is not None
    restored = Session.model_validate_json(result.session.model_dump_json())
    assert restored.messages[0].text == text
