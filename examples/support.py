"""A multi-flow support agent in the turn-pipeline style.

Deterministic first: with no model configured it still holds a useful conversation (fixed
questions, tier-0 resolvers, engine-rendered replies, a catch-all menu that routes by keywords).
With a model (``TETHER_MODEL=openai:gpt-4o-mini`` or ``--model``) the same flows are routed by the
understand call and extraction reads free text.

    tether chat examples/support.py

Flows:
- ``menu``: the catch-all; asks what the customer needs and chains into the right flow.
- ``orders``: collects an order number (a regex resolver), looks it up in a bundled SQLite table.
- ``address``: changes the delivery address of an order that has not shipped yet, after an
  explicit yes/no confirmation.
- ``refund``: collects an order that exists and was not refunded already, and a reason, opens a
  refund request (idempotent on ``ctx.key``).
- ``human``: hands the conversation to a person.
- ``still_there``: a follow-up ("still there?") when the customer goes quiet for 10 minutes.

With a model, the model sees a short window: sixteen messages at most, the older ones
folded into a running summary before the window slides, so every call costs about the same
however long the conversation runs (``bench/tokens.py`` measures it).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from tether import (
    NEXT,
    Agent,
    Compaction,
    Field,
    Flow,
    action,
    collect,
    end,
    enum_check,
    goto,
    handoff,
    on_message,
    on_silence,
    pattern,
    reply,
    router,
    start_flow,
    whole_message,
)

ORDERS_SQL = Path(__file__).with_name("data") / "orders.sql"
# "A-1001", "a1001" and "A 1001" are one order number, spelled A-1001
# a letter that starts a word: the "s" of "it's 1002" is not one
ORDER_NUMBER = r"(?<![\w'’])([A-Z])[- ]?(\d{4})\b"
# said when the customer does not know their order number
FIND_ORDER_NUMBER = "You'll find it in your order confirmation email. If you can't find it, say \"talk to a person\"."
# a message that is only an order number, or a question about one: "A-1002", "and A-1002?", "what about
# a1002", "where is A-1002?", "what's the status of A-1002 please?" (read at the menu only)
BARE_ORDER_NUMBER = (r"^\W*(?:(?:and|what about|how about|order|where(?:'s| is)|"
                     r"(?:can you tell me )?(?:what(?:'s| is) )?the status of|status of)\W+)*[A-Z][- ]?\d{4}\W*"
                     r"(?:please\W*)?$")
# "... to 5 Main Street, Springfield": a house number, then words, up to "please", "for", "thanks"
NEW_ADDRESS = r"\bto\s+(\d+\w*(?:[ ,]+(?!(?:please|for|thanks?|and)\b)[A-Za-z][\w.'-]*)+)"
# the reasons the knowledge base names, as said in "a refund for A-1003, it arrived broken"
REFUND_REASON = (r"(?<!not )(?<!n't )(?<!nothing )(?<!nothing's )(?<!nothings )"  # "it isn't damaged" is no reason
                 r"\b(never (?:arrived|came)|arrived (?:broken|damaged|late)|(?:is|was|came) (?:broken|damaged)"
                 r"|broken|damaged|wrong (?:item|size|colou?r)|not as described|charged twice)\b")


def order_number() -> Any:
    """The order number resolver: any spelling of a number, as A-1001."""
    return pattern("order_number", ORDER_NUMBER, value=r"\1-\2", case="upper")


# With no model, the menu routes on one keyword of the customer's answer.
TOPICS = {"order": "orders", "address": "address", "refund": "refund", "person": "human"}


def orders_db() -> sqlite3.Connection:
    """The bundled order table (an in-memory SQLite database built from data/orders.sql)."""
    connection = sqlite3.connect(":memory:")
    connection.executescript(ORDERS_SQL.read_text())
    return connection


DB = orders_db()


# ---------------------------------------------------------------------------------------------- menu

menu = Flow(
    "menu",
    "Greets the customer and finds out what they need",
    nodes=[
        collect(
            "topic",
            fields=["topic"],
            question=("Hi, I'm Sam from Acme support. I can check an order, change an address, start a refund, "
                      "or get you a person. What would you like to do?"),
            # asked again (after small talk, an answer it could not read): no second greeting
            ask=("What would you like to do? I can check an order, change an address, start a refund, "
                 "or get you a person."),
            # a bare order number ("A-1001", "and A-1002?") is an order question: the orders flow reads it
            resolvers=[enum_check("topic", list(TOPICS)), pattern("topic", BARE_ORDER_NUMBER, value="order")],
            max_turns=3,
            on_complete=lambda data, state: start_flow(TOPICS[data["topic"]]),
            targets=[start_flow(flow) for flow in TOPICS.values()],  # where on_complete goes: drawn, checked
        ),
    ],
    on=[on_message(repeat="always")],
    clear_on_start=["topic"],
)

# ---------------------------------------------------------------------------------------------- orders


def lookup(state: dict[str, Any], ctx: Any) -> Any:
    number = str(state["order_number"]).upper()
    row = DB.execute("SELECT status, detail FROM orders WHERE number = ?", (number,)).fetchone()
    if row is None:
        return goto("not_found")
    return goto("status", data={"order_number": number, "order_status": row[0], "order_detail": row[1]})


ask_order = collect(
    "ask_order",
    fields=["order_number"],
    ask="What's your order number? Order numbers look like A-1001.",
    resolvers=[order_number()],
    max_turns=3,
)

orders = Flow(
    "orders",
    "Order status: where an order is, when it arrives",
    nodes=[
        ask_order,
        action("lookup", lookup),
        reply("status", response="Order ${order_number} is ${order_status}: ${order_detail}.", next=end("answered")),
        reply("not_found", response="I couldn't find an order ${order_number}.",
              next=goto("ask_order", clear=["order_number"])),
        # "I don't know it": where to find it, then the question again (not a hand-off)
        reply("where_to_find", response=FIND_ORDER_NUMBER, next=goto("ask_order", clear=["order_number"])),
    ],
    on=[on_message("where is my order", "order status", "track a package", "track my order", repeat="always")],
    on_skip="where_to_find",
)

# ---------------------------------------------------------------------------------------------- address


def order_status(state: dict[str, Any]) -> tuple[str, str | None]:
    """The state's order number as stored (A-1001) and its status (None: no such order)."""
    number = str(state["order_number"]).upper()
    row = DB.execute("SELECT status FROM orders WHERE number = ?", (number,)).fetchone()
    return number, row[0] if row else None


