"""Seed 004's basic demo flow of agent steps: go, stay and direct."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, TurnResult, agent, direct, go, on_message, stay, tool
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.testing import tool_calls as calls


@tool
def user_name(name: str) -> Any:
    """Record the customer's name."""
    if name == "John Doe":
        return stay("Cannot accept John Doe, please choose a different name.")
    return go("topic").with_state({"name": name})


@tool
def opening_hours() -> Any:
    """Tell the opening hours, word for word."""
    return direct("We are open 9 to 5, Monday to Friday.")


ask_name = agent("name", prompt="Ask the customer's name.", tools=[user_name, opening_hours])
topic = agent("topic", prompt="Greet ${name} and ask what they need.")
basic = Flow("basic", nodes=[ask_name, topic], on=[on_message()])
bot = Agent("Basic", flows=[basic])


class Chat:
    def __init__(self, agent: Agent, model: ScriptedModel) -> None:
        self.agent = agent.with_model(model).with_clock(FakeClock(), SequentialIds("s"))
        self.session: Session | None = None

    async def say(self, text: str) -> TurnResult:
        result = await self.agent.turn(self.session, text)
        self.session = result.session
        return result

    @property
    def node(self) -> str | None:
        assert self.session is not None
        return self.session.runs[0].node


def memory_of(session: Session | None, namespace: str) -> list[tuple[str, str]]:
    assert session is not None
    return [(m["role"], m["content"]) for m in session.memory[namespace].messages]


async def test_stay_feeds_back_go_moves_and_the_next_step_answers_in_the_same_turn() -> None:
    model = ScriptedModel(agent=[
        "What's your name?",
        calls(("user_name", {"name": "John Doe"})),
        "Sorry, I can't use that name. Another one?",
        calls(("user_name", {"name": "Ann"})),
        "Hi Ann! What do you need?",
    ])
    chat = Chat(bot, model)
    first = await chat.say("hello")
    assert first.text == "What's your name?" and chat.node == "name"
    refused = await chat.say("John Doe")
    assert refused.text == "Sorry, I can't use that name. Another one?" and chat.node == "name"
    tool_message = model.calls[2].request.messages[-1]
    assert tool_message.role == "tool" and tool_message.content == \
        "Cannot accept John Doe, please choose a different name."
    moved = await chat.say("Ann")
    assert moved.text == "Hi Ann! What do you need?" and chat.node == "topic"
    assert moved.agent_calls == 2 and model.unused() == {}
    # the new step's prompt is rendered with the state the move wrote, and its memory is its own
    assert model.calls[4].request.system == "Greet Ann and ask what they need."
    assert memory_of(chat.session, "topic") == [("user", "Start"), ("assistant", "Hi Ann! What do you need?")]


async def test_direct_answers_with_no_further_model_call() -> None:
    model = ScriptedModel(agent=["What's your name?", calls(("opening_hours", {}))])
    chat = Chat(bot, model)
    await chat.say("hello")
    answered = await chat.say("when are you open?")
    assert answered.text == "We are open 9 to 5, Monday to Friday."
    assert answered.agent_calls == 1 and chat.node == "name" and model.unused() == {}
