"""The seed 000 shipping flow: collect an address, book the shipment through a tool in an action
gated by ``output_schema``, then confirm in a reply that resets the context to a summary first.

    tether chat examples/shipping.py
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tether import Agent, Flow, action, collect, end, goto, on_message, pattern, reply, tool

# Deterministic first: a street address is a house number, a street name and a street type ("1
# Main St", "22 Acacia Way", "123 W 42nd St", "350 Fifth Avenue Apt 4B"), a number and a street type
# first ("12 Rue de Rivoli"), a street of one word ("1585 Broadway", "10 The Green") or a PO box, with
# the flat before it and the town, state and postcode after it ("Flat 2, 10 High Street, Bristol",
# "..., Washington, DC 20500"). A number alone is not one: "I have 2 packages to
# send" is asked for the address, not booked to "2 packages to send". When it resolves, no
# extraction call is needed; otherwise the model extracts (if one is configured).
STREET_TYPES = ("street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|court|ct|terrace|square|sq|crescent|"
                "highway|hwy|parkway|pkwy|mews|gardens|grove|close|place|pl|way|loop|row|walk|hill|park|plaza|circle|"
                "cir|trail|alley|quay|wharf|esplanade|embankment|rise|vale|view|green|parade|broadway")
ADDRESS = (r"(?i)\b((?:(?:flat|apt|apartment|unit|suite) \w+,? )?(?:po box \d+|\d+(?:-\d+)?[a-z]?"
           r"(?:(?: (?!(?:on|by|in|to|for|of|at|and|or|my|your|a|an|is|it)\b)(?:[a-z][\w'.-]*|\d+(?:st|nd|rd|th)))"
           rf"{{1,4}} (?:{STREET_TYPES})\b(?:\.(?=,))?(?: (?:n|s|e|w|ne|nw|se|sw)\b)?"
           r"| (?:rue|via|calle|avenida|avenue|boulevard|place|chemin)(?: (?!(?:please|now|thanks?|on|by|for|and)\b)"
           r"[a-z][\w'.-]*){1,4}"
           r"| (?:broadway|kingsway|the (?:green|strand|mall|parade|crescent|avenue|drive|close|square))\b))"
           r"(?: (?:apt|apartment|unit|suite|ste|flat|#)\.? ?\w+)?"
           r"(?:, ?(?!(?:it|its|it's|thanks?|thank|please|and|cheers|can|could|would|will|on|by|for)\b)[a-z][\w.'-]*"
           r"(?: (?!(?:please|now|thanks?|thank|cheers|asap|today|tomorrow|on|by|for|can|could|and|it)\b)[\w.'-]*"
           r"[\w.])*){0,3})")


class Address(BaseModel):
    address: str = Field(min_length=3, description="The full street address")


class Booked(BaseModel):
    tracking_id: str = Field(min_length=1)


@tool
async def book_shipment(address: str) -> dict[str, str]:
    """Book a shipment to the given address."""
    return {"id": f"trk_{len(address)}"}


get_address = collect(
    "get_address",
    schema=Address,
    required=["address"],
    max_turns=5,
    verbatim_fields=["address"],
    resolvers=[pattern("address", ADDRESS)],
    ask=lambda missing, state: f"Which {' and '.join(missing)} should the shipment go to?",
    on_complete=lambda data, state: goto("book"),
)


@action("book", uses=["book_shipment"], output_schema=Booked)
async def book(state: dict[str, Any], ctx: Any) -> Any:
    receipt = await ctx.tool("book_shipment", address=state["address"])
    return goto("done", data={"tracking_id": receipt["id"]})


done = reply(
    "done",
    context="reset_with_summary",
    instructions="Confirm the shipment was booked with its tracking id, then end.",
    fallback="Booked! Your shipment to ${address} has tracking id ${tracking_id}.",
    next=lambda turn, state: end("booked"),
)

ship = Flow(
    "ship",
    description="Collect an address, book the shipment, then confirm",
    start=get_address,
    nodes=[get_address, book, done],
    max_oscillations=2,
    on=[on_message(repeat="always")],  # every message no run takes may book another shipment
)

agent = Agent(
    "Shippy",
    instructions="You book shipments for customers.",
    tools=[book_shipment],
    flows=[ship],
)
