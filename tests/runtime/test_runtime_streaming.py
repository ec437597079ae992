"""A host that goes through the Runtime streams replies with ``TurnOptions(on_delta=...)``."""

from __future__ import annotations

from collections.abc import Callable

from tether import Agent, Flow, TurnOptions, end, on_message, reply
from tether.runtime import Runtime
from tether.testing import ScriptedModel


async def test_on_delta_in_the_options_receives_the_replies_as_they_are_said(
    make_runtime: Callable[..., Runtime],
) -> None:
    flow = Flow("f", "f", nodes=[reply("hi", response="Welcome!", next="talk"),
                                 reply("talk", instructions="Chat.", next=end("done"))], on=[on_message()])
    agent = Agent("Ava", flows=[flow], idle="silent").with_model(ScriptedModel(speak=['{"message": "How are you?"}']))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    response = await make_runtime(agent).run("Ava", "hello", options=TurnOptions(on_delta=on_delta))
    assert response.success and response.result is not None
    assert response.result.text == "Welcome!\n\nHow are you?"
    assert "".join(deltas) == response.result.text and len(deltas) >= 2
