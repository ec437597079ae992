"""Fields and the floor (seed 003 §3 "Fields"): every unknown ``anywhere`` field the floor's flow
can take rides in the understand call, the asking step's own fields included, so one message can
complete several steps and the next step that still needs something asks in the same turn.

The model is a :class:`reader.Reader`: it fills only what a call offered, as a real model would.
"""

from __future__ import annotations

from typing import Any

from harness import Conversation
from reader import Reader

from tether import NEXT, Agent, Field, Flow, action, collect, end, goto, on_event, on_message, reply, wait
from tether.flow.nodes import branch
from tether.flow.resolvers import enum_check

FIELDS = {
    "name": Field("string", description="The customer's name"),
    "company": Field("string", description="The customer's company"),
    "size": Field("integer", description="How many people work there"),
    "plan": Field("string", description="The plan they want"),
    "confirmed": Field("string", enum=("yes", "no"), description="Whether they confirmed", extract="asked"),
}


def _confirm_text(missing: list[str], state: Any) -> str:
    return f"{state['name']} at {state['company']}, {state['size']} people. Shall I create it? (yes/no)"


def signup_flow() -> Flow:
    return Flow("signup", "Open an account", nodes=[
        collect("ask_name", fields=["name"], prompt="Ask for their name."),
        collect("ask_company", fields=["company"], prompt="Ask for their company."),
        collect("ask_size", fields=["size"], prompt="Ask how many people work there."),
        collect("ask_plan", fields=["plan"], prompt="Ask which plan they want."),
        collect("confirm", fields=["confirmed"], ask=_confirm_text, resolvers=[enum_check("confirmed", ["yes", "no"])],
                branches=[branch(goto("ask_company", clear=["company"]),
                                 when="the customer wants to change the company")]),
        reply("done", response="Account created for ${company}.", next=end("created")),
    ], on=[on_message("open an account", "sign up")])


def pricing_flow() -> Flow:
    return Flow("pricing", "Prices", nodes=[reply("prices", instructions="Explain the prices.")],
                on=[on_message("how much", "prices")])


def agent(*flows: Flow) -> Agent:
    return Agent("Ava", fields=FIELDS, flows=list(flows) or [signup_flow(), pricing_flow()])


def codes(result: Any, node: str) -> list[str | None]:
    return [o.code for o in result.outcomes if o.node_id == node]


async def test_one_message_completes_three_steps_and_the_next_step_asks_in_the_same_turn() -> None:
    reader = Reader()
    convo = Conversation(agent(), reader.model)
    reader.says = {"flows": {"signup": 95}}
    first = await convo.say("I want to open an account")
    assert [m.node_id for m in first.messages] == ["ask_name"]
    reader.says = {"flows": {"signup": 90}, "name": "Ada", "company": "Acme", "size": 50}
    result = await convo.say("I'm Ada from Acme, we are 50 people")
    assert "name" in reader.offered("understand", "fields")  # the asking step's own field rides in the call
    assert convo.session is not None
    assert {k: convo.session.data.get(k) for k in ("name", "company", "size")} == {
        "name": "Ada", "company": "Acme", "size": 50}
    assert [m.node_id for m in result.messages] == ["ask_plan"]  # the next question, in this turn
    assert codes(result, "ask_name") == [None]  # answered
    assert codes(result, "ask_company") == ["already-known"] and codes(result, "ask_size") == ["already-known"]
    assert result.llm_calls == 2  # floor holder with another candidate: understand + speak
    assert convo.run("signup").node == "ask_plan"


async def test_a_correction_is_read_known_steps_are_skipped_and_the_confirmation_asks_again() -> None:
    reader = Reader()
    convo = Conversation(agent(), reader.model)
    reader.says = {"flows": {"signup": 95}, "name": "Ada", "company": "Acme", "size": 50, "plan": "pro"}
    await convo.say("Sign me up: Ada, Acme, 50 people, pro plan")
    assert convo.run("signup").node == "confirm"
    reader.says = {"flows": {"signup": 90}, "true": ["the customer wants to change the company"]}
    asked = await convo.say("wait, the company is wrong")
    assert [m.node_id for m in asked.messages] == ["ask_company"]
    reader.says = {"flows": {"signup": 90}, "company": "Initech"}
    result = await convo.say("It's Initech")
    assert reader.offered("understand", "fields") == ["company"]  # the corrected field is read by understand
    assert convo.session is not None and convo.session.data["company"] == "Initech"
    assert codes(result, "ask_size") == ["already-known"] and codes(result, "ask_plan") == ["already-known"]
    assert result.text == "Ada at Initech, 50 people. Shall I create it? (yes/no)"  # asked again, same turn
    assert convo.run("signup").node == "confirm"


