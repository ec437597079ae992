"""Tool dispatch precedence (seed 004, A2.4): group handler, per-tool handler, the tool's own
function, missing handler, hallucinated tool; and what a handler's value becomes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tether import Agent, Flow, agent, go, on_message, stay, tool
from tether.testing import ScriptedModel

from .helpers import Chat, calls

seen: list[Any] = []


class Pick(BaseModel):
    """Pick a colour."""

    colour: str


class Size(BaseModel):
    """Pick a size."""

    size: int


class Note(BaseModel):
    """A tool with no handler."""

    text: str


@tool
def lookup(order: str) -> dict[str, str]:
    """Look an order up."""
    seen.append(("lookup-fn", order))
    return {"order": order, "status": "shipped"}


@tool
def overridden(x: int) -> Any:
    """A tool whose handler in ``handlers`` wins over its own function."""
    seen.append(("overridden-fn", x))
    return stay("from the function")


def both(tool_calls: list[Any], ctx: Any) -> Any:
    seen.append(("group", sorted(c.name for c in tool_calls)))
    return go("done").with_state({"picked": [c.arguments for c in tool_calls]})


def pick(args: dict[str, Any], ctx: Any) -> Any:
    seen.append(("pick", args))
    return stay(f"noted {args['colour']}")


def size(args: dict[str, Any], ctx: Any) -> Any:
    seen.append(("size", args))
    return stay("noted the size")


def handled(args: dict[str, Any], ctx: Any) -> Any:
    seen.append(("handler", args))
    return stay("from the handler")


def make_agent(**options: Any) -> Agent:
    shop = agent("shop", prompt="Sell a T-shirt.", tools=[Pick, Size, Note, lookup, overridden],
                 handlers={("pick", "size"): both, "pick": pick, "size": size, "overridden": handled}, **options)
    done = agent("done", prompt="Thank the customer.")
    return Agent("Shop", flows=[Flow("shop", nodes=[shop, done], on=[on_message()])])


def tool_messages(model: ScriptedModel, index: int) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.content) for m in model.calls[index].request.messages if m.role == "tool"]


async def test_a_group_handler_for_the_exact_set_wins_and_each_call_gets_a_tool_message() -> None:
    seen.clear()
    model = ScriptedModel(agent=["Colour and size?", calls(("size", {"size": 2}), ("pick", {"colour": "red"})),
                                 "Thanks!"])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("red, size 2")
    assert seen == [("group", ["pick", "size"])] and chat.node == "done" and result.text == "Thanks!"
    shop_memory = chat.session.memory["shop"].messages if chat.session else []
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in shop_memory if m["role"] == "tool"] == \
        [("tool", "call_0", "input validated"), ("tool", "call_1", "input validated")]


async def test_a_group_is_used_only_for_its_exact_set_else_per_tool_handlers() -> None:
    seen.clear()
    model = ScriptedModel(agent=["Colour?", calls(("pick", {"colour": "blue"})), "Size?"])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    await chat.say("blue")
    assert seen == [("pick", {"colour": "blue"})] and tool_messages(model, 2) == [("call_0", "noted blue")]


async def test_a_handler_in_handlers_wins_over_the_tools_own_function() -> None:
    seen.clear()
    model = ScriptedModel(agent=["Hi", calls(("overridden", {"x": 1})), "ok"])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    await chat.say("go")
    assert seen == [("handler", {"x": 1})] and tool_messages(model, 2) == [("call_0", "from the handler")]


async def test_a_tool_function_is_the_handler_and_its_value_is_the_tool_message() -> None:
    seen.clear()
    model = ScriptedModel(agent=["Hi", calls(("lookup", {"order": "A-1"})), "A-1 has shipped."])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("where is A-1?")
    assert seen == [("lookup-fn", "A-1")] and result.text == "A-1 has shipped."
    assert tool_messages(model, 2) == [("call_0", '{"order": "A-1", "status": "shipped"}')]
    assert [e.kind for e in result.journal] == ["model", "tool", "tool", "model"]  # started, then finished


async def test_bad_arguments_go_back_to_the_model_as_the_tool_message() -> None:
    model = ScriptedModel(agent=["Hi", calls(("lookup", {"order": 7, "extra": 1})), "Which order?"])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("where is it?")
    assert result.text == "Which order?"
    [(_, content)] = tool_messages(model, 2)
    assert "invalid arguments" in content and "extra" in content


async def test_an_exposed_tool_with_no_handler_warns_and_validates() -> None:
    model = ScriptedModel(agent=["Hi", calls(("note", {"text": "x"})), "Noted."])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("note this")
    assert result.text == "Noted." and tool_messages(model, 2) == [("call_0", "input validated")]
    assert chat.session is not None and [w.message for w in chat.session.warn] == ["missing tool handler: note"]


async def test_a_hallucinated_tool_is_a_warning_with_its_tool_message_never_an_abort() -> None:
    model = ScriptedModel(agent=["Hi", calls(("refund_everything", {})), "I can't do that."])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("refund me")
    assert result.text == "I can't do that." and chat.node == "shop"
    assert tool_messages(model, 2) == [("call_0", "LLM hallucinates a non-existing tool: refund_everything")]
    assert chat.session is not None and [w.message for w in chat.session.warn] == \
        ["hallucinated tool: refund_everything"]


async def test_a_group_handler_that_returns_no_move_fails_the_step_loudly() -> None:
    def broken(tool_calls: list[Any], ctx: Any) -> Any:
        return None

    shop = agent("shop", prompt="Sell.", tools=[Pick, Size], handlers={("pick", "size"): broken})
    bot = Agent("Shop", flows=[Flow("shop", nodes=[shop], on=[on_message()])])
    model = ScriptedModel(agent=["Hi", calls(("pick", {"colour": "red"}), ("size", {"size": 1}))])
    chat = Chat(bot, model)
    await chat.say("hi")
    result = await chat.say("red 1")
    assert result.text == bot.failure_reply and [e.reason for e in result.ended] == ["error_degraded"]
    assert chat.session is not None
    assert "Group tool handler for ['pick', 'size'] returned null|undefined." in chat.session.error[-1].message


async def test_a_handler_gets_only_arguments_its_schema_accepts_and_the_model_reads_why() -> None:
    seen.clear()
    model = ScriptedModel(agent=["Hi", calls(("pick", {"hue": "red"})), "Which colour?"])
    chat = Chat(make_agent(), model)
    await chat.say("hi")
    result = await chat.say("red")
    assert seen == [] and result.text == "Which colour?"  # the handler never saw the bad call
    [(_, content)] = tool_messages(model, 2)
    assert "invalid arguments" in content and "colour" in content
    assert chat.session is not None and chat.session.warn[-1].message.startswith("tool 'pick': invalid arguments")


def broken(args: dict[str, Any], ctx: Any) -> Any:
    raise KeyError("colour")


async def test_a_call_whose_handler_raised_is_answered_in_the_next_turns_history() -> None:
    shop = agent("shop", prompt="Sell a T-shirt.", tools=[Pick], handlers={"pick": broken})
    model = ScriptedModel(agent=["Hi", calls(("pick", {"colour": "red"})), "Which colour, again?"])
    chat = Chat(Agent("Shop", flows=[Flow("shop", nodes=[shop], on=[on_message()])]), model)
    await chat.say("hi")
    failed = await chat.say("red")
    assert failed.text.startswith("I'm sorry")  # the handler's bug fails the turn, as before
    again = await chat.say("red please")
    assert again.text == "Which colour, again?"
    history = model.calls[2].request.messages  # every provider refuses a tool call left unanswered
    [call_message] = [m for m in history if m.tool_calls]
    answer = history[history.index(call_message) + 1]
    assert answer.role == "tool" and answer.tool_call_id == call_message.tool_calls[0].id and "error" in answer.content
