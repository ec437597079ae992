"""Routing thresholds and stickiness, the floor, suspend/resume order, waits, silence, claims, the
retry ladder, field coercion."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from harness import Conversation

from tether import (
    NEXT,
    Agent,
    Field,
    Flow,
    collect,
    end,
    on_event,
    on_message,
    on_silence,
    reply,
)
from tether.errors import ModelError
from tether.testing import ScriptedModel


def talk_flow(id_: str, *phrases: str, **kw: Any) -> Flow:
    return Flow(id_, f"{id_} questions", nodes=[reply(f"{id_}_talk", instructions=f"Help with {id_}.")],
                on=[on_message(*phrases)], **kw)


def agent(*flows: Flow, **kw: Any) -> Agent:
    return Agent("Ava", flows=list(flows), **kw)


async def test_score_of_40_starts_and_39_does_not() -> None:
    for score, started in ((40, ["orders"]), (39, [])):
        model = ScriptedModel(understand=[{"flows": {"orders": score, "refunds": 0}}], speak=["ok"])
        result = await Conversation(agent(talk_flow("orders", "order"), talk_flow("refunds", "refund")),
                                    model).say("hmm")
        assert [r.flow for r in result.started] == started
        if not started:
            assert result.messages[0].key == "idle:m1"  # the idle speaker answered


async def test_a_rival_needs_15_points_over_the_asker() -> None:
    model = ScriptedModel(understand=[{"flows": {"orders": 90, "refunds": 0}}], speak=["Your order?"])
    convo = Conversation(agent(talk_flow("orders", "order"), talk_flow("refunds", "refund")), model)
    await convo.say("my order")
    model.add("understand", {"flows": {"orders": 50, "refunds": 64}})
    model.add("speak", "Still on orders.")
    kept = await convo.say("and refunds?")
    assert kept.started == [] and convo.run("orders").status == "asking"
    model.add("understand", {"flows": {"orders": 50, "refunds": 65}})
    model.add("speak", "Refunds take 5 days.")
    taken = await convo.say("I want a refund")
    assert [r.flow for r in taken.started] == ["refunds"]
    assert convo.run("orders").status == "suspended" and convo.run("refunds").status == "asking"


async def test_a_suspended_run_resumes_when_the_new_asker_ends() -> None:
    ask = collect("ask_email", fields=["email"], prompt="Ask for the email.")
    signup = Flow("signup", "Sign up", nodes=[ask, reply("bye", response="Signed up!", next=end("done"))],
                  on=[on_message("sign up")])
    faq = Flow("faq", "FAQ", nodes=[reply("answer", response="We ship worldwide.", next=end("answered"))],
               on=[on_message("shipping question")])
    model = ScriptedModel(understand=[{"flows": {"signup": 95, "faq": 0}}],
                          speak=[{"message": "Your email?", "email": None}])
    convo = Conversation(agent(signup, faq, fields={"email": Field()}), model)
    await convo.say("sign me up")
    model.add("understand", {"flows": {"signup": 10, "faq": 90}})
    model.add("speak", {"message": "So, what's your email?", "email": None})
    result = await convo.say("do you ship abroad?")
    # the faq run ended without asking: the suspended signup run is back on the floor, and asks
    # again in the same turn, with the speak call the faq's fixed answer left unused
    assert [m.text for m in result.messages] == ["We ship worldwide.", "Now, back to where we were.",
                                                 "So, what's your email?"]
    assert convo.run("signup").status == "asking" and result.llm_calls == 2


async def test_the_catch_all_takes_what_nothing_scored() -> None:
    model = ScriptedModel(understand=[{"flows": {"orders": 10}}], speak=["Hello!"])
    greet = Flow("greet", "Greeting", nodes=[reply("hi", instructions="Greet.")], on=[on_message()])
    result = await Conversation(agent(talk_flow("orders", "order"), greet), model).say("good morning")
    assert [r.flow for r in result.started] == ["greet"]


async def test_exclusion_phrases_reach_the_understand_prompt() -> None:
    model = ScriptedModel(understand=[{"flows": {"orders": 0, "refunds": 0}}], speak=["ok"])
    flows = (talk_flow("orders", "order status", "!cancel an order"), talk_flow("refunds", "refund"))
    await Conversation(agent(*flows), model).say("cancel my order")
    prompt = model.calls[0].request.system  # the flow catalogue is part of the stable system text
    assert "Score 0 when: cancel an order" in prompt


async def test_retry_ladder_then_failed() -> None:
    error = ModelError("overloaded", kind="overload")
    model = ScriptedModel(speak=[lambda r: (_ for _ in ()).throw(error)] * 6)
    flow = Flow("f", "f", nodes=[reply("talk", instructions="Chat.")], on=[on_message()])
    convo = Conversation(agent(flow), model)
    result = await convo.say("hi")
    rungs = []
    for _ in range(5):
        (wake,) = result.schedule
        assert ":retry:" in wake.key and "provider-unavailable" in result.codes()
        rungs.append(wake.at - convo.clock.now())
        convo.clock.set(wake.at)
        result = await convo.wake(wake.key)
    assert rungs == [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1),
                     timedelta(hours=6)]
    assert [e.reason for e in result.ended] == ["failed"] and result.schedule == []
    assert model.count("understand") == 0  # a retry wake never runs the understand call


async def test_a_fatal_provider_error_ends_the_run_at_once() -> None:
    model = ScriptedModel(speak=[lambda r: (_ for _ in ()).throw(ModelError("bad key", kind="auth"))])
    flow = Flow("f", "f", nodes=[reply("talk", instructions="Chat.")], on=[on_message()])
    result = await Conversation(agent(flow), model).say("hi")
    assert "provider-auth" in result.codes() and [e.reason for e in result.ended] == ["failed"]


async def test_a_provider_failure_in_understand_raises_and_saves_nothing() -> None:
    import pytest

    model = ScriptedModel(understand=[lambda r: (_ for _ in ()).throw(ModelError("down", kind="network"))])
    convo = Conversation(agent(talk_flow("a", "x"), talk_flow("b", "y")), model)
    with pytest.raises(ModelError):
        await convo.say("hello")
    assert convo.session is None


async def test_field_values_are_coerced_on_the_way_in() -> None:
    # the fields are offered (extract="anywhere", listed by the flow); the coerced values are then
    # validated against the schema that was sent
    fields = {"age": Field("integer", extract="anywhere"), "price": Field("number", extract="anywhere"),
              "vip": Field("boolean", extract="anywhere"), "city": Field("string", extract="anywhere")}
    chat = reply("chat", instructions="Chat.")
    other = talk_flow("other", "something else")
    model = ScriptedModel(understand=[{"flows": {"other": 0}, "fields": {"age": "41.9", "price": "1,5", "vip": "sim",
                                                                          "city": 7}}],
                          speak=[{"message": "Thanks!"}])
    flow = Flow("f", "f", nodes=[chat], collect=["age", "price", "vip", "city"], on=[on_message()])
    convo = Conversation(agent(flow, other, fields=fields), model)
    await convo.say("41 years, 1,5 euros, yes")
    assert convo.session.data == {"age": 41, "price": 1.5, "vip": True, "city": "7"}


async def test_silence_wake_starts_the_silence_flow_and_replaces_the_previous_one() -> None:
    nudge = Flow("nudge", "nudge", nodes=[reply("n", response="Are you still there?", next=NEXT)],
                 on=[on_silence("10m", repeat="always")])
    greet = Flow("greet", "greet", nodes=[reply("g", response="Hello!")], on=[on_message()])
    convo = Conversation(agent(greet, nudge, idle="silent"))
    first = await convo.say("hi")
    (w1,) = first.schedule
    assert w1.key == f"silence:nudge:{convo.session.id}:{int(convo.clock.now().timestamp() * 1000)}"
    assert w1.at == convo.clock.now() + timedelta(minutes=10) and w1.replaces is None
    convo.clock.advance("1m")
    second = await convo.say("hello?")
    (w2,) = second.schedule
    assert w2.replaces == w1.key
    convo.clock.advance("10m")
    fired = await convo.wake(w2.key)
    assert fired.text == "Are you still there?" and [r.flow for r in fired.started] == ["nudge"]


async def test_event_trigger_after_and_business_hours() -> None:
    def next_business_hour(at: datetime, ctx: Any) -> datetime:
        return at if 9 <= at.hour < 17 else (at + timedelta(days=1)).replace(hour=9, minute=0, second=0)

    thanks = Flow("thanks", "thanks", nodes=[reply("t", response="Thanks for your payment!", next=NEXT)],
                  on=[on_event("paid", after="8h", business_hours=True)])
    convo = Conversation(agent(thanks, business_hours=next_business_hour))
    parked = await convo.event("paid", {"amount": 10}, key="pay-1")
    (wake,) = parked.schedule
    assert wake.at == datetime.fromisoformat("2026-01-06T09:00:00+00:00")  # 17:00 snapped to the next morning
    assert convo.run("thanks").input == {"amount": 10}
    convo.clock.set(wake.at)
    fired = await convo.wake(wake.key)
    assert fired.text == "Thanks for your payment!"


async def test_claims_once_always_and_cooldown() -> None:
    once = Flow("once", "once", nodes=[reply("o", response="Once.", next=NEXT)], on=[on_event("e", repeat="once")])
    always = Flow("always", "always", nodes=[reply("a", response="Always.", next=NEXT)], on=[on_event("e")])
    convo = Conversation(agent(once, always))
    first = await convo.event("e", key="k1")
    assert sorted(r.flow for r in first.started) == ["always", "once"]
    second = await convo.event("e", key="k2")
    assert [r.flow for r in second.started] == ["always"] and [s.code for s in second.skipped] == ["already-claimed"]
    replay = await convo.event("e", key="k2")  # the same host key again: the always claim is held
    assert replay.started == [] and {s.code for s in replay.skipped} == {"already-claimed"}


async def test_idle_speaker_answers_when_no_flow_takes_the_message() -> None:
    model = ScriptedModel(speak=["I can help with orders."])
    result = await Conversation(Agent("Ava", idle="Answer briefly."), model).say("what can you do?")
    assert result.text == "I can help with orders."
    assert "Answer briefly." in model.calls[0].request.instructions


async def test_a_speak_retry_is_told_the_message_has_no_answer_yet() -> None:
    error = ModelError("overloaded", kind="overload")
    model = ScriptedModel(speak=[lambda r: (_ for _ in ()).throw(error), "Sorry for the wait! Here it is."])
    flow = Flow("f", "f", nodes=[reply("talk", instructions="Chat.")], on=[on_message()])
    convo = Conversation(agent(flow), model)
    first = await convo.say("what are your opening hours?")
    (wake,) = first.schedule
    convo.clock.set(wake.at)
    retried = await convo.wake(wake.key)
    assert retried.text == "Sorry for the wait! Here it is."
    request = model.calls[-1].request
    assert "has no answer yet" in request.instructions
    assert [m.content for m in request.messages if m.role == "user"] == ["what are your opening hours?"]