async def test_flow_collect_fields_are_offered_on_every_turn_and_filled_at_once() -> None:
    chat = Flow("chat", "Chat about anything", nodes=[collect("who", fields=["name"], prompt="Ask their name."),
                                                      reply("talk", instructions="Chat.")],
                on=[on_message("chat", "talk")], collect=["company"])
    reader = Reader()
    convo = Conversation(agent(chat, pricing_flow()), reader.model)
    reader.says = {"flows": {"chat": 80}}
    await convo.say("let's chat")
    assert set(reader.offered("understand", "fields")) == {"name", "company"}
    reader.says = {"flows": {"chat": 80}, "name": "Ada", "company": "Acme"}
    result = await convo.say("I'm Ada, I work at Acme")
    assert set(reader.offered("understand", "fields")) == {"name", "company"}
    assert convo.session is not None and convo.session.data["company"] == "Acme"
    assert [m.node_id for m in result.messages] == ["talk"]


async def test_an_event_started_run_that_is_answered_ends_and_the_suspended_run_speaks() -> None:
    notified: list[Any] = []
    survey = Flow("survey", "Delivery survey", nodes=[
        collect("rate", fields=["rating"], question="How was your delivery, from 1 to 5?"),
        action("notify", lambda state, ctx: notified.append(state["rating"])),
    ], on=[on_event("delivered")])
    fields = {**FIELDS, "rating": Field("integer", description="The delivery rating, 1 to 5")}
    reader = Reader()
    convo = Conversation(Agent("Ava", fields=fields, flows=[signup_flow(), pricing_flow(), survey]),
                         reader.model)
    reader.says = {"flows": {"signup": 95}}
    await convo.say("I want to open an account")
    asked = await convo.event("delivered", {"order": "A-1"}, direction="outbound")
    assert asked.text == "How was your delivery, from 1 to 5?"
    assert convo.run("signup").status == "suspended"
    reader.says = {"flows": {"signup": 10}, "rating": 5}
    result = await convo.say("5, great")
    assert notified == [5]
    assert [e.flow for e in result.ended] == ["survey"]
    assert [m.node_id for m in result.messages] == ["ask_name"]  # the suspended run speaks, this turn
    assert convo.run("signup").status == "asking"


async def test_a_step_whose_fields_are_known_is_already_known_even_with_the_message_unread() -> None:
    hello = reply("hello", response="Welcome back!", next=NEXT)
    flow = Flow("f", "f", nodes=[hello, collect("who", fields=["name"], prompt="Ask the name."),
                                 reply("talk", instructions="Chat.")], on=[on_message()])
    reader = Reader()
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[flow]), reader.model)
    reader.says = {"name": "Ada"}
    result = await convo.say("hi, Ada here")  # the catch-all's first step speaks no call: name is read
    assert convo.session is not None and convo.session.data["name"] == "Ada"
    assert codes(result, "who") == ["already-known"]
    assert [m.node_id for m in result.messages] == ["hello", "talk"]


async def test_a_follow_up_that_ends_on_a_reply_hands_the_message_to_the_asking_run() -> None:
    follow = Flow("follow", "Follow up", nodes=[
        wait("later", timer="1h", then="nudge", else_=end("replied")),
        reply("nudge", response="Still interested?", next=end("nudged")),
    ], on=[on_event("quote_sent")])
    reader = Reader()
    convo = Conversation(agent(signup_flow(), pricing_flow(), follow), reader.model)
    reader.says = {"flows": {"signup": 95}}
    await convo.say("I want to open an account")
    await convo.event("quote_sent", key="q1")
    assert convo.run("follow").status == "waiting" and convo.run("signup").status == "asking"
    reader.says = {"flows": {"signup": 90}, "name": "Ada"}
    result = await convo.say("Ada")
    assert [e.flow for e in result.ended] == ["follow"]
    assert "replied" in [o.code for o in result.outcomes]
    assert result.messages, "the message was dropped: nobody answered it"
    assert [m.node_id for m in result.messages] == ["ask_company"]
    assert convo.session is not None and convo.session.data["name"] == "Ada"


