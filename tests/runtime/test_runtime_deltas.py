"""``Runtime.run(on_delta=...)``: the text a turn says reaches the host as it streams."""

from __future__ import annotations

from collections.abc import AsyncIterator

from tether import Agent, Flow, on_message, reply
from tether.models.types import ModelRequest, StreamChunk
from tether.runtime import Runtime
from tether.stores import MemoryStore
from tether.testing import ScriptedModel


class ChunkedModel(ScriptedModel):
    """Streams each scripted reply in pieces of four characters."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        for i in range(0, len(response.text), 4):
            yield StreamChunk(delta=response.text[i:i + 4])
        yield StreamChunk(done=True, response=response)


async def test_run_hands_the_turns_deltas_to_on_delta_and_saves_the_turn() -> None:
    talk = reply("talk", instructions="Chat.")
    agent = Agent("Ava", flows=[Flow("f", start=talk, nodes=[talk], on=[on_message(repeat="always")])])
    runtime = Runtime(agent.with_model(ChunkedModel(speak=["Streaming works fine."])), store=MemoryStore())
    heard: list[str] = []

    async def on_delta(text: str) -> None:
        heard.append(text)

    response = await runtime.run("Ava", "hi", on_delta=on_delta)
    assert response.success and response.message == "Streaming works fine."
    assert len(heard) > 2 and "".join(heard) == "Streaming works fine."
    assert [m.text for m in await runtime.store.transcript(response.session)] == ["hi", "Streaming works fine."]
    await runtime.close()
