"""Bad input and handled failures never kill a conversation (memory, SQLite and PostgreSQL stores).

Refused input fails before any session I/O; a provider failure fails the turn with nothing saved;
either way the session stays ``running`` and the next message is answered.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from runtime_helpers import SpyStore, counter_agent, msg

from tether import Agent, Event, Flow, Message, Start, end, on_message, reply
from tether.engine.core.input_checks import MAX_MESSAGE_CHARS
from tether.errors import ModelError
from tether.models.types import ModelRequest
from tether.runtime import Runtime
from tether.testing import FunctionModel

BAD_TEXTS = {
    "lone surrogate": "hi \ud800 there",
    "low surrogate": "\udfff",
    "NUL": "a\x00b",
    "10 MB": "x" * (10 * 1024 * 1024),
    "one over the limit": "y" * (MAX_MESSAGE_CHARS + 1),
}


@pytest.mark.parametrize("text", list(BAD_TEXTS.values()), ids=list(BAD_TEXTS))
async def test_bad_message_is_refused_before_any_io_and_the_session_goes_on(
    make_runtime: Callable[..., Runtime], spy: SpyStore, text: str
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    before = await spy.load(first.session)
    spy.calls.clear()
    refused = await runtime.run("Counter", Message(text, id="bad-1"), session_id=first.session)
    assert not refused.success and refused.code == "invalid-input" and refused.session == first.session
    assert "message.text" in refused.message
    assert spy.calls == []  # refused before the session was even loaded
    assert await spy.load(first.session) == before
    after = await runtime.run("Counter", msg(), session_id=first.session)
    assert after.success and after.session == first.session and after.message == "n=2"


async def test_bad_first_message_creates_nothing(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent())
    refused = await runtime.run("Counter", "\ud83d")
    assert not refused.success and refused.code == "invalid-input" and refused.session == ""
    assert spy.writes() == []


@pytest.mark.parametrize("bad", [Message("ok", id="id\x00"), Event("paid", {"note": ["fine", "bad\ud800"]}),
                                 Event("paid", {"k\x00": 1}), Start("count", {"x": "\udc00"})],
                         ids=["message id", "event payload", "event payload key", "start input"])
async def test_bad_ids_and_payloads_are_refused_naming_where(
    make_runtime: Callable[..., Runtime], spy: SpyStore, bad: Message | Event | Start
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    spy.calls.clear()
    kwargs = {"event": bad} if isinstance(bad, Event) else {"start": bad} if isinstance(bad, Start) else {}
    refused = await runtime.run("Counter", bad if isinstance(bad, Message) else None, session_id=first.session,
                                **kwargs)
    assert not refused.success and refused.code == "invalid-input" and spy.calls == []
    where = {Message: "message.id", Event: "event.payload", Start: "start.input"}[type(bad)]
    assert where in refused.message


CONTROL_TEXT = "tab\there\nnew line\r\nbell\x07 esc\x1b[0m del\x7f sep\u2028 bom\ufeff emoji \U0001f600 zwj \u200d"


async def test_control_characters_are_accepted_and_stored_exactly(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    echo = reply("echo", response=lambda state: "ok", next=end("done"))
    agent = Agent("Echo", flows=[Flow("echo", "echo", nodes=[echo], on=[on_message(repeat="always")])])
    runtime = make_runtime(agent)
    response = await runtime.run("Echo", Message(CONTROL_TEXT, id="m-ctl"))
    assert response.success and response.message == "ok"
    stored = await spy.load(response.session)
    assert stored is not None and stored.status == "running"
    assert [m.text for m in await spy.transcript(response.session)][:1] == [CONTROL_TEXT]
    again = await runtime.run("Echo", Message("x" * MAX_MESSAGE_CHARS, id="m-max"), session_id=response.session)
    assert again.success  # the limit itself is accepted


def _two_flow_agent(model: FunctionModel) -> Agent:
    def flow(name: str, phrase: str) -> Flow:
        done = reply(f"{name}_done", response=f"{name} ok", next=end("done"))
        return Flow(name, name, nodes=[done], on=[on_message(phrase, repeat="always")])

    return Agent("Router", flows=[flow("pizza", "order a pizza"), flow("track", "track my order")], model=model)


async def test_a_provider_failure_fails_the_turn_with_nothing_saved(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    down = [False]

    def answer(request: ModelRequest) -> object:
        if down[0]:
            raise ModelError("openai: the server is overloaded", kind="overload", status=503, provider="openai")
        return {"flows": {"pizza": 90, "track": 0}}

    runtime = make_runtime(_two_flow_agent(FunctionModel(answer)))
    first = await runtime.run("Router", msg("a pizza please"))
    assert first.success and first.message == "pizza ok"
    before = await spy.load(first.session)
    spy.calls.clear()
    down[0] = True
    failed = await runtime.run("Router", msg("another pizza"), session_id=first.session)
    assert not failed.success and failed.code == "model-overload" and failed.session == first.session
    assert "overloaded" in failed.message
    assert spy.writes() == []  # nothing ran, nothing was saved: the host may retry the input
    stored = await spy.load(first.session)
    assert stored == before and stored is not None and stored.status == "running"
    down[0] = False
    again = await runtime.run("Router", msg("one more pizza"), session_id=first.session)
    assert again.success and again.session == first.session and again.message == "pizza ok"


async def test_a_provider_failure_on_a_new_session_creates_nothing(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    def answer(request: ModelRequest) -> object:
        raise ModelError("anthropic: rate limited", kind="rate", status=429, provider="anthropic")

    runtime = make_runtime(_two_flow_agent(FunctionModel(answer)))
    failed = await runtime.run("Router", msg("pizza"))
    assert not failed.success and failed.code == "model-rate" and failed.session == ""
    assert spy.writes() == []


async def test_a_reply_nested_thousands_deep_is_an_empty_judgement_not_an_abort(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    runtime = make_runtime(_two_flow_agent(FunctionModel(lambda request: deep)))
    response = await runtime.run("Router", msg("pizza"))
    assert response.success
    stored = await spy.load(response.session)
    assert stored is not None and stored.status == "running"
    assert any("too-deep" in entry.message or "nests deeper" in entry.message for entry in stored.warn)


async def test_a_step_needing_a_missing_model_fails_the_turn_not_the_session(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    from pydantic import BaseModel

    from tether import decide

    class Choice(BaseModel):
        pick: str

    route = decide("route", schema=Choice, decide=lambda data, state: end(data.pick))
    agent = counter_agent()
    agent = Agent("Counter", flows=[*agent.flows, Flow("route", "route", nodes=[route])])
    runtime = make_runtime(agent)
    first = await runtime.run("Counter", msg())
    spy.calls.clear()
    failed = await runtime.run("Counter", start=Start("route", key="k1"), session_id=first.session)
    assert not failed.success and failed.code == "model-configuration" and failed.session == first.session
    assert "decide node 'route'" in failed.message and spy.writes() == []
    again = await runtime.run("Counter", msg(), session_id=first.session)
    assert again.success and again.session == first.session and again.message == "n=2"
