"""The model-call budget, one scenario per row of the seed's table.

Every scenario uses a ScriptedModel that raises when a call has no scripted reply, so a turn that
spends one call too many fails loudly; ``model.unused() == {}`` catches one too few.
"""

from __future__ import annotations

from typing import Any

from harness import Conversation

from tether import (
    NEXT,
    Agent,
    Field,
    Flow,
    action,
    collect,
    on_mention,
    on_message,
    reply,
    router,
    tool,
    wait,
)
from tether.models.types import ModelResponse, ToolCall
from tether.testing import ScriptedModel

FIELDS = {
    "name": Field("string", description="The customer's name"),
    "order_number": Field("string", description="The order number"),
    "email": Field("string", description="Email address"),
}


def order_flow(**kw: Any) -> Flow:
    ask = collect("ask_order", fields=["order_number"], prompt="Ask for the order number.")
    answer = reply("answer", instructions="Tell the customer the order status.", next=NEXT)
    return Flow("orders", "Order status questions", nodes=[ask, answer],
                on=[on_message("where is my order", "order status")], **kw)


def refund_flow() -> Flow:
    talk = reply("refund", instructions="Explain the refund policy.")
    return Flow("refunds", "Refunds", nodes=[talk], on=[on_message("refund", "money back")])


def greeting_flow(first: Any = None) -> Flow:
    first = first or reply("hello", instructions="Greet the customer and ask how to help.")
    return Flow("greet", "Greeting", nodes=[first], on=[on_message()])


async def test_floor_holder_with_another_candidate_costs_two_calls() -> None:
    model = ScriptedModel(
        speak=[{"message": "What's your order number?", "order_number": None},
               {"message": "Thanks, checking A-1.", "order_number": "A-1"}],
        understand=[{"flows": {"orders": 90, "refunds": 5}}],
    )
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[order_flow(), refund_flow()]), model)
    first = await convo.say("where is my order?")
    assert first.llm_calls == 2  # two candidates to score + the speak call
    model.add("understand", {"flows": {"orders": 80, "refunds": 10}})
    second = await convo.say("it's A-1")
    assert second.llm_calls == 2  # floor holder + another candidate: understand + speak
    assert convo.session.data["order_number"] == "A-1"
    assert [c.call for c in model.calls] == ["understand", "speak", "understand", "speak"]
    assert model.unused() == {}


async def test_lone_candidate_with_a_catch_all_is_scored() -> None:
    model = ScriptedModel(understand=[{"flows": {"refunds": 85}}], speak=["Refunds take 5 days."])
    convo = Conversation(Agent("Ava", flows=[refund_flow(), greeting_flow()]), model)
    result = await convo.say("I want my money back")
    assert result.llm_calls == 2
    assert [r.flow for r in result.started] == ["refunds"]
    assert model.unused() == {}


async def test_low_score_falls_to_the_catch_all() -> None:
    model = ScriptedModel(understand=[{"flows": {"refunds": 20}}], speak=["Hi! How can I help?"])
    convo = Conversation(Agent("Ava", flows=[refund_flow(), greeting_flow()]), model)
    result = await convo.say("hello there")
    assert [r.flow for r in result.started] == ["greet"]
    assert result.llm_calls == 2


async def test_catch_all_alone_costs_one_call() -> None:
    model = ScriptedModel(speak=["Hi! How can I help?"])
    convo = Conversation(Agent("Ava", flows=[greeting_flow()]), model)
    result = await convo.say("hi")
    assert result.llm_calls == 1 and model.count("understand") == 0
    assert result.messages[0].kind == "ai"


async def test_catch_all_whose_first_step_asks_its_own_fields_costs_one_call() -> None:
    first = collect("who", fields=["name"], prompt="Ask for their name.")
    model = ScriptedModel(speak=[{"message": "Nice to meet you, Ada!", "name": "Ada"}])
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[greeting_flow(first)]), model)
    result = await convo.say("hi, I'm Ada")
    assert result.llm_calls == 1  # the first step's own speak call reads its fields
    assert convo.session.data["name"] == "Ada"


async def test_floor_holder_alone_costs_one_call() -> None:
    model = ScriptedModel(speak=[{"message": "Your order number?", "order_number": None},
                                 {"message": "Got it.", "order_number": "B-2"}, "It ships tomorrow."])
    agent = Agent("Ava", fields=FIELDS, flows=[order_flow()], idle="silent")
    convo = Conversation(agent, model)
    first = await convo.say("where is my order")
    assert first.llm_calls == 1  # lone flow, idle silent, no catch-all: starts unscored
    second = await convo.say("B-2")
    assert second.llm_calls == 1  # floor holder alone: nothing to compare
    assert model.count("understand") == 0


