"""The pizza example: a list field filled by a list resolver, a confirmation, a fresh second order."""

from __future__ import annotations

from types import ModuleType

import pytest

from example_modules import load_example
from tether import Message, Start, TurnResult
from tether.engine.core.session import Session
from tether.testing import FakeClock, ScriptedModel, SequentialIds, StrictModel


@pytest.fixture(scope="module")
def pizza() -> ModuleType:
    return load_example("pizza")


class Chat:
    def __init__(self, pizza: ModuleType, model: ScriptedModel | StrictModel | None = None) -> None:
        self.agent = pizza.agent if model is None else pizza.agent.with_model(model)
        self.session: Session | None = None

    async def say(self, text: str) -> TurnResult:
        result = await self.agent.turn(self.session, Message(text))
        self.session = result.session
        return result

    def data(self) -> dict[str, object]:
        assert self.session is not None
        return dict(self.session.data)


ASK_BOTH = ("Small, medium or large? Which toppings? We have cheese, ham, mushrooms, olives, onions, pepperoni, "
            "pineapple, peppers and green peppers.")


async def test_pia_speaks_first_on_the_start_event(pizza: ModuleType) -> None:
    result = await pizza.agent.turn(None, Start("welcome", key="chat"))
    assert result.text == ("Hi, I'm Pia from Pia's Pizza. A small pizza is 8 EUR, a medium 10 and a large 12, plus "
                           "1.50 EUR a topping. Tell me the size and toppings you'd like.")


