"""The booking conversation the cost benches measure (no model: every turn is deterministic).

A cycle is four messages: "book a table" (the catch-all starts a booking run, which asks the
day), a day (asks the party size), a party size (asks the name), a name (the ``reserve`` action
books through a journaled tool, the confirmation is said, the flow ends). Turn ``4k + i`` is the
same kind of turn as turn ``i``, so turns 197-200 can be compared with turns 1-4.

Shared by ``bench/runtime_turns.py`` (time) and ``bench/store_writes.py`` (writes and bytes).
"""

from __future__ import annotations

from typing import Any

from tether import Agent, Field, Flow, Message, action, collect, end, goto, on_message, pattern, reply, tool

__all__ = ["ASK", "CONFIRMATION", "CYCLE", "PATTERNS", "booking_agent", "booking_message", "reference"]

CYCLE = ("I'd like to book a table please", "on friday evening", "we are 4 people", "my name is Ada")
# what the collect node reads from a message (case-insensitive), asks for, and the confirmation
# (``bench/langgraph_turns.py`` builds the same conversation from these)
PATTERNS = {"day": r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
            "party": r"\b(\d{1,2})\b", "name": r"\bname is (\w+)"}
ASK = {"day": "Which day would you like?", "party": "For how many people?", "name": "Under which name?"}
CONFIRMATION = "Booked for ${party} on ${day} under ${name}: reference ${ref}."


def reference(day: str, party: str, name: str) -> str:
    """The reference of a reservation."""
    return f"R-{day[:3].upper()}-{party}-{name[:1]}"


@tool
async def reserve(day: str, party: str, name: str) -> dict[str, str]:
    """Reserve a table."""
    return {"ref": reference(day, party, name)}


def booking_agent() -> Agent:
    """The booking agent: one flow (collect, action with a tool, confirmation)."""
    details = collect(
        "details", fields=["day", "party", "name"],
        ask=ASK, resolvers=[pattern(field, regex) for field, regex in PATTERNS.items()],
        on_complete=lambda data, state: goto("reserve"))

    @action("reserve")
    async def book(state: dict[str, Any], ctx: Any) -> Any:
        receipt = await ctx.tool("reserve", day=state["day"], party=state["party"], name=state["name"])
        return goto("confirm", data={"ref": receipt["ref"]})

    confirm = reply("confirm", response=CONFIRMATION, next=end("booked"))
    flow = Flow("booking", start=details, nodes=[details, book, confirm], on=[on_message(repeat="always")],
                clear_on_start=["day", "party", "name", "ref"])
    return Agent("Booker", fields={"day": Field(), "party": Field(), "name": Field(), "ref": Field()},
                 tools=[reserve], flows=[flow], idle="silent")


def booking_message(turn: int, conversation: int = 0) -> Message:
    """The message of ``turn`` (from 1) of the booking conversation."""
    return Message(CYCLE[(turn - 1) % len(CYCLE)], id=f"c{conversation}m{turn}")
