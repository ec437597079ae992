"""Memory namespaces and their opt-in summaries: compaction at the end of the turn, never
splitting a tool call from its results, a cumulative summary sent as a second system message,
a failure that is only a warning, and shared namespaces."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, MemorySummary, agent, go, on_message, stay, tool
from tether.errors import ModelError
from tether.models.types import ModelRequest
from tether.testing import ScriptedModel

from .helpers import Chat, calls, memory_of


@tool
def ping() -> Any:
    """Ping."""
    return stay("pong")


def bot(summary: MemorySummary | None) -> Agent:
    step = agent("talk", prompt="Chat.", tools=[ping], summary=summary)
    return Agent("Mem", flows=[Flow("mem", nodes=[step], on=[on_message()])])


async def test_compaction_keeps_the_tool_call_with_its_results_and_sends_the_summary() -> None:
    summaries: list[str] = []

    def summarize(request: ModelRequest) -> str:
        summaries.append(request.messages[0].content)
        return "The customer said hi and x, then pinged."

    model = ScriptedModel(agent=["A1", "A2", calls(("ping", {})), "A3", "A4"], summary=[summarize])
    chat = Chat(bot(MemorySummary(min_messages=8, recent_messages=2)), model)
    await chat.say("hi")
    await chat.say("x")
    assert chat.session is not None and chat.session.memory["talk"].summary is None  # 4 messages + the slot: < 8
    third = await chat.say("ping")
    assert third.text == "A3" and third.llm_calls == 3  # two agent calls, then the summary call
    # all but 2 would cut between the tool call and its result: the call stays with it
    assert memory_of(chat.session, "talk") == [("assistant", ""), ("tool", "pong"), ("assistant", "A3")]
    space = chat.session.memory["talk"]
    assert space.summary == "The customer said hi and x, then pinged." and space.summarized_through == 5
    assert "user: hi" in summaries[0] and "assistant: A2" in summaries[0] and "Previous summary" not in summaries[0]
    await chat.say("more")
    request = model.calls[-1].request
    assert request.call == "agent" and request.system == "Chat."
    assert (request.messages[0].role, request.messages[0].content) == \
        ("system", "Conversation memory for this step:\nThe customer said hi and x, then pinged.")
    assert chat.session.messages[0].text == "hi"  # the transcript is untouched


async def test_a_compaction_failure_is_a_warning_and_the_turn_succeeds() -> None:
    def fail(request: ModelRequest) -> str:
        raise ModelError("summary model down", kind="overloaded")

    model = ScriptedModel(agent=["A1", "A2", "A3", "A4"], summary=[fail])
    chat = Chat(bot(MemorySummary(min_messages=8, recent_messages=4)), model)
    for text in ("a", "b", "c", "d"):
        result = await chat.say(text)
    assert result.text == "A4" and chat.session is not None
    assert len(chat.session.memory["talk"].messages) == 8 and chat.session.memory["talk"].summary is None
    assert chat.session.warn[-1].message.startswith("Memory compaction skipped: summary model down")


async def test_without_summaries_nothing_within_the_history_window_leaves() -> None:
    model = ScriptedModel(agent=[f"A{i}" for i in range(10)])
    chat = Chat(bot(None), model)
    results = [await chat.say(f"m{i}") for i in range(10)]
    assert len(memory_of(chat.session, "talk")) == 20  # the default window is 40
    assert not [o for r in results for o in r.outcomes if o.kind == "compaction"]


async def test_without_summaries_the_oldest_leave_opening_on_a_user_message_with_tool_calls_kept_whole() -> None:
    step = agent("talk", prompt="Chat.", tools=[ping])
    small = Agent("Mem", flows=[Flow("mem", nodes=[step], on=[on_message()])], history_window=5)
    # (the small window also folds the conversation's transcript window: its summary calls)
    model = ScriptedModel(agent=["A0", calls(("ping", {})), "A1", "A2", "A3"], summary=["Earlier talk."] * 4)
    chat = Chat(small, model)
    await chat.say("m0")
    pinged = await chat.say("ping")  # 6 messages: the 1 over the window would leave A0 first; m0 and A0 leave
    assert [o.detail for o in pinged.outcomes if o.kind == "compaction"] == \
        ["memory 'talk': the 2 oldest message(s) left it"]
    assert memory_of(chat.session, "talk") == [("user", "ping"), ("assistant", ""), ("tool", "pong"),
                                               ("assistant", "A1")]
    await chat.say("m2")  # cutting after the tool call's message would orphan its result: all 4 leave
    assert memory_of(chat.session, "talk") == [("user", "m2"), ("assistant", "A2")]
    await chat.say("m3")
    request = model.calls[-1].request
    assert [(m.role, m.content) for m in request.messages] == [("user", "m2"), ("assistant", "A2"), ("user", "m3")]
    assert chat.session is not None and chat.session.memory["talk"].messages[0]["n"] == 7  # numbering goes on


async def test_steps_that_share_a_namespace_share_history() -> None:
    @tool
    def onward() -> Any:
        """Go on."""
        return go("second")

    first = agent("first", prompt="One.", tools=[onward], memory="shared")
    second = agent("second", prompt="Two.", memory="shared")
    alone = Agent("Share", flows=[Flow("share", nodes=[first, second], on=[on_message()])])
    model = ScriptedModel(agent=["one", calls(("onward", {})), "two"])
    chat = Chat(alone, model)
    await chat.say("hi")
    await chat.say("next")
    seen = [(m.role, m.content) for m in model.calls[-1].request.messages]
    assert seen[:3] == [("user", "hi"), ("assistant", "one"), ("user", "next")]
    assert seen[-1] == ("user", "Start") and chat.session is not None and set(chat.session.memory) == {"shared"}
