"""Every outcome code of the reference's table is emitted by a scenario here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from harness import Conversation

from tether import (
    NEXT,
    Agent,
    Field,
    Flow,
    Wake,
    action,
    collect,
    defer,
    end,
    failed,
    on_event,
    on_mention,
    on_message,
    on_silence,
    reply,
    router,
    skipped,
    start_flow,
    wait,
)
from tether.errors import ModelError
from tether.flow.nodes import branch
from tether.testing import ScriptedModel

ALL_CODES = {
    "no-session", "duplicate-input", "stale-wake", "silence-broken", "already-claimed", "cooldown", "hop-limit",
    "already-running", "flow-gone", "step-loop", "step-gone", "customer-replied", "premise-changed", "silenced",
    "already-known", "asked-fixed", "another-reply", "already-sent", "branch", "max-asks", "inline-delay",
    "awaiting-trigger", "awaiting-event", "event-arrived", "no-event", "replied", "no-reply", "action-skipped",
    "action-failed", "action-deferred", "unknown-field", "bad-value", "not-in-enum", "provider-unavailable",
    "provider-quota", "provider-auth", "provider-context", "provider-invalid",
}

Scenario = Callable[[], Awaitable[list[str]]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*codes: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for code in codes:
            SCENARIOS[code] = fn
        return fn

    return register


def codes(*results: Any) -> list[str]:
    found: list[str] = []
    for result in results:
        found += [o.code for o in result.outcomes if o.code] + [s.code for s in result.skipped]
    return found


def say_flow(id_: str, text: str, **kw: Any) -> Flow:
    return Flow(id_, id_, nodes=[reply("say", response=text, next=NEXT)], **kw)


@scenario("no-session")
async def _no_session() -> list[str]:
    result = await Agent("Ava").turn(None, Wake("x"))
    assert result.changed is False and result.session is None
    return codes(result)


@scenario("duplicate-input")
async def _duplicate() -> list[str]:
    convo = Conversation(Agent("Ava", idle="silent"))
    await convo.say("hi", id="same")
    again = await convo.say("hi", id="same")
    assert again.changed is False
    return codes(again)


@scenario("stale-wake")
async def _stale() -> list[str]:
    convo = Conversation(Agent("Ava", idle="silent"))
    await convo.say("hi")
    result = await convo.wake("nothing:waits:on:this")
    assert result.changed is False
    return codes(result)


@scenario("silence-broken")
async def _silence_broken() -> list[str]:
    nudge = say_flow("nudge", "Still there?", on=[on_silence("10m")])
    greet = say_flow("greet", "Hello!", on=[on_message()])
    convo = Conversation(Agent("Ava", flows=[greet, nudge], idle="silent"))
    first = await convo.say("hi")
    (wake,) = [w for w in first.schedule if w.key.startswith("silence:")]
    convo.clock.advance("1m")
    await convo.say("actually, one more thing")
    convo.clock.advance("10m")
    result = await convo.wake(wake.key)
    assert result.changed is False
    return codes(result)


@scenario("already-claimed")
async def _claimed() -> list[str]:
    # a code-only mention detector goes through the start checks on every message
    detector = Flow("first_visit", "first visit", nodes=[action("log", lambda s, c: None)],
                    on=[on_mention(repeat="once")])
    convo = Conversation(Agent("Ava", flows=[detector], idle="silent"))
    first = await convo.say("hi")
    assert [r.flow for r in first.started] == ["first_visit"]
    return codes(await convo.say("hi again"))


@scenario("cooldown")
async def _cooldown() -> list[str]:
    promo = say_flow("promo", "A coupon for you!", on=[on_event("visit", repeat={"cooldown": "1d"})])
    convo = Conversation(Agent("Ava", flows=[promo]))
    await convo.event("visit", key="v1")
    convo.clock.advance("2h")
    result = await convo.event("visit", key="v2")
    return codes(result)


@scenario("hop-limit")
async def _hops() -> list[str]:
    hop = Flow("hop", "hop", nodes=[action("again", lambda s, c: start_flow("hop"))])
    convo = Conversation(Agent("Ava", flows=[hop]))
    result = await convo.start("hop")
    assert len(result.ended) == 5  # hops 0..4 ran; the fifth chain is refused
    return codes(result)


@scenario("already-running")
async def _running() -> list[str]:
    flow = Flow("f", "f", nodes=[wait("w", event="paid")])
    convo = Conversation(Agent("Ava", flows=[flow]))
    await convo.start("f", key="a")
    result = await convo.start("f", key="b")
    return codes(result)


@scenario("flow-gone")
async def _gone() -> list[str]:
    convo = Conversation(Agent("Ava"))
    return codes(await convo.start("nope"))


@scenario("step-loop")
async def _loop() -> list[str]:
    spin = router("spin", when=lambda ctx: True, then="spin")
    convo = Conversation(Agent("Ava", flows=[Flow("f", "f", nodes=[spin], max_oscillations=1000)]))
    result = await convo.start("f")
    assert [e.reason for e in result.ended] == ["failed"]
    return codes(result)


@scenario("step-gone")
async def _step_gone() -> list[str]:
    convo = Conversation(Agent("Ava", flows=[Flow("f", "f", nodes=[wait("w", event="x")])], idle="silent"))
    await convo.start("f")
    assert convo.session is not None
    convo.session.runs[0].node = "removed"
    convo.session.runs[0].status = "running"
    convo.session.runs[0].waiting = None
    return codes(await convo.say("hello"))


@scenario("customer-replied")
async def _customer_replied() -> list[str]:
    pause = wait("pause", timer="1h")
    nudge = Flow("nudge", "nudge", nodes=[pause, reply("ping", response="Hello?", next=NEXT)],
                 on=[on_silence("10m")])
    greet = say_flow("greet", "Hi!", on=[on_message(repeat="always")])
    convo = Conversation(Agent("Ava", flows=[greet, nudge], idle="silent"))
    first = await convo.say("hi")
    (silence,) = [w for w in first.schedule if w.key.startswith("silence:")]
    convo.clock.advance("10m")
    started = await convo.wake(silence.key)
    (park,) = [w for w in started.schedule if w.key.startswith("nudge#")]
    convo.clock.advance("5m")
    await convo.say("back!")
    convo.clock.advance("1h")
    return codes(await convo.wake(park.key))


@scenario("premise-changed")
async def _premise() -> list[str]:
    ask = collect("ask", fields=["email"], prompt="Ask for the email.")
    flow = Flow("f", "f", nodes=[ask], on=[on_message()], while_="'vip' in data && data.vip == true")
    model = ScriptedModel()
    fields = {"email": Field(), "vip": Field("boolean")}
    convo = Conversation(Agent("Ava", fields=fields, flows=[flow], idle="silent"), model)
    result = await convo.say("hi")  # vip is unknown: the premise fails before the run moves
    assert [e.reason for e in result.ended] == ["skipped"] and result.llm_calls == 0
    return codes(result)


@scenario("silenced")
async def _silenced() -> list[str]:
    convo = Conversation(Agent("Ava", flows=[say_flow("greet", "Hello!", on=[on_message()])]))
    result = await convo.say("hi", silenced="agent took over")
    assert result.messages == [] and [e.reason for e in result.ended] == ["skipped"]
    return codes(result)


@scenario("already-known", "asked-fixed")
async def _known() -> list[str]:
    fields = {"email": Field(extract="asked"), "name": Field(extract="asked")}
    setter = action("setter", lambda state, ctx: ctx.set(email="ada@example.com"))
    ask_email = collect("ask_email", fields=["email"], prompt="Ask the email.")
    ask_name = collect("ask_name", fields=["name"], question="And your name?", prompt="Ask the name.")
    flow = Flow("f", "f", nodes=[setter, ask_email, ask_name])
    result = await Conversation(Agent("Ava", fields=fields, flows=[flow])).start("f")
    assert result.llm_calls == 0 and result.text == "And your name?"
    return codes(result)


@scenario("another-reply")
async def _another() -> list[str]:
    notice = Flow("notice", "notice", nodes=[reply("n", response="FYI: we moved!", next=NEXT)],
                  on=[on_mention()])
    chat = Flow("chat", "chat", nodes=[reply("c", instructions="Chat.")], on=[on_message()])
    model = ScriptedModel()
    convo = Conversation(Agent("Ava", flows=[notice, chat]), model)
    result = await convo.say("hello")
    assert result.text == "FYI: we moved!" and result.llm_calls == 0
    return codes(result)


@scenario("already-sent")
async def _sent() -> list[str]:
    hello = reply("hello", response="Welcome!", once=True, next=NEXT)
    flow = Flow("f", "f", nodes=[hello], on=[on_message(repeat="always")])
    convo = Conversation(Agent("Ava", flows=[flow], idle="silent"))
    await convo.say("hi")
    return codes(await convo.say("hi again"))


@scenario("branch")
async def _branch() -> list[str]:
    ask = reply("ask", response="Do you want to upgrade?",
                branches=[branch("upgrade", when="the customer wants to upgrade")])
    upgrade = reply("upgrade", response="Upgrading you now.", next=end("done"))
    flow = Flow("f", "f", nodes=[ask, upgrade], on=[on_message()])
    model = ScriptedModel(understand=[{"branches": {"q1": True}}])
    convo = Conversation(Agent("Ava", flows=[flow]), model)
    await convo.say("hi")
    result = await convo.say("yes please upgrade")
    assert result.text == "Upgrading you now."
    return codes(result)


@scenario("max-asks")
async def _max_asks() -> list[str]:
    fields = {"email": Field(extract="asked")}
    ask = collect("ask", fields=["email"], prompt="Ask the email.", max_asks=2)
    done = reply("done", response="OK, moving on.", next=NEXT)
    model = ScriptedModel(speak=[{"message": "Email?", "email": None}, {"message": "Email please?", "email": None}])
    convo = Conversation(Agent("Ava", fields=fields, flows=[Flow("f", "f", nodes=[ask, done], on=[on_message()])],
                               idle="silent"), model)
    await convo.say("hi")
    await convo.say("no")
    result = await convo.say("still no")
    assert "OK, moving on." in result.text
    return codes(result)


@scenario("inline-delay")
async def _inline() -> list[str]:
    flow = Flow("f", "f", nodes=[wait("beat", timer="3s"), reply("s", response="...and here it is.", next=NEXT)])
    result = await Conversation(Agent("Ava", flows=[flow])).start("f")
    assert result.messages[0].after_ms == 3000
    return codes(result)


@scenario("awaiting-trigger")
async def _awaiting_trigger() -> list[str]:
    flow = say_flow("thanks", "Thanks for your order!", on=[on_event("paid", after="1h")])
    return codes(await Conversation(Agent("Ava", flows=[flow])).event("paid", {"order": 1}))


@scenario("awaiting-event", "event-arrived")
async def _event_wait() -> list[str]:
    flow = Flow("f", "f", nodes=[wait("w", event="paid"), reply("s", response="Payment received.", next=NEXT)])
    convo = Conversation(Agent("Ava", flows=[flow]))
    first = await convo.start("f")
    second = await convo.event("paid")
    assert second.text == "Payment received."
    return codes(first, second)


@scenario("no-event")
async def _no_event() -> list[str]:
    flow = Flow("f", "f", nodes=[wait("w", event="paid", up_to="1d", else_="late"),
                                 reply("s", response="Paid.", next=end("paid")),
                                 reply("late", response="Still waiting for your payment.", next=end("late"))])
    convo = Conversation(Agent("Ava", flows=[flow]))
    first = await convo.start("f")
    convo.clock.advance("1d")
    result = await convo.wake(first.schedule[0].key)
    assert result.text == "Still waiting for your payment."
    return codes(result)


@scenario("replied", "no-reply")
async def _timer() -> list[str]:
    flow = Flow("f", "f", nodes=[wait("w", timer="1h", else_="thanks"), reply("nudge", response="Still there?",
                                                                             next=end("nudged")),
                                 reply("thanks", response="Thanks for replying!", next=end("replied"))])
    convo = Conversation(Agent("Ava", flows=[flow], idle="silent"))
    first = await convo.start("f", key="a")
    replied = await convo.say("here!")
    assert replied.text == "Thanks for replying!"
    stale = await convo.wake(first.schedule[0].key)
    assert stale.changed is False
    again = await convo.start("f", key="b")
    convo.clock.advance("1h")
    nudged = await convo.wake(again.schedule[0].key)
    assert nudged.text == "Still there?"
    return codes(replied, nudged)


@scenario("action-skipped", "action-failed", "action-deferred")
async def _actions() -> list[str]:
    flow = Flow("f", "f", nodes=[
        action("a", lambda s, c: skipped("nothing to do")),
        action("b", lambda s, c: failed("backend down")),
        action("c", lambda s, c: defer("5m", "retry later")),
    ])
    result = await Conversation(Agent("Ava", flows=[flow])).start("f")
    assert result.schedule and result.schedule[0].key.startswith("f#k1:c:")
    return codes(result)


@scenario("unknown-field", "bad-value", "not-in-enum")
async def _fields() -> list[str]:
    # offered fields (extract="anywhere"): values are validated against the schema sent; "shoe" was not offered
    fields = {"age": Field("integer", extract="anywhere"), "plan": Field("string", enum=("basic", "pro"),
                                                                          extract="anywhere")}
    chat = reply("chat", instructions="Ask age and plan.")
    other = Flow("other", "other", nodes=[reply("o", instructions="x")], on=[on_message("other things")])
    model = ScriptedModel(understand=[{"flows": {"other": 0}, "fields": {"age": "abc", "plan": "gold", "shoe": 42}}],
                          speak=[{"message": "Age and plan?"}])
    flow = Flow("f", "f", nodes=[chat], collect=["age", "plan"], on=[on_message()])
    convo = Conversation(Agent("Ava", fields=fields, flows=[flow, other]), model)
    result = await convo.say("I'm abc years old, gold plan")
    return codes(result)


async def _provider(error: ModelError) -> list[str]:
    model = ScriptedModel(speak=[lambda request: (_ for _ in ()).throw(error)])
    flow = Flow("f", "f", nodes=[reply("talk", instructions="Chat.")], on=[on_message()])
    return codes(await Conversation(Agent("Ava", flows=[flow]), model).say("hi"))


@scenario("provider-unavailable")
async def _unavailable() -> list[str]:
    return await _provider(ModelError("slow down", kind="rate"))


@scenario("provider-quota")
async def _quota() -> list[str]:
    return await _provider(ModelError("out of credit", kind="quota"))


@scenario("provider-auth")
async def _auth() -> list[str]:
    return await _provider(ModelError("bad key", kind="auth"))


@scenario("provider-context")
async def _context() -> list[str]:
    return await _provider(ModelError("too long", kind="context"))


@scenario("provider-invalid")
async def _invalid() -> list[str]:
    return await _provider(ModelError("refused", kind="content"))


def test_every_reference_code_has_a_scenario() -> None:
    assert set(SCENARIOS) == ALL_CODES


@pytest.mark.parametrize("code", sorted(ALL_CODES))
async def test_code_is_emitted(code: str) -> None:
    assert code in await SCENARIOS[code]()

