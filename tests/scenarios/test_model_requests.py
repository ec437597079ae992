"""What a real model is sent: the data it must say, only the tools it may use, the customer's
message once, stable text first, and a window that never opens with an assistant message.

Token figures live in ``bench/tokens.py``; these are the structural properties behind them.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from harness import Conversation
from pydantic import BaseModel

from example_modules import load_example as shared_load_example
from tether import (
    Agent,
    Compaction,
    Field,
    Flow,
    Idle,
    collect,
    decide,
    end,
    goto,
    on_message,
    reply,
    tool,
    whole_message,
)
from tether.errors import ModelError
from tether.models.types import ModelRequest
from tether.testing import ScriptedModel


def load_example(name: str) -> ModuleType:
    return shared_load_example(name, as_name=f"example_{name}_requests")


def requests(model: ScriptedModel, call: str) -> list[ModelRequest]:
    return [c.request for c in model.calls if c.call == call]


@tool
def lookup(order_number: str) -> str:
    """Look an order up."""
    return f"{order_number}: shipped"


@tool
def cancel(order_number: str) -> str:
    """Cancel an order."""
    return f"{order_number}: cancelled"


# ---------------------------------------------------------------------------------------------- run data


async def test_the_shipping_confirmation_is_sent_the_tracking_id_and_offered_no_tool() -> None:
    shipping = load_example("shipping")
    model = ScriptedModel(summary=["Wants a shipment to 1 Main St."], speak=["Booked! Tracking trk_9."])
    convo = Conversation(shipping.agent, model)
    await convo.say("ship to 1 Main St")
    (speak,) = requests(model, "speak")
    # what the book action stored and what the collect step gathered reach the confirmation
    assert "- tracking_id: trk_9" in speak.instructions
    assert "- address: 1 Main St" in speak.instructions
    # the confirmation may not book the shipment a second time
    assert speak.tools == ()


async def test_facts_of_a_finished_flow_are_not_presented_as_the_current_tasks() -> None:
    fields = {"refund_reason": Field("string", description="Why", extract="asked")}
    refund = Flow("refund", "Refunds", nodes=[
        collect("why", fields=["refund_reason"], ask="What went wrong?",
                resolvers=[whole_message("refund_reason", min_length=3)],
                on_complete=lambda data, state: end("opened")),
    ])
    chat = Flow("chat", "Small talk", nodes=[reply("talk", instructions="Chat with the customer.")])
    model = ScriptedModel(speak=["Sorry to hear that, the refund is open.", "Hello again!"])
    convo = Conversation(Agent("Ava", fields=fields, flows=[refund, chat]), model)
    await convo.start("refund", key="k1")
    await convo.say("it arrived broken")  # the refund ends silently: the idle speaker answers
    assert convo.session is not None and convo.session.data["refund_reason"] == "it arrived broken"
    await convo.start("chat", key="k2")
    speak = requests(model, "speak")[-1]
    assert "Your task now: Chat with the customer." in speak.instructions
    assert "it arrived broken" not in speak.instructions  # the refund's reason is not a fact of small talk
    assert "it arrived broken" not in speak.system


async def test_the_idle_speaker_sees_known_fields_as_background_only() -> None:
    fields = {"name": Field("string", description="The customer's name", extract="asked")}
    ask = collect("ask", fields=["name"], ask="Your name?", resolvers=[whole_message("name", min_length=2)],
                  on_complete=lambda data, state: end("named"))
    model = ScriptedModel(speak=["Nice to meet you, Ada.", "Very well, thanks!"])
    convo = Conversation(Agent("Ava", fields=fields, flows=[Flow("intro", "Intro", nodes=[ask])]), model)
    await convo.start("intro")
    await convo.say("Ada")  # the intro ends silently: the idle speaker answers
    await convo.say("how are you?")
    for speak in requests(model, "speak"):
        assert "Background:\n- name: Ada" in speak.instructions
        assert "Background: known from earlier in the conversation, not a current task" in speak.system
        assert "settled" not in speak.instructions


# ---------------------------------------------------------------------------------------------- tools


async def test_a_reply_is_offered_only_the_tools_it_declares() -> None:
    declared = reply("declared", instructions="Help.", tools=["lookup"], next=end("done"))
    bare = reply("bare", instructions="Say goodbye.", next=end("done"))
    flows = [Flow("one", "One", nodes=[declared]), Flow("two", "Two", nodes=[bare]),
             Flow("three", "Three", nodes=[reply("flowwide", instructions="Help.", next=end("done"))],
                  tools=["cancel"])]
    model = ScriptedModel(speak=["Sure.", "Bye.", "Done."])
    convo = Conversation(Agent("Ava", tools=[lookup, cancel], flows=flows), model)
    for flow, key in (("one", "k1"), ("two", "k2"), ("three", "k3")):
        await convo.start(flow, key=key)
    offered = [[t.name for t in r.tools] for r in requests(model, "speak")]
    assert offered == [["lookup"], [], ["cancel"]]


async def test_the_idle_speaker_is_offered_only_the_tools_its_idle_names() -> None:
    # a tool registered for actions (a booking) is not one the model may call while it chats
    model = ScriptedModel(speak=["Hi!"])
    await Conversation(Agent("Ava", tools=[lookup]), model).say("hello")
    (speak,) = requests(model, "speak")
    assert speak.tools == ()
    model = ScriptedModel(speak=["Hi!"])
    await Conversation(Agent("Ava", tools=[lookup], idle=Idle(tools=("lookup",))), model).say("hello")
    (speak,) = requests(model, "speak")
    assert [t.name for t in speak.tools] == ["lookup"]


# ---------------------------------------------------------------------------------------------- the message once


def _support_like_agent() -> Agent:
    fields = {"order_number": Field("string", description="An order number")}
    orders = Flow("orders", "Order status", nodes=[
        collect("ask_order", fields=["order_number"], prompt="Ask for the order number."),
        reply("status", instructions="Tell the status of ${order_number}.", next=end("told"))],
        on=[on_message("where is my order", repeat="always")])
    refunds = Flow("refunds", "Refunds", nodes=[reply("refund", instructions="Explain refunds.")],
                   on=[on_message("refund", repeat="always")])
    return Agent("Ava", fields=fields, flows=[orders, refunds])


async def test_the_customers_message_is_in_each_request_once() -> None:
    model = ScriptedModel(
        understand=[{"flows": {"orders": 95, "refunds": 0}, "fields": {"order_number": None}},
                    {"flows": {"orders": 90, "refunds": 0}}],
        speak=[{"message": "Which order?", "order_number": None}, {"message": "A-1 is on its way."}],
        extract=[{"order_number": "A-1"}])
    convo = Conversation(_support_like_agent(), model)
    texts = ["hi, where is my order please?", "it is A-1 thanks"]
    for text in texts:
        before = len(model.calls)
        await convo.say(text)
        for call in model.calls[before:]:
            request = call.request
            assert text not in request.system and text not in request.instructions, call.call
            assert [m.content for m in request.messages].count(text) == 1, call.call
            assert request.messages[-1].content == text or call.call == "summary"
    assert {c.call for c in model.calls} >= {"understand", "speak"}


# ---------------------------------------------------------------------------------------------- stable text first


async def test_the_system_text_of_a_call_kind_is_the_same_every_turn_and_holds_the_catalogue() -> None:
    model = ScriptedModel(
        understand=[{"flows": {"orders": 95, "refunds": 0}, "fields": {"order_number": None}},
                    {"flows": {"orders": 90, "refunds": 0}}, {"flows": {"orders": 0, "refunds": 90}}],
        speak=[{"message": "Which order?", "order_number": None}, {"message": "A-1 is on its way."},
               "Refunds take five days."],
        extract=[{"order_number": "A-1"}])
    convo = Conversation(_support_like_agent(), model)
    for text in ("where is my order?", "A-1", "and how do refunds work?"):
        await convo.say(text)
    for kind in ("understand", "speak"):
        systems = {r.system for r in requests(model, kind)}
        assert len(systems) == 1, kind  # byte-identical: a provider's prompt cache can reuse it
        (system,) = systems
        # the flow catalogue, in the agent's order, is part of the stable text
        assert system.index("- orders: Order status") < system.index("- refunds: Refunds")
    # per-turn text stays out of the stable part: the step's guideline is in the instructions
    speak = requests(model, "speak")
    assert all("Your task now:" not in r.system and "Your task now:" in r.instructions for r in speak)
    understand = requests(model, "understand")
    assert all("Score 0-100" not in r.system for r in understand)


async def test_the_understand_flow_scores_come_in_the_agents_order_wherever_the_floor_is() -> None:
    model = ScriptedModel(
        understand=[{"flows": {"orders": 95, "refunds": 0}, "fields": {"order_number": None}},
                    {"flows": {"orders": 90, "refunds": 0}}],
        speak=[{"message": "Which order?", "order_number": None}, {"message": "A-1 is on its way."}],
        extract=[{"order_number": "A-1"}])
    agent = _support_like_agent()
    reordered = Agent("Ava", fields=agent.fields, flows=[agent.flows_by_id["refunds"], agent.flows_by_id["orders"]])
    convo = Conversation(reordered, model)
    await convo.say("where is my order?")
    await convo.say("A-1")
    first, second = (list(r.response_format.schema["properties"]["flows"]["properties"])  # type: ignore[union-attr]
                     for r in requests(model, "understand"))
    assert first == ["refunds", "orders"]  # no floor: the agent's order
    assert second == ["refunds", "orders"]  # orders holds the floor: it keeps its place, not first


# ---------------------------------------------------------------------------------------------- the window


def _chatty_agent(**kw: Any) -> Agent:
    talk = reply("talk", instructions="Chat.")
    return Agent("Ava", flows=[Flow("chat", "Chat", nodes=[talk], on=[on_message(repeat="always")])], **kw)


async def test_the_window_compacts_into_a_summary_before_it_slides() -> None:
    model = ScriptedModel(speak=[f"answer {i}" for i in range(1, 6)], summary=["Earlier: messages 1 and 2."])
    convo = Conversation(_chatty_agent(history_window=8), model)
    for i in range(1, 6):
        await convo.say(f"message {i}")
        assert convo.session is not None
        window = convo.session.messages
        # nothing left the window without a summary: it still starts at the first message, or a summary covers it
        assert window[0].seq == 1 or convo.session.summary is not None
        assert window[0].role == "user"  # the window is cut at a customer message
    assert [c.call for c in model.calls].count("summary") == 1 and model.unused() == {}
    after = [c.request for c in model.calls[model.calls.index(next(c for c in model.calls if c.call == "summary")):]
             if c.call == "speak"]
    assert after[0].messages[0].content == "Summary of the earlier conversation: Earlier: messages 1 and 2."


async def test_when_the_summary_fails_the_window_slides_and_still_opens_with_the_customer() -> None:
    error = ModelError("overloaded", kind="overload")
    failing = [lambda r: (_ for _ in ()).throw(error)] * 8
    model = ScriptedModel(speak=[f"answer {i}" for i in range(1, 9)], summary=failing)
    convo = Conversation(_chatty_agent(history_window=6), model)
    for i in range(1, 9):
        result = await convo.say(f"message {i}")
        assert result.text == f"answer {i}"
    assert convo.session is not None and convo.session.summary is None
    assert convo.session.messages[0].seq > 1  # it slid
    for request in requests(model, "speak"):
        chat = [m for m in request.messages if m.role != "system"]
        assert chat[0].role == "user"


class _Urgency(BaseModel):
    priority: str


REPORTS = [("the printer", "it jams"), ("my phone", "it is cracked"), ("the router", "it drops"),
           ("my laptop", "it is slow"), ("the monitor", "it flickers")]


def _ticket_form(opened: Any = None, **kw: Any) -> Agent:
    """One catch-all flow: a collect that asks a fixed question (extract calls), a decide call,
    and a fixed ticket reply unless ``opened`` replaces it."""
    fields = {"device": Field("string", description="The device", extract="asked"),
              "problem": Field("string", description="What is wrong", extract="asked")}
    intake = Flow("intake", "Report a broken device", nodes=[
        collect("details", fields=["device", "problem"], ask="Which device, and what is wrong?"),
        decide("triage", schema=_Urgency, instructions="How urgent is the ${device}: ${problem}?",
               decide=lambda d, s: goto("opened")),
        opened or reply("opened", response="Ticket opened for your ${device}.", next=end("opened")),
    ], on=[on_message(repeat="always")], clear_on_start=["device", "problem"])
    return Agent("Iris", fields=fields, flows=[intake], idle="silent", **kw)


def _ticket_model() -> ScriptedModel:
    extract = [value for device, problem in REPORTS for value in ({"device": device}, {"problem": problem})]
    return ScriptedModel(extract=extract, decide=[{"priority": "low"}] * len(REPORTS),
                         speak=[f"Ticket {i} is open." for i in range(len(REPORTS))],
                         summary=["Earlier, the customer reported broken devices."] * 20)


async def _report_all(convo: Conversation) -> list[Any]:
    results = []
    for device, problem in REPORTS:
        results.append(await convo.say(device))
        results.append(await convo.say(problem))
    return results


@pytest.mark.parametrize("compaction", [None, Compaction(max_tokens=30, preserve_recent=2)],
                         ids=["history-window", "token-budget"])
async def test_a_summary_no_call_would_read_is_never_made(compaction: Compaction | None) -> None:
    # extract and decide calls read the latest four messages, never the summary note: the window
    # slides (or is truncated under a token budget) without a summary call
    model = _ticket_model()
    convo = Conversation(_ticket_form(history_window=6, compaction=compaction), model)
    results = await _report_all(convo)
    assert convo.session is not None and convo.session.messages[0].seq > 1  # the window slid
    assert model.count("summary") == 0 and convo.session.summary is None
    assert sum(r.llm_calls for r in results) == model.count() == 3 * len(REPORTS)  # extract x2 + decide a report
    for request in requests(model, "extract") + requests(model, "decide"):
        chat = [m for m in request.messages if m.role != "system"]
        assert chat[0].role == "user" and len(chat) <= 4 and chat[-1].content in {t for r in REPORTS for t in r}
    last = [(m.role, m.content) for m in requests(model, "extract")[-1].messages if m.role != "system"]
    assert last == [("user", "the monitor"), ("assistant", "Which device, and what is wrong?"),
                    ("user", "it flickers")]  # what an extraction reads, window or not
    if compaction is not None:
        assert any(o.detail == "truncated the oldest messages" for r in results for o in r.outcomes)
    assert model.unused() == {"speak": len(REPORTS), "summary": 20}


@pytest.mark.parametrize("compaction", [None, Compaction(max_tokens=30, preserve_recent=2)],
                         ids=["history-window", "token-budget"])
async def test_a_speak_call_in_the_same_form_gets_its_summary_before_the_window_slides(
        compaction: Compaction | None) -> None:
    # the same form with a ticket reply the model phrases: its speak calls read the window
    opened = reply("opened", instructions="Confirm the ticket for the ${device}.", next=end("opened"))
    model = _ticket_model()
    convo = Conversation(_ticket_form(opened, history_window=6, compaction=compaction), model)
    for device, problem in REPORTS:
        await convo.say(device)
        assert convo.session is not None
        # nothing left the window without a summary: it still starts at the first message, or a summary covers it
        assert convo.session.messages[0].seq == 1 or convo.session.summary is not None
        await convo.say(problem)
        assert convo.session.messages[0].seq == 1 or convo.session.summary is not None
    assert model.count("summary") >= 1
    speak = requests(model, "speak")[-1]
    assert speak.messages[0].content == "Summary of the earlier conversation: Earlier, the customer reported " \
                                        "broken devices."


async def test_history_never_opens_with_an_assistant_message() -> None:
    greet = reply("greet", response="Hi, I'm Ava. How can I help?", next=end("greeted"))
    model = ScriptedModel(speak=["We open at nine."])
    convo = Conversation(Agent("Ava", flows=[Flow("welcome", "Welcome", nodes=[greet])]), model)
    await convo.start("welcome")
    await convo.say("when do you open?")
    (speak,) = requests(model, "speak")
    assert [m.role for m in speak.messages] == ["system", "user"]
    assert "Hi, I'm Ava. How can I help?" in speak.messages[0].content  # kept, as a note


async def test_understand_says_what_its_sections_mean_once_in_the_stable_text() -> None:
    model = ScriptedModel(
        understand=[{"flows": {"orders": 95, "refunds": 0}, "fields": {"order_number": None}},
                    {"flows": {"orders": 90, "refunds": 0}}],
        speak=[{"message": "Which order?", "order_number": None}, {"message": "A-1 is on its way."}],
        extract=[{"order_number": "A-1"}])
    convo = Conversation(_support_like_agent(), model)
    await convo.say("where is my order?")
    await convo.say("A-1")
    for request in requests(model, "understand"):
        assert "- flows: score 0-100" in request.system and "- collect: the values" in request.system
        assert request.instructions == ""  # nothing the schema cannot say: no per-turn restatement
        assert request.response_format is not None
        assert next(iter(request.response_format.schema["properties"])) == "flows"  # the most stable section first


class _Triage(BaseModel):
    priority: str


def _intake_agent() -> Agent:
    fields = {"device": Field("string", description="The device", extract="asked"),
              "problem": Field("string", description="What is wrong", extract="asked")}
    intake = Flow("intake", "Report a broken device", nodes=[
        collect("details", fields=["device", "problem"], ask="Which device, and what is wrong?"),
        decide("triage", schema=_Triage, instructions="How urgent is the ${device}: ${problem}?",
               decide=lambda d, s: end(d.priority)),
    ], on=[on_message(repeat="always")], clear_on_start=["device", "problem"])
    return Agent("Iris", persona="An IT help-desk assistant.", fields=fields, flows=[intake], idle="silent")


async def test_extract_and_decide_lead_with_stable_text_and_extract_reads_the_latest_exchange() -> None:
    model = ScriptedModel(
        extract=[{"device": "laptop", "problem": "it won't boot"}, {"device": "printer"}, {"problem": "it jams"},
                 {"device": "phone", "problem": "cracked"}],
        decide=[{"priority": "high"}, {"priority": "low"}, {"priority": "low"}])
    convo = Conversation(_intake_agent(), model)
    for text in ("my laptop won't boot", "the printer", "it jams", "my phone is cracked"):
        await convo.say(text)
    for kind in ("extract", "decide"):
        systems = {r.system for r in requests(model, kind)}
        assert len(systems) == 1, kind  # byte-identical on every call of the kind
        (system,) = systems
        assert system.startswith("You are Iris.") and "never reply to the customer" in system
    last = requests(model, "extract")[-1]
    # the last four of the five messages so far: the latest exchange, not the whole window
    assert [(m.role, m.content) for m in last.messages] == [
        ("user", "the printer"), ("assistant", "Which device, and what is wrong?"), ("user", "it jams"),
        ("user", "my phone is cracked")]
    decided = requests(model, "decide")[-1]
    # a decision too reads the latest messages, not the whole window: the same cost on every turn
    assert [(m.role, m.content) for m in decided.messages] == [(m.role, m.content) for m in last.messages]
    assert decided.instructions == "How urgent is the phone: cracked?"