def known_order(state: dict[str, Any], ctx: Any) -> Any:
    number, status = order_status(state)
    if status is None:
        return goto("address_unknown")
    if status != "processing":  # the knowledge: an address can change until the order ships
        return goto("address_too_late", data={"order_number": number, "order_status": status})
    return goto("new_address", data={"order_number": number})


def change_address(state: dict[str, Any], ctx: Any) -> None:
    DB.execute("UPDATE orders SET address = ? WHERE number = ?", (state["new_address"], state["order_number"]))


address = Flow(
    "address",
    "Change the delivery address of an order",
    nodes=[
        collect("address_order", fields=["order_number"],
                ask="Which order should I update? Order numbers look like A-1001.",
                resolvers=[order_number()], max_turns=3),
        action("address_check", known_order, targets=["new_address", "address_unknown", "address_too_late"]),
        collect("new_address", fields=["new_address"], ask="What's the new delivery address?",
                # the answer to the question is taken whole; an address said before it was asked
                # ("change the address of A-1002 to 5 Main Street"), by its pattern
                resolvers=[whole_message("new_address", min_length=5, questions=False),
                           pattern("new_address", NEW_ADDRESS)], max_turns=3),
        collect("confirm", fields=["confirm_address"],
                ask=lambda missing, state: (f"Change the delivery address of {state['order_number']} to "
                                            f"{state['new_address']}? Please answer yes or no."),
                resolvers=[enum_check("confirm_address", ["yes", "no"])], max_turns=3),
        router("confirmed", when="state.confirm_address == 'yes'", then="address_save", else_="address_kept"),
        action("address_save", change_address, then="address_done"),
        reply("address_done", response="Done: order ${order_number} will go to ${new_address}.", next=end("changed")),
        reply("address_kept", response="OK, I left the address of ${order_number} unchanged.", next=end("kept")),
        reply("address_unknown", response="I couldn't find an order ${order_number}.", next=end("unknown")),
        reply("address_too_late", response=("Order ${order_number} is ${order_status}, so its delivery address can't "
                                             "be changed any more."), next=end("too_late")),
        # "I don't know": help with the order number, or come back with the address (not a hand-off)
        router("address_help", when="'order_number' in state", then="address_later", else_="address_order_help"),
        reply("address_order_help", response=FIND_ORDER_NUMBER, next=goto("address_order", clear=["order_number"])),
        reply("address_later", response="No problem: come back when you have the new address.", next=end("later")),
    ],
    on_skip="address_help",
    on=[on_message("change my delivery address", "change address", "update address", "wrong address",
                   repeat="always")],
    clear_on_start=["new_address", "confirm_address"],
)

# ---------------------------------------------------------------------------------------------- refund


def refundable(state: dict[str, Any], ctx: Any) -> Any:
    number, status = order_status(state)
    if status is None:
        return goto("refund_unknown", data={"order_number": number})
    if status == "cancelled":  # cancelled orders were refunded in full
        return goto("refund_already", data={"order_number": number})
    return goto("refund_reason", data={"order_number": number})


def open_refund(state: dict[str, Any], ctx: Any) -> Any:
    # idempotent on ctx.key: replaying this turn opens no second request
    ticket = "R-" + str(int(hashlib.sha256(ctx.key.encode()).hexdigest(), 16) % 90000 + 10000)
    return goto("refund_done", data={"ticket": ticket})


