"""Property suites (fixed-seed ci profile): no message text and no model reply aborts a session.

- Any message text (lone surrogates, NUL and other control characters included) through the engine
  and through ``Runtime`` on SQLite is either taken and stored, or refused with ``invalid-input``
  before anything is saved; either way the next message is answered.
- Any model reply (random JSON, deep nesting, garbage text) to the understand, extract and decide
  calls raises nothing but handled errors: understand and extract drop what does not fit, decide
  refuses it as ``ModelError(kind="invalid")``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tether import Agent, Field, Flow, InvalidInputError, Message, ModelError, collect, decide, end, on_message, reply
from tether.engine.core.session import Session
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock, FunctionModel, SequentialIds

ANY_CHAR = st.characters(exclude_categories=())  # surrogates (Cs) included
NASTY = st.text(st.sampled_from("a \ud800\udfff\x00\x1b\u2028é"), min_size=1, max_size=8)
TEXTS = st.one_of(st.text(ANY_CHAR, max_size=40), NASTY,
                  st.sampled_from(["\ud800", "a\x00b", "\x1b[31mred", "\u2028", "\ufeff", "", " "]))


def _echo_agent() -> Agent:
    echo = reply("echo", response=lambda state: "ok", next=end("done"))
    return Agent("Echo", flows=[Flow("echo", "echo", nodes=[echo], on=[on_message(repeat="always")])])


@given(text=TEXTS)
def test_any_message_text_through_the_engine(text: str) -> None:
    async def run() -> None:
        agent = _echo_agent().with_clock(FakeClock(), SequentialIds("s"))
        first = await agent.turn(None, "hello")
        assert first.session is not None
        try:
            result = await agent.turn(first.session, Message(text))
        except InvalidInputError as exc:
            assert exc.code == "invalid-input"
            session = first.session
        else:
            assert result.session is not None
            session = Session.model_validate_json(result.session.model_dump_json())  # it can be stored
        again = await agent.turn(session, "still there?")
        assert again.text == "ok"

    asyncio.run(run())


@settings(max_examples=25)
@given(text=TEXTS)
def test_any_message_text_through_the_runtime(tmp_path_factory: Any, text: str) -> None:
    path: Path = tmp_path_factory.mktemp("props") / "tether.db"

    async def run() -> None:
        runtime = Runtime(_echo_agent(), store=SQLiteStore(path), clock=FakeClock())
        try:
            first = await runtime.run("Echo", Message("hello", id="m1"))
            response = await runtime.run("Echo", Message(text, id="m2"), session_id=first.session)
            assert response.success or response.code == "invalid-input", response
            assert response.session == first.session
            stored = await runtime.store.load(first.session)
            assert stored is not None and stored.status == "running"
            again = await runtime.run("Echo", Message("again", id="m3"), session_id=first.session)
            assert again.success and again.session == first.session and again.message == "ok"
        finally:
            await runtime.close()

    asyncio.run(run())


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(ANY_CHAR, max_size=8)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=4), max_leaves=12)


def _json_reply(value: Any) -> str:
    return json.dumps(value)


REPLIES = st.one_of(
    JSON.map(_json_reply),
    st.text(ANY_CHAR, max_size=60),
    st.integers(min_value=60, max_value=20_000).map(lambda n: "[" * n + "]" * n),
    st.fixed_dictionaries({"flows": st.dictionaries(st.sampled_from(["pizza", "track", "x"]), JSON, max_size=3),
                           "fields": st.dictionaries(st.sampled_from(["pizza_note", "track_note", "y"]), JSON,
                                                     max_size=3)}).map(_json_reply),
    # replies the calls would accept, carrying any text (escaped lone surrogates and NULs included)
    st.fixed_dictionaries({"message": NASTY, "guests": st.integers(1, 9), "name": NASTY, "intent": NASTY,
                           "priority": st.integers(), "flows": st.fixed_dictionaries({"pizza": st.integers(0, 100)}),
                           "fields": st.fixed_dictionaries({"pizza_note": NASTY})}).map(_json_reply),
    NASTY,
)


class Intent(BaseModel):
    intent: str
    priority: int


class Booking(BaseModel):
    guests: int
    name: str


def _answering(text: str) -> FunctionModel:
    """Every call gets ``text``; a forced tool (the extract call) gets it as its arguments when it
    is a JSON object."""

    def answer(request: ModelRequest) -> ModelResponse:
        if request.tools and request.tool_choice == "required":
            try:
                args = json.loads(text)
            except (ValueError, RecursionError):
                args = None
            if isinstance(args, dict):
                return ModelResponse(tool_calls=(ToolCall("c1", request.tools[0].name, args),))
        return ModelResponse(text=text)

    return FunctionModel(answer)


def _agent_for(call: str) -> Agent:
    """An agent whose first message makes the ``call`` (a lone flow starts without scoring)."""
    if call == "understand":
        def flow(name: str, phrase: str) -> Flow:
            return Flow(name, name, nodes=[reply(f"{name}_talk", instructions="Help.")], collect=[f"{name}_note"],
                        on=[on_message(phrase)])

        fields = {"pizza_note": Field("string", extract="anywhere"), "track_note": Field("integer", extract="anywhere")}
        return Agent("Ava", fields=fields, flows=[flow("pizza", "order a pizza"), flow("track", "track an order")])
    if call == "extract":
        node = collect("book", schema=Booking, required=["guests", "name"])
    else:
        node = decide("route", schema=Intent, decide=lambda data, state: end("decided"))
    return Agent("Ava", flows=[Flow("f", "f", nodes=[node], on=[on_message()])], idle="silent")


@given(text=REPLIES, call=st.sampled_from(["understand", "extract", "decide"]))
def test_any_model_reply_raises_only_handled_errors(text: str, call: str) -> None:
    async def run() -> None:
        model = _answering(text)
        agent = _agent_for(call).with_model(model).with_clock(FakeClock(), SequentialIds("s"))
        try:
            result = await agent.turn(None, "a table for 4, I'm Ada")
        except ModelError as exc:  # a decide reply that does not fit its schema is refused whole
            assert call == "decide" and exc.kind == "invalid", exc
            return
        assert model.calls[0].call == call
        assert result.session is not None
        Session.model_validate_json(result.session.model_dump_json())  # whatever was kept can be stored

    asyncio.run(run())