async def test_a_question_at_a_confirm_step_is_answered_and_the_confirmation_asked_again() -> None:
    reader = Reader()
    convo = Conversation(agent(), reader.model)
    reader.says = {"flows": {"signup": 95}, "name": "Ada", "company": "Acme", "size": 50, "plan": "pro"}
    first = await convo.say("Sign me up: Ada, Acme, 50 people, pro plan")
    assert first.text == "Ada at Acme, 50 people. Shall I create it? (yes/no)"
    reader.says = {"flows": {"signup": 60, "pricing": 30}, "asks": True,
                   "message": "Shipping usually takes two days."}
    result = await convo.say("how long does shipping usually take?")
    understand = [c.request for c in reader.model.calls if c.call == "understand"][-1]
    assert understand.response_format is not None and "asks" in understand.response_format.schema["properties"]
    assert [m.text for m in result.messages] == [
        "Shipping usually takes two days.", "Ada at Acme, 50 people. Shall I create it? (yes/no)"]
    answer = [c.request for c in reader.model.calls if c.call == "speak"][-1]
    assert "Sent after your reply:\nAda at Acme, 50 people." in answer.instructions
    assert "Sent after your reply: sent word for word right after your reply, so ask nothing yourself" \
        in answer.system  # what the heading means is in the stable standing orders
    assert "Your task now: Answer the customer's latest message briefly.\n" in answer.instructions
    assert "not ask" not in answer.instructions  # said once, in the standing orders, not again per turn
    assert convo.run("signup").node == "confirm" and convo.run("signup").status == "asking"
    reader.says = {"flows": {"signup": 90}}
    done = await convo.say("yes")
    assert done.text == "Account created for Acme."


async def test_a_stay_flow_answers_from_the_step_it_stays_on() -> None:
    chat = Flow("chat", "Chat", nodes=[collect("who", fields=["name"], prompt="Ask their name, then chat.")],
                on=[on_message("chat", "talk")], on_end="stay")
    reader = Reader()
    convo = Conversation(agent(chat, pricing_flow()), reader.model)
    reader.says = {"flows": {"chat": 90}}
    await convo.say("let's chat")
    reader.says = {"flows": {"chat": 90}, "name": "Ada"}
    named = await convo.say("I'm Ada")  # understand reads the name: the step completes, the run stays on it
    assert [m.node_id for m in named.messages] == ["who"] and convo.run("chat").staying
    reader.says = {"flows": {"chat": 90}}
    again = await convo.say("how are you?")
    assert [m.node_id for m in again.messages] == ["who"]  # the step it stays on answers anyway
    assert convo.run("chat").status == "asking"


async def test_a_stay_flow_past_max_asks_answers_instead_of_looping() -> None:
    chat = Flow("chat", "Chat", nodes=[collect("who", fields=["name"], prompt="Ask their name.", max_asks=1)],
                on=[on_message("chat")], on_end="stay")
    reader = Reader()
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[chat], idle="silent"), reader.model)
    await convo.say("chat")
    result = await convo.say("I'd rather not say")
    assert "max-asks" in [o.code for o in result.outcomes]
    assert [m.node_id for m in result.messages] == ["who"] and convo.run("chat").status == "asking"


async def test_a_deterministic_step_whose_fields_are_known_is_already_known() -> None:
    flow = Flow("f", "f", nodes=[reply("hello", response="Welcome!", next=NEXT),
                                 collect("who", fields=["name"], ask="Your name?"),
                                 reply("greet", response="Hi ${name}.", next=end("done"))], on=[on_message()])
    reader = Reader()
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[flow]), reader.model)
    reader.says = {"name": "Ada"}
    result = await convo.say("hi, Ada here")
    assert codes(result, "who") == ["already-known"]
    assert result.text == "Welcome!\n\nHi Ada."


async def test_a_question_at_a_fixed_yes_no_reply_is_answered_and_the_question_asked_again() -> None:
    offer = reply("offer", response="Do you want to upgrade to pro? (yes/no)",
                  branches=[branch("upgrade", when="the customer wants to upgrade")])
    upgrade = reply("upgrade", response="Upgraded.", next=end("upgraded"))
    flow = Flow("offer", "Upgrade offer", nodes=[offer, upgrade], on=[on_message("upgrade", "pro plan")])
    reader = Reader()
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[flow, pricing_flow()]), reader.model)
    reader.says = {"flows": {"offer": 90}}
    first = await convo.say("tell me about the pro plan")
    assert first.text == "Do you want to upgrade to pro? (yes/no)"
    reader.says = {"flows": {"offer": 60}, "asks": True, "message": "Pro costs 20 euros a month."}
    result = await convo.say("how much does it cost?")
    assert [m.text for m in result.messages] == ["Pro costs 20 euros a month.",
                                                 "Do you want to upgrade to pro? (yes/no)"]
    assert convo.run("offer").status == "asking" and convo.run("offer").node == "offer"
    reader.says = {"flows": {"offer": 90}, "true": ["the customer wants to upgrade"]}
    done = await convo.say("yes")
    assert done.text == "Upgraded."