async def test_one_message_fills_the_size_and_the_list_of_toppings_with_no_model(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    asked = await chat.say("a large one with ham, olives and green peppers please")
    assert asked.text == "A large pizza with ham, olives and green peppers. Shall I place the order? (yes/no)"
    assert chat.data()["toppings"] == ["ham", "olives", "green peppers"]  # not also "peppers"
    placed = await chat.say("yes")
    assert placed.text == ("Order P-132 is in the oven: a large pizza with ham, olives and green peppers, "
                           "16.50 EUR. Ready in 20 minutes.")
    assert placed.status == "ended" and asked.llm_calls == placed.llm_calls == 0


async def test_only_the_missing_field_is_asked_again(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    assert (await chat.say("hello")).text == ASK_BOTH
    assert (await chat.say("medium")).text.startswith("Which toppings?")
    assert (await chat.say("anchovies")).text.startswith("Which toppings?")  # not on the menu: still missing
    confirm = await chat.say("mushrooms and onions")
    assert confirm.text == "A medium pizza with mushrooms and onions. Shall I place the order? (yes/no)"


async def test_no_places_nothing_and_an_unclear_answer_asks_again(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    confirm = await chat.say("small pepperoni")
    assert (await chat.say("hmm")).text == confirm.text
    cancelled = await chat.say("no")
    assert cancelled.text == "No problem, I haven't placed anything. Tell me what you'd like to start again."
    assert not [e for e in cancelled.events if e.type == "tool_call"]


@pytest.mark.parametrize("said", ["take off the onions", "i don't want onions", "get rid of the onions"])
async def test_a_topping_taken_off_at_the_confirmation_leaves_the_others(pizza: ModuleType, said: str) -> None:
    chat = Chat(pizza)
    await chat.say("large ham and onions")
    assert (await chat.say(said)).text.endswith("A large pizza with ham. Shall I place the order? (yes/no)")


async def test_a_topping_the_customer_is_allergic_to_is_not_ordered(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    asked = await chat.say("large please, i'm allergic to mushrooms")
    assert asked.text.startswith("Which toppings?") and "toppings" not in chat.data()


async def test_a_second_order_asks_afresh(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    await chat.say("large ham")
    await chat.say("yes")
    again = await chat.say("and one more")
    assert again.text == ASK_BOTH  # the first order's size and toppings are not reused
    assert "toppings" not in chat.data() and "size" not in chat.data()


async def test_with_a_model_the_first_message_is_extracted(pizza: ModuleType) -> None:
    # "a big one" names no size the resolvers know: the extraction call reads it
    model = ScriptedModel(extract=[{"size": "large", "toppings": ["ham", "Pineapple"]}])
    confirm = await Chat(pizza, model).say("a big hawaiian one")
    assert confirm.text == "A large pizza with ham and pineapple. Shall I place the order? (yes/no)"
    assert confirm.llm_calls == 1 and model.unused() == {}


async def test_with_a_model_each_answer_is_one_extraction_call(pizza: ModuleType) -> None:
    model = ScriptedModel(extract=[{"size": None, "toppings": None},
                                   {"size": "large", "toppings": ["ham", "pineapple"]}])
    chat = Chat(pizza, model)
    assert (await chat.say("hello")).text == ASK_BOTH
    confirm = await chat.say("a big hawaiian one")
    assert confirm.text == "A large pizza with ham and pineapple. Shall I place the order? (yes/no)"
    assert confirm.llm_calls == 1 and model.unused() == {}


async def test_an_empty_list_from_the_model_is_a_plain_pizza_read_back_first(pizza: ModuleType) -> None:
    # the toppings field allows an empty list ("no toppings"): it is an answer, and the order is read
    # back before anything is placed
    model = ScriptedModel(extract=[{"size": "small", "toppings": []}])
    chat = Chat(pizza, model)
    asked = await chat.say("a small one, hold everything on top")
    assert asked.text == "A small pizza with no toppings. Shall I place the order? (yes/no)"
    assert chat.data()["size"] == "small" and chat.data()["toppings"] == []


async def test_no_idea_gets_a_suggestion_not_a_hand_off(pizza: ModuleType) -> None:
    bot = pizza.agent.with_clock(FakeClock(), SequentialIds("s"))
    asked = await bot.turn(None, Message("I want a pizza"))
    suggested = await bot.turn(asked.session, Message("no idea"))
    assert suggested.text.startswith("Most people take a large with ham and mushrooms.\n\nSmall, medium or large?")
    assert suggested.status != "handoff" and suggested.handoff is None


async def test_answers_not_understood_drop_the_order_instead_of_a_hand_off(pizza: ModuleType) -> None:
    # Pia has no person to hand over to: she said one would take over, then went quiet
    chat = Chat(pizza)
    await chat.say("large ham")
    for said in ("how much is it", "is that with tax?"):
        assert (await chat.say(said)).text == "A large pizza with ham. Shall I place the order? (yes/no)"
    gave_up = await chat.say("can I pay by card")
    assert gave_up.text == ("Sorry, I'm not following. I haven't placed anything: tell me the size and toppings "
                            "you'd like to start again.")
    assert gave_up.handoff is None and [e.reason for e in gave_up.ended] == ["gave-up"]
    assert any(line.code == "escalated" for line in gave_up.outcomes)
    again = await chat.say("medium olives")
    assert again.text == "A medium pizza with olives. Shall I place the order? (yes/no)"


@pytest.mark.parametrize(("said", "read_back"), [("can I change to medium?", "A medium pizza with ham"),
                                                 ("medium?", "A medium pizza with ham"),
                                                 ("could you add olives?", "A large pizza with ham and olives"),
                                                 ("and olives too?", "A large pizza with ham and olives")])
async def test_a_question_that_asks_for_a_change_makes_it(pizza: ModuleType, said: str, read_back: str) -> None:
    chat = Chat(pizza)
    await chat.say("large ham")
    assert (await chat.say(said)).text.endswith(f"{read_back}. Shall I place the order? (yes/no)")


@pytest.mark.parametrize("said", ["ok stop", "ok wait"])
async def test_a_yes_held_back_at_the_confirmation_places_nothing(pizza: ModuleType, said: str) -> None:
    chat = Chat(pizza)
    confirm = await chat.say("a large ham pizza")
    held = await chat.say(said)
    assert held.text == confirm.text == "A large pizza with ham. Shall I place the order? (yes/no)"
    assert not held.ended and not [e for e in held.events if e.type == "tool_call"]


@pytest.mark.parametrize(("said", "read_back"), [
    ("two large pizzas with pepperoni", "2 large pizzas with pepperoni"),
    ("3 medium ham and mushroom pizzas please", "3 medium pizzas with ham and mushrooms"),
    ("a couple of large pizzas with ham", "2 large pizzas with ham"),
    ("a large pizza with ham", "A large pizza with ham"),
    ("two large thin crust pizzas with ham", "2 large pizzas with ham"),
    ("2 x large ham pizzas", "2 large pizzas with ham")])
async def test_how_many_pizzas_is_read_back_and_priced(pizza: ModuleType, said: str, read_back: str) -> None:
    chat = Chat(pizza)
    assert (await chat.say(said)).text == f"{read_back}. Shall I place the order? (yes/no)"
    placed = await chat.say("yes")
    quantity = int(read_back[0]) if read_back[0].isdigit() else 1
    price = (pizza.PRICES[str(chat.data()["size"])] + pizza.PER_TOPPING * len(chat.data()["toppings"])) * quantity
    assert placed.text.endswith(f": {read_back[0].lower()}{read_back[1:]}, {price:.2f} EUR. Ready in 20 minutes.")


async def test_the_quantity_changes_at_the_confirmation_and_people_are_not_pizzas(pizza: ModuleType) -> None:
    chat = Chat(pizza)
    await chat.say("a large ham pizza")  # no number said: one pizza, a value a correction may change
    more = await chat.say("ok wait, make it two pizzas")
    assert more.text == ("OK, I've changed the quantity to 2.\n\n"
                         "2 large pizzas with ham. Shall I place the order? (yes/no)")
    one = await chat.say("actually make it one pizza")
    assert one.text.endswith("A large pizza with ham. Shall I place the order? (yes/no)")
    people = Chat(pizza)
    asked = await people.say("we are two hungry people who love pizzas, large with ham")
    assert asked.text == "A large pizza with ham. Shall I place the order? (yes/no)"


async def test_with_a_model_a_message_that_names_no_order_starts_none(pizza: ModuleType) -> None:
    """Pizza's flow is its catch-all: every message starts an order. The first extract call offers
    ``_intent``, so a message that is no order at all is not asked for a size."""
    model = StrictModel()
    model.means("a large pepperoni please", values={"size": "large", "toppings": ["pepperoni"]})
    model.means("yes", values={"confirm": "yes"})
    model.means("oh wait, forget it, cancel the order", intent="cancel")
    model.means("hey, how are you today?", intent="chitchat")
    model.means("that'll do for tonight, cheers", intent="completed")
    chat = Chat(pizza, model)
    await chat.say("a large pepperoni please")
    assert (await chat.say("yes")).text.startswith("Order P-")
    cancelled = await chat.say("oh wait, forget it, cancel the order")
    assert cancelled.text == "There's nothing in progress to cancel. Is there anything else I can help with?"
    chatted = await Chat(pizza, model).say("hey, how are you today?")
    assert chatted.text == f"I'm doing well, thanks for asking!\n\n{ASK_BOTH}"
    closed = await chat.say("that'll do for tonight, cheers")
    assert closed.text == "Glad I could help. Goodbye!" and model.unsaid() == []