async def test_no_flows_idle_answers_with_one_call() -> None:
    model = ScriptedModel(speak=["Hello! I'm Ava."])
    convo = Conversation(Agent("Ava"), model)
    result = await convo.say("hello")
    assert result.llm_calls == 1
    assert result.messages[0].key == "idle:m1"
    assert result.outcomes[-1].kind == "idle"


async def test_idle_silent_and_no_eligible_flow_costs_nothing() -> None:
    convo = Conversation(Agent("Ava", idle="silent"), ScriptedModel())
    result = await convo.say("hello")
    assert result.llm_calls == 0 and result.messages == []


async def test_a_mention_flows_say_answers_with_one_call() -> None:
    notice = reply("notice", response="Our store is closed on Sundays.", next=NEXT)
    hours = Flow("hours", "Opening hours", nodes=[notice], on=[on_mention("opening hours", "when are you open")])
    chat = reply("chat", instructions="Chat with the customer.")
    model = ScriptedModel(understand=[{"mentions": {"hours": False}}], speak=["Hi! What can I do for you?"])
    convo = Conversation(Agent("Ava", flows=[hours, Flow("chat", "Chat", nodes=[chat], on=[on_message()])]), model)
    await convo.say("hi")  # the catch-all starts and speaks
    model.add("understand", {"mentions": {"hours": True}})
    result = await convo.say("are you open on sunday?")
    assert result.text == "Our store is closed on Sundays."
    assert result.llm_calls == 1  # understand only: the floor's talk is skipped (another-reply)
    assert "another-reply" in result.codes()


async def test_each_tool_round_adds_one_call() -> None:
    @tool
    def order_status(order_number: str) -> str:
        """Look up an order."""
        return f"{order_number}: shipped"

    talk = reply("talk", instructions="Help with orders.", tools=["order_status"])
    model = ScriptedModel(speak=[
        ModelResponse(tool_calls=(ToolCall("c1", "order_status", {"order_number": "A-1"}),)),
        ModelResponse(tool_calls=(ToolCall("c2", "order_status", {"order_number": "A-2"}),)),
        "A-1 and A-2 have shipped.",
    ])
    convo = Conversation(Agent("Ava", tools=[order_status], flows=[Flow("f", "f", nodes=[talk], on=[on_message()])]),
                         model)
    result = await convo.say("status of A-1 and A-2?")
    assert result.llm_calls == 3  # two tool rounds + the answer
    final = model.calls[-1].request
    assert [m.role for m in final.messages][-4:] == ["assistant", "tool", "assistant", "tool"]


async def test_tool_rounds_stop_at_max_tool_loops_then_one_call_without_tools() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    talk = reply("talk", instructions="Ping forever.", tools=["ping"])
    calls = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "ping", {}),)) for i in range(2)]
    model = ScriptedModel(speak=[*calls, "Done pinging."])
    agent = Agent("Ava", tools=[ping], max_tool_loops=2, flows=[Flow("f", "f", nodes=[talk], on=[on_message()])])
    result = await Conversation(agent, model).say("go")
    assert result.llm_calls == 3
    assert model.calls[-1].request.tools == ()  # the last round offers no tools
    assert result.text == "Done pinging."


async def test_start_reaching_a_talk_step_costs_one_call() -> None:
    talk = reply("greet", instructions="Welcome the customer.")
    model = ScriptedModel(speak=["Welcome back!"])
    convo = Conversation(Agent("Ava", flows=[Flow("welcome", "Welcome", nodes=[talk])]), model)
    result = await convo.start("welcome")
    assert result.llm_calls == 1 and result.text == "Welcome back!"
    assert "no new customer message" in model.calls[0].request.instructions


async def test_first_ask_with_a_fixed_question_costs_nothing() -> None:
    ask = collect("who", fields=["email"], question="What's your email?", prompt="Ask for the email.")
    model = ScriptedModel()
    fields = {"email": Field("string", extract="asked")}  # only the asking step reads it
    convo = Conversation(Agent("Ava", fields=fields, flows=[Flow("f", "f", nodes=[ask], on=[on_message()])]), model)
    result = await convo.say("hello")
    assert result.llm_calls == 0
    assert result.text == "What's your email?" and result.messages[0].kind == "verbatim"
    assert "asked-fixed" in result.codes()


