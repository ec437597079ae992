"""turn_stream yields the speak call's visible text as it streams, then the result."""

from __future__ import annotations

from collections.abc import AsyncIterator

from tether import NEXT, Agent, Field, Flow, Session, collect, end, on_message, reply
from tether.engine.core.streaming import MessageDeltas
from tether.models.types import Capabilities, ModelRequest, StreamChunk
from tether.testing import FakeClock, FunctionModel, ScriptedModel, SequentialIds


class ChunkedModel(ScriptedModel):
    """Streams each scripted reply's text in small pieces."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        response = await self.complete(request)
        raw = response.text
        for i in range(0, len(raw), 5):
            yield StreamChunk(delta=raw[i:i + 5])
        yield StreamChunk(done=True, response=response)


async def test_deltas_then_the_result() -> None:
    talk = reply("talk", instructions="Chat.")
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[talk], on=[on_message()])])
    model = ChunkedModel(speak=['{"message": "Hello \\"there\\", friend!"}'])
    agent = agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    chunks = [chunk async for chunk in agent.turn_stream(None, "hi")]
    assert "".join(c.delta for c in chunks[:-1]) == 'Hello "there", friend!'
    assert len(chunks) > 3 and chunks[-1].done and chunks[-1].result is not None
    assert chunks[-1].result.text == 'Hello "there", friend!'


def test_message_deltas_decode_the_envelope_and_pass_plain_text() -> None:
    deltas = MessageDeltas()
    pieces = ['{"mess', 'age": "a\\', 'nb\\u00e9', '", "email": null}']
    assert "".join(deltas.feed(p) for p in pieces) == "a\nbé"
    plain = MessageDeltas()
    assert plain.feed("Hello ") + plain.feed("world") == "Hello world"
    fenced = MessageDeltas()
    assert "".join(fenced.feed(p) for p in ["```json\n", '{"message": "ok"}', "\n```"]) == "ok"


async def test_barge_in_stops_the_stream_and_keeps_the_reply_node() -> None:
    import asyncio

    from tether import TurnOptions

    talk = reply("talk", instructions="Explain.", next=lambda turn, state: end("done"))
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[talk], on=[on_message()])])
    model = ChunkedModel(speak=["Let me explain this in a rather long way", "Short answer: yes."])
    agent = agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    barge_in = asyncio.Event()
    heard = []
    result = None
    async for chunk in agent.turn_stream(None, "explain", options=TurnOptions(barge_in=barge_in)):
        if chunk.done:
            result = chunk.result
        else:
            heard.append(chunk.delta)
            barge_in.set()  # the customer starts talking over the first words
    assert result is not None and result.status == "awaiting_user"
    assert result.text == "".join(heard).strip() and len(result.text) < len("Let me explain this in a rather long way")
    (run,) = result.session.runs
    assert run.node == "talk" and run.status == "asking"  # next() was not applied
    again = await agent.turn(result.session, "just tell me")
    assert again.text == "Short answer: yes." and again.ended[0].reason == "done"


async def test_engine_rendered_replies_stream_as_deltas_in_order() -> None:
    hello = reply("hello", response="Hello ${name}!", next=NEXT)
    talk = reply("talk", instructions="Chat.")
    flow = Flow("f", "f", nodes=[hello, talk], on=[on_message()])
    agent = Agent("Ava", fields={"name": Field()}, flows=[flow])
    model = ChunkedModel(speak=['{"message": "How can I help?"}'])
    agent = agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    session = Session(id="s-0", agent=agent.id, created_at=FakeClock().now(), data={"name": "Ada"})
    chunks = [chunk async for chunk in agent.turn_stream(session, "hi")]
    deltas = [c.delta for c in chunks[:-1]]
    result = chunks[-1].result
    assert result is not None and result.text == "Hello Ada!\n\nHow can I help?"
    assert deltas[0] == "Hello Ada!" and "".join(deltas) == result.text


async def test_only_the_final_chunk_when_nothing_is_said() -> None:
    quiet = reply("quiet", response="", next=lambda turn, state: end("done"))
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[quiet], on=[on_message()])], idle="silent")
    chunks = [chunk async for chunk in agent.with_clock(FakeClock()).turn_stream(None, "hi")]
    assert len(chunks) == 1 and chunks[0].done and chunks[0].result is not None and chunks[0].result.text == ""


async def test_a_fixed_reply_reaches_the_stream_before_a_slow_model_call() -> None:
    seen: list[str] = []

    async def on_delta_then_record(request: ModelRequest) -> str:
        seen.append("model called")
        return '{"message": "Done."}'

    hold = reply("hold", response="One moment, checking.", next=NEXT)
    talk = reply("talk", instructions="Answer.")
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[hold, talk], on=[on_message()])])
    agent = agent.with_model(FunctionModel(on_delta_then_record)).with_clock(FakeClock(), SequentialIds("s"))
    async for chunk in agent.turn_stream(None, "status?"):
        if chunk.delta:
            seen.append(chunk.delta)
    assert seen[:2] == ["One moment, checking.", "model called"]
    assert "".join(s for s in seen if s != "model called") == "One moment, checking.\n\nDone."


async def test_a_fixed_question_and_a_non_streaming_model_reply_reach_the_stream() -> None:
    ask = collect("ask", fields=["email"], question="What is your email?")
    flow = Flow("f", "f", nodes=[ask], on=[on_message()])
    agent = Agent("Ava", fields={"email": Field()}, flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))
    chunks = [chunk async for chunk in agent.turn_stream(None, "hi")]
    assert [c.delta for c in chunks[:-1]] == ["What is your email?"] and chunks[-1].result is not None
    assert chunks[-1].result.text == "What is your email?"

    talk = reply("talk", instructions="Chat.")
    plain = Agent("Ava", flows=[Flow("g", "g", nodes=[talk], on=[on_message()])])
    model = ScriptedModel(speak=['{"message": "Hi there."}'], capabilities=Capabilities(streaming=False))
    plain = plain.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
    chunks = [chunk async for chunk in plain.turn_stream(None, "hi")]
    assert [c.delta for c in chunks[:-1]] == ["Hi there."]