refund = Flow(
    "refund",
    "Start a refund for an order",
    nodes=[
        collect("refund_order", fields=["order_number"],
                ask="Which order is the refund for? Order numbers look like A-1001.",
                resolvers=[order_number()], max_turns=3),
        action("refund_check", refundable, targets=["refund_reason", "refund_unknown", "refund_already"]),
        collect("refund_reason", fields=["refund_reason"], ask="In a few words, what went wrong?",
                # the answer to the question is taken whole; a reason said before it was asked, by its pattern
                resolvers=[whole_message("refund_reason", min_length=3, questions=False),
                           # said before the order number ("it arrived damaged, I want my money back"): kept
                           pattern("refund_reason", REFUND_REASON, case="lower", early=True)], max_turns=3),
        collect("refund_confirm", fields=["confirm_refund"],
                ask="Open a refund request for order ${order_number} (${refund_reason})? Please answer yes or no.",
                resolvers=[enum_check("confirm_refund", ["yes", "no"])], max_turns=3),
        router("refund_confirmed", when="state.confirm_refund == 'yes'", then="refund_open",
               else_="refund_kept"),
        action("refund_open", open_refund),
        reply("refund_done", response=("I've opened refund request ${ticket} for order ${order_number}. "
                                       "You'll get an email within one business day."), next=end("refund")),
        reply("refund_kept", response="OK, I haven't opened a refund for ${order_number}.", next=end("kept")),
        reply("refund_unknown", response="I couldn't find an order ${order_number}.",
              next=goto("refund_order", clear=["order_number"])),
        reply("refund_already", response="Order ${order_number} was cancelled and refunded in full already.",
              next=end("already_refunded")),
        # "I don't know": help with the step that asked, then its question again (not a hand-off)
        router("refund_help", when="'order_number' in state", then="reason_help", else_="refund_order_help"),
        reply("refund_order_help", response=FIND_ORDER_NUMBER, next=goto("refund_order", clear=["order_number"])),
        reply("reason_help", response="A few words are enough, for example \"it arrived damaged\" or \"wrong size\".",
              next=goto("refund_reason", clear=["refund_reason"])),
    ],
    on_skip="refund_help",
    on=[on_message("refund", "money back", "return an item", "return", "charged twice", "arrived damaged",
                   "arrived broken", repeat="always")],
    clear_on_start=["refund_reason", "confirm_refund"],
)

# ---------------------------------------------------------------------------------------------- human and silence

human = Flow(
    "human",
    "The customer wants to talk to a person",
    nodes=[reply("to_human", response="I'm connecting you with a person now. They'll see this conversation.",
                 next=handoff("human", "customer asked for a person"))],
    on=[on_message("talk to a person", "talk to a human", "speak to a person", "real person", "human agent",
                   "representative", "human", "operator", "talk to someone", "speak to someone",
                   repeat="always")],
)

still_there = Flow(
    "still_there",
    "A nudge when the customer goes quiet",
    nodes=[reply("nudge", response="Are you still there? Just reply whenever you're ready.", next=NEXT)],
    on=[on_silence("10m")],
)

# What the model may answer questions from (a question typed mid-form is answered, then the step
# asks again); with no model the steps' fixed texts carry the conversation.
KNOWLEDGE = """\
- Order numbers look like A-1001; they are in the order confirmation email.
- Refunds go back to the original payment method within 3-5 business days of approval. Shipping costs
  are refunded when an order never arrived or arrived damaged.
- A refund can be requested within 30 days of delivery, for any reason (damaged, wrong item, not as
  described, never arrived, charged twice).
- A delivery address can be changed free of charge until the order ships.
- Acme ships within the EU and the UK; standard delivery takes 2-4 business days."""

agent = Agent(
    "Sam",
    persona="A friendly, concise support assistant for Acme.",
    goal="Resolve order questions quickly, and hand over to a person when asked.",
    knowledge=KNOWLEDGE,
    fields={
        "topic": Field("string", enum=tuple(TOPICS), description="What the customer needs", extract="asked"),
        # a new flow asks before reusing the order number of an earlier one ("the same order A-1001?")
        "order_number": Field("string", description="An order number like A-1001", label="order", reuse="confirm"),
        # read from any message ("I moved, my new address is 22 Baker Street")
        "new_address": Field("string", description="The new delivery address", label="delivery address"),
        # one answer field per confirmation: a yes to the address change never opens a refund
        "confirm_address": Field("string", enum=("yes", "no"), description="Whether the customer confirmed the "
                                 "address change", extract="asked"),
        "confirm_refund": Field("string", enum=("yes", "no"), description="Whether the customer confirmed the "
                                "refund request", extract="asked"),
        # said up front: not asked
        "refund_reason": Field("string", description="Why the customer wants a refund", label="reason"),
    },
    flows=[menu, orders, address, refund, human, still_there],
    history_window=16,
    compaction=Compaction(max_tokens=4000, preserve_recent=4),
)