async def test_start_running_only_do_wait_if_costs_nothing() -> None:
    seen: list[str] = []
    note = action("note", lambda state, ctx: seen.append(ctx.key))
    check = router("check", when="'email' in data", then="pause", else_="pause")
    pause = wait("pause", timer="1h")
    flow = Flow("followup", "Follow up", nodes=[note, check, pause])
    convo = Conversation(Agent("Ava", fields=FIELDS, flows=[flow]), ScriptedModel())
    result = await convo.start("followup", key="k9")
    assert result.llm_calls == 0
    assert seen == ["followup#k9:note:1"]
    (wake,) = result.schedule
    assert wake.key.startswith("followup#k9:pause:")
    assert convo.run("followup").status == "waiting"


async def test_any_input_under_plain_silenced_costs_nothing() -> None:
    model = ScriptedModel()
    convo = Conversation(Agent("Ava", flows=[refund_flow(), greeting_flow()]), model)
    result = await convo.say("hello", silenced="human agent took over")
    assert result.llm_calls == 0 and result.messages == []


async def test_wake_reaching_a_talk_step_costs_one_call() -> None:
    pause = wait("pause", timer="1h")
    talk = reply("nudge", instructions="Ask if they are still there.")
    model = ScriptedModel(speak=["Still there?"])
    convo = Conversation(Agent("Ava", flows=[Flow("f", "f", nodes=[pause, talk])]), model)
    started = await convo.start("f")
    (wake,) = started.schedule
    convo.clock.advance("1h")
    result = await convo.wake(wake.key)
    assert result.llm_calls == 1 and result.text == "Still there?"
    assert "no-reply" in result.codes()


async def test_a_compaction_summary_adds_one_call() -> None:
    from tether import Compaction

    talk = reply("talk", instructions="Chat.")
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[talk], on=[on_message()])],
                  compaction=Compaction(max_tokens=60, preserve_recent=2))
    model = ScriptedModel(speak=["A fairly long answer that fills the window quickly, " * 2] * 3,
                          summary=["The customer is chatting about the weather."])
    convo = Conversation(agent, model)
    assert (await convo.say("first message about the weather")).llm_calls == 1
    assert (await convo.say("second message about the weather")).llm_calls == 1
    third = await convo.say("third message")
    assert third.llm_calls == 2  # the compaction summary + the speak call
    assert [c.call for c in model.calls][-2:] == ["summary", "speak"]
    assert convo.session is not None and convo.session.summary == "The customer is chatting about the weather."
    assert len(convo.session.messages) == 3  # two kept + the answer of this turn
    seen = model.calls[-1].request.messages
    assert seen[0].content == "Summary of the earlier conversation: The customer is chatting about the weather."
    assert model.unused() == {}


async def test_compaction_without_a_model_truncates() -> None:
    from tether import Compaction

    hello = reply("hello", response="Hello there, this reply is long enough to need trimming soon.")
    agent = Agent("Ava", flows=[Flow("f", "f", nodes=[hello], on=[on_message()])], idle="silent",
                  compaction=Compaction(max_tokens=40, preserve_recent=2))
    convo = Conversation(agent, ScriptedModel())
    convo.agent = convo.agent.with_model(None)  # no model at all: truncation is the last layer
    for text in ("one", "two", "three", "four"):
        result = await convo.say(text)
        assert result.llm_calls == 0
    assert convo.session is not None and convo.session.summary is None
    window = convo.session.messages
    assert window[0].seq > 1 and len(window) < 8  # the oldest left the window (the store keeps the transcript)
    assert window[-1].role == "assistant" and any(o.kind == "compaction" for o in result.outcomes)


async def test_a_fixed_question_follows_the_answer_when_the_customer_asked_something() -> None:
    ask = collect("who", fields=["email"], question="What's your email?", prompt="Ask for the email.")
    fields = {"email": Field("string", extract="asked")}
    model = ScriptedModel(understand=[{"flows": {"refunds": 10}, "asks": True}],
                          speak=[{"message": "We're open 9 to 5.", "email": None}])
    flows = [Flow("f", "f", nodes=[ask], on=[on_message()]), refund_flow()]
    convo = Conversation(Agent("Ava", fields=fields, flows=flows), model)
    result = await convo.say("hi, when are you open?")
    assert [m.text for m in result.messages] == ["We're open 9 to 5.", "What's your email?"]
    assert [m.kind for m in result.messages] == ["ai", "verbatim"]
    assert result.llm_calls == 2 and "asked-fixed" in result.codes()  # understand + the answer; the question is free
    assert model.unused() == {}
