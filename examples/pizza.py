"""Pia takes pizza orders: a size, a list of toppings, a yes/no confirmation, then the order.

It shows a ``list`` field (``toppings``) filled by a list resolver (``enum_list``: every topping
the message names, no model needed) that may be empty ("no toppings": a plain pizza), an ``enum``
field, an optional field read only by patterns (``quantity``: "two large pizzas", "a couple of
pizzas"; never asked, one when not said), a confirmation before anything is placed, and a flow
that clears its fields when it starts again, so a second pizza is asked afresh.

    tether chat examples/pizza.py
"""

from __future__ import annotations

from typing import Any

from tether import (
    Agent,
    Field,
    Flow,
    action,
    collect,
    end,
    enum_check,
    enum_list,
    goto,
    on_event,
    on_message,
    pattern,
    reply,
    router,
    tool,
)

SIZES = ("small", "medium", "large")
TOPPINGS = ("cheese", "ham", "mushrooms", "olives", "onions", "pepperoni", "pineapple", "peppers", "green peppers")
PRICES = {"small": 8, "medium": 10, "large": 12}
PER_TOPPING = 1.5
# said in the greeting (with no model nothing else answers "how much is a large?") and known to the model
PRICE_LIST = (f"A small pizza is {PRICES['small']} EUR, a medium {PRICES['medium']} and a large {PRICES['large']}, "
              f"plus {PER_TOPPING:.2f} EUR a topping.")


COUNT_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# "two large pizzas with ham", "3 pizzas", "just one pizza": how many of the one pizza the order is
# for (one when not said); between the number and "pizza" up to four words that say what the pizza
# is ("two big thin crust pizzas"), never who eats it ("two hungry people who love pizzas")
_NOT_A_PIZZA = r"people|persons?|friends?|guys|kids|children|adults|us|who|love|loves|like|likes|want|wants|eat|" \
    r"need|needs|hungry|toppings?|slices?|times?|days?|minutes?|euros?|eur"
_PIZZA_WORDS = rf"(?:(?!(?:{_NOT_A_PIZZA})\b)[a-z-]+\s+|x\s+){{0,4}}"
QUANTITY = [pattern("quantity", rf"\b(?:{n}|{word}{'|a couple of|a pair of' if n == 2 else ''}"
                    rf"{'|a single|just a|only a' if n == 1 else ''})\s+{_PIZZA_WORDS}pizzas?\b", value=str(n))
            for n, word in enumerate(COUNT_WORDS, start=1)]


def listed(items: list[str]) -> str:
    """``["ham", "olives", "onions"]`` -> ``"ham, olives and onions"``; ``[]`` -> ``"no toppings"``."""
    if not items:
        return "no toppings"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@tool
async def place_order(size: str, toppings: list[str], quantity: int = 1) -> dict[str, Any]:
    """Send the order to the kitchen; returns its number and price."""
    price = (PRICES[size] + PER_TOPPING * len(toppings)) * quantity
    return {"number": f"P-{100 + len(toppings) * 10 + SIZES.index(size)}", "price": f"{price:.2f}"}


def pizzas(state: dict[str, Any]) -> str:
    """``a large pizza with ham``, ``2 large pizzas with ham``."""
    quantity = int(state.get("quantity") or 1)
    kind = f"{state['size']} pizza with {listed(state['toppings'])}"
    return f"a {kind}" if quantity == 1 else f"{quantity} {kind.replace(' pizza ', ' pizzas ', 1)}"


def confirm_question(missing: list[str], state: dict[str, Any]) -> str:
    said = pizzas(state)
    return f"{said[0].upper()}{said[1:]}. Shall I place the order? (yes/no)"


@action("place", uses=["place_order"], targets=["placed"])
async def place(state: dict[str, Any], ctx: Any) -> Any:
    receipt = await ctx.tool("place_order", size=state["size"], toppings=list(state["toppings"]),
                             quantity=int(state.get("quantity") or 1))
    return goto("placed", data={"order": receipt["number"], "price": receipt["price"], "pizza": pizzas(state)})


welcome = Flow(
    "welcome",
    "Greet the customer when the chat opens",
    nodes=[reply("hello", next=end("greeted"),
                 response=f"Hi, I'm Pia from Pia's Pizza. {PRICE_LIST} Tell me the size and toppings you'd like.")],
    on=[on_event("start")],  # `tether chat` sends the start event: Pia speaks first
)

order = Flow(
    "order",
    "Order a pizza",
    nodes=[
        collect("choose", fields=["size", "toppings", "quantity"], required=["size", "toppings"],
                ask={"size": "Small, medium or large?",
                     "toppings": f"Which toppings? We have {listed(list(TOPPINGS))}."},
                resolvers=[enum_check("size", SIZES), enum_list("toppings", TOPPINGS), *QUANTITY], max_turns=6,
                # one pizza when none was said: a number said at the confirmation then corrects it
                on_complete=lambda data, state: goto("confirm", data={"quantity": state.get("quantity") or 1}),
                targets=["confirm"]),
        collect("confirm", fields=["confirm"], ask=confirm_question,
                resolvers=[enum_check("confirm", ["yes", "no"])], max_turns=3),
        router("confirmed", when="state.confirm == 'yes'", then="place", else_="cancelled"),
        place,
        reply("placed", response="Order ${order} is in the oven: ${pizza}, ${price} EUR. Ready in 20 minutes.",
              next=end("placed")),
        reply("cancelled", response="No problem, I haven't placed anything. Tell me what you'd like to start again.",
              next=end("cancelled")),
        # "no idea": a suggestion, then the question again (Pia has no person to hand over to)
        reply("suggest", response="Most people take a large with ham and mushrooms.", next=goto("choose")),
        # answers not understood again and again: the order is dropped, not handed to a person
        reply("gave_up", response="Sorry, I'm not following. I haven't placed anything: tell me the size and "
                                  "toppings you'd like to start again.", next=end("gave-up")),
    ],
    on_skip="suggest",
    on_escalate="gave_up",  # Pia has no person to hand over to
    on=[on_message(repeat="always")],  # the catch-all: any message starts an order
    clear_on_start=["size", "toppings", "quantity", "confirm"],
)

agent = Agent(
    "Pia",
    persona="A cheerful order taker for Pia's Pizza.",
    goal="Take one pizza order at a time (one or more of the same pizza): size, toppings, a confirmation.",
    knowledge=PRICE_LIST,
    fields={
        "size": Field("enum", enum=SIZES, description="The pizza size"),
        # "no toppings" is an answer: a plain pizza
        "toppings": Field("list", items="enum", enum=TOPPINGS, description="The toppings the customer wants",
                          allow_empty=True),
        "quantity": Field("integer", description="How many of this pizza (null when the customer does not say)",
                          extract="asked"),
        "confirm": Field("enum", enum=("yes", "no"), description="Whether the customer confirmed the order",
                         extract="asked"),
    },
    tools=[place_order],
    flows=[welcome, order],
)
