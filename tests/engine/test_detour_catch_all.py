"""A detour that ends gives the floor back to the task it interrupted, and that task asks its
question again, also when the task is a catch-all flow's (a pizza order that any message
starts): only a catch-all's first question with nothing collected is an opening, not a task."""

from __future__ import annotations

from tether import Agent, Field, Flow, Message, collect, end, enum_check, on_message, reply
from tether.testing import FakeClock, SequentialIds


def agent() -> Agent:
    order = Flow("order", "Order a pizza", nodes=[
        collect("size", fields=["size"], ask="Small or large?", resolvers=[enum_check("size", ["small", "large"])]),
        collect("confirm", fields=["confirm"], ask="A ${size} pizza. Shall I place it?",
                resolvers=[enum_check("confirm", ["yes", "no"])]),
        reply("placed", response="Placed.", next=end("placed"))],
        on=[on_message(repeat="always")])
    prices = Flow("prices", "Prices", nodes=[reply("list", response="Small 8, large 12.", next=end("told"))],
                  on=[on_message("how much", repeat="always")])
    fields = {"size": Field("enum", enum=("small", "large")), "confirm": Field("enum", enum=("yes", "no"))}
    return Agent("Pia", fields=fields, flows=[prices, order], idle="silent").with_clock(FakeClock(), SequentialIds("s"))


async def test_a_catch_all_task_asks_again_after_a_detour() -> None:
    bot = agent()
    asked = await bot.turn(None, Message("a large one"))
    assert asked.text == "A large pizza. Shall I place it?"
    detour = await bot.turn(asked.session, Message("how much is a small?"))
    assert detour.text == "Small 8, large 12.\n\nNow, back to where we were.\n\nA large pizza. Shall I place it?"
    placed = await bot.turn(detour.session, Message("yes"))
    assert placed.text == "Placed."


async def test_a_catch_all_opening_is_not_asked_again_after_a_detour() -> None:
    bot = agent()
    opening = await bot.turn(None, Message("hello"))
    assert opening.text == "Small or large?"
    detour = await bot.turn(opening.session, Message("how much is a large?"))
    assert detour.text == "Small 8, large 12."  # nothing was under way: no "back to where we were"
