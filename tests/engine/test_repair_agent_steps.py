"""Repair at an agent step (seed 004): cancel, small talk and a closing, read by keywords before
any call, or by the understand call's intent when the turn makes one; neither runs the step's
model loop."""

from __future__ import annotations

from typing import Any

from tether import Agent, Field, Flow, Message, Session, agent, collect, end, enum_check, go, on_message, reply, tool
from tether.testing import StrictModel


@tool
def set_guests(guests: int) -> Any:
    """Record how many guests will stay."""
    return go("thanks").with_state({"guests": guests})


ask_guests = agent("guests", prompt="Ask how many guests will stay and call set_guests.", tools=[set_guests])
booking = Flow("booking", "Book a room", start=ask_guests, nodes=[
    ask_guests,
    reply("thanks", response="Booked for ${guests}.", next=end("booked")),
], on=[on_message("book a room", repeat="always")])
hours = Flow("hours", "Opening hours", nodes=[reply("open", response="We are open 9 to 5.", next=end("told"))],
             on=[on_message("opening hours", repeat="always")])


class Chat:
    def __init__(self, bot: Agent) -> None:
        self.bot, self.session = bot, None

    async def say(self, text: str) -> Any:
        result = await self.bot.turn(self.session, Message(text))
        self.session = result.session
        return result

    @property
    def doc(self) -> Session:
        assert self.session is not None
        return self.session


async def test_keywords_cancel_chat_and_close_at_an_agent_step_with_no_call() -> None:
    model = StrictModel(agent=["How many guests?", "How many guests?"])
    model.means("I'd like to book a room", flows={"booking": 90})
    model.means("book a room please", flows={"booking": 90})
    chat = Chat(Agent("Inn", flows=[booking, hours]).with_model(model))
    assert (await chat.say("I'd like to book a room")).text == "How many guests?"
    thanked = await chat.say("thanks!")  # the reply, then the step's question again
    assert thanked.text == "You're welcome!\n\nHow many guests?" and thanked.llm_calls == 0
    assert "repair-chitchat" in thanked.codes() and [r.node for r in chat.doc.runs] == ["guests"]  # the step goes on
    (memory,) = [space.messages for space in chat.doc.memory.values()]
    # the step's model will see them
    assert [m["content"] for m in memory[-2:]] == ["thanks!", "You're welcome!\n\nHow many guests?"]
    cancelled = await chat.say("forget it")
    assert cancelled.text == "OK, I've cancelled that." and cancelled.llm_calls == 0
    assert [e.reason for e in cancelled.ended] == ["cancelled"] and chat.doc.runs == []
    assert chat.doc.memory == {}  # the cancelled step's own memory is not the next booking's
    assert (await chat.say("book a room please")).text == "How many guests?"  # a new booking can start
    closed = await chat.say("that's all, bye")
    assert closed.text == "Glad I could help. Goodbye!" and closed.llm_calls == 0
    assert chat.doc.status == "completed" and [e.reason for e in closed.ended] == ["completed"]
    assert model.unsaid() == [] and [c.call for c in model.calls] == ["understand", "agent", "understand", "agent"]


async def test_the_understand_intent_cancels_or_chats_at_an_agent_step() -> None:
    model = StrictModel(agent=["How many guests?"])
    model.means("I'd like a room for the weekend", flows={"booking": 90})
    model.means("scrap that", intent="cancel")
    model.means("you are all lovely", intent="chitchat")
    chat = Chat(Agent("Inn", flows=[booking, hours]).with_model(model))
    first = await chat.say("I'd like a room for the weekend")
    assert first.text == "How many guests?"
    chatted = await chat.say("you are all lovely")
    assert chatted.text == "Thanks, that's kind of you!\n\nHow many guests?"
    assert [c.call for c in model.calls[-1:]] == ["understand"]
    assert chatted.llm_calls == 1 and [r.node for r in chat.doc.runs] == ["guests"]
    dropped = await chat.say("scrap that")
    assert dropped.text == "OK, I've cancelled that." and dropped.llm_calls == 1  # the understand call only
    assert chat.doc.runs == [] and model.unsaid() == []


@tool
def set_notes(notes: str) -> Any:
    """Record the customer's notes for the kitchen."""
    return go("placed").with_state({"notes": notes})


async def test_a_correction_at_an_agent_step_is_read_by_the_earlier_steps_resolvers() -> None:
    notes = agent("notes", prompt="The pizza is ${size}. Ask for notes for the kitchen; call set_notes.",
                  tools=[set_notes])
    order = Flow("order", "Order a pizza", nodes=[
        collect("choose", fields=["size"], ask="Small, medium or large?",
                resolvers=[enum_check("size", ("small", "medium", "large"))]),
        notes,
        reply("placed", response="A ${size} pizza.", next=end("placed")),
    ], on=[on_message("pizza")])
    model = StrictModel(agent=["Any notes for the kitchen?", "Medium it is. Any notes?"])
    model.means("a large pizza", flows={"order": 90})
    bot = Agent("Pia", flows=[order, hours],
                fields={"size": Field("enum", enum=("small", "medium", "large"))}).with_model(model)
    chat = Chat(bot)
    assert (await chat.say("a large pizza")).text == "Any notes for the kitchen?"
    fixed = await chat.say("actually make it medium")
    [event] = [e for e in fixed.events if e.type == "field-corrected"]
    assert (event.field, event.old, event.new) == ("size", "large", "medium")
    # back at the size step (known now), then the agent step asks again with the new value
    assert fixed.text == "Medium it is. Any notes?" and chat.doc.data["size"] == "medium"
    assert "The pizza is medium." in model.calls[-1].request.system
    assert [c.call for c in model.calls] == ["understand", "agent", "understand", "agent"]


async def test_a_yes_word_after_the_steps_question_is_heard_by_its_model_not_taken_for_thanks() -> None:
    model = StrictModel(agent=["How many guests?", "Great! How many guests, then?"])
    model.means("I'd like to book a room", flows={"booking": 90})
    chat = Chat(Agent("Inn", flows=[booking, hours]).with_model(model))
    await chat.say("I'd like to book a room")
    heard = await chat.say("great")  # after "How many guests?": an answer the step's model reads
    assert heard.text == "Great! How many guests, then?"
    assert [c.call for c in model.calls[-2:]] == ["understand", "agent"]
    assert "repair-chitchat" not in heard.codes()
    thanked = await chat.say("thanks")  # no yes in it: small talk, no call, and the question again
    assert thanked.text == "You're welcome!\n\nGreat! How many guests, then?" and thanked.llm_calls == 0


async def test_small_talk_after_a_question_inside_a_longer_message_asks_from_the_question_on() -> None:
    model = StrictModel(agent=["Welcome! How many guests? Rooms sleep up to four."])
    model.means("I'd like to book a room", flows={"booking": 90})
    chat = Chat(Agent("Inn", flows=[booking, hours]).with_model(model))
    await chat.say("I'd like to book a room")
    thanked = await chat.say("thanks")
    assert thanked.text == "You're welcome!\n\nHow many guests? Rooms sleep up to four." and thanked.llm_calls == 0
