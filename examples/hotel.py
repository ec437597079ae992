"""A hotel booking written as agent steps (seed 004's step model): one prompt per stage, and
tools as the exits. Dates, then guests, then a confirmation that books the room, then the
terminal step that says goodbye and completes the session. ``terminate_session`` ends it early.

    tether chat examples/hotel.py                                  # the scripted fallback
    TETHER_MODEL=openai:gpt-4o-mini tether chat examples/hotel.py  # a real model

Without a model the agent is served by a small scripted stand-in (``fallback_model``) that reads
dates, a number of guests and yes/no from the customer's words, so the example runs offline.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from pydantic import BaseModel

from tether import Agent, Flow, agent, go, on_message, stay, terminal, tool
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.testing import FunctionModel

MAX_GUESTS = 8


@tool
def set_dates(check_in: str, check_out: str) -> Any:
    """Record the stay's dates (YYYY-MM-DD), once the customer gave both."""
    try:
        start, until = date.fromisoformat(check_in), date.fromisoformat(check_out)
    except ValueError:
        return stay("Dates must look like 2026-05-01. Ask again.")
    if until <= start:
        return stay("The check-out date must come after the check-in date. Ask again.")
    return go("guests").with_state({"check_in": check_in, "check_out": check_out, "nights": (until - start).days})


@tool
def set_guests(guests: int) -> Any:
    """Record how many guests will stay."""
    if not 1 <= guests <= MAX_GUESTS:
        return stay(f"We take 1 to {MAX_GUESTS} guests in one booking. Ask again.")
    return go("confirm").with_state({"guests": guests})


@tool
def book_room(check_in: str, check_out: str, guests: int) -> dict[str, str]:
    """Book the room (the hotel's booking system)."""
    return {"reference": f"HTL-{check_in.replace('-', '')}-{guests}"}


ask_dates = agent(
    "dates",
    prompt="You book rooms at the Harbour Hotel. Ask for the check-in and check-out dates, and call "
           "set_dates with both as YYYY-MM-DD. Call terminate_session if the customer wants to stop.",
    tools=[set_dates, "terminate_session"],
)
ask_guests = agent(
    "guests",
    prompt="The stay is {check_in} to {check_out} ({nights} nights). Ask how many guests will stay and call "
           "set_guests. Call terminate_session if the customer wants to stop.",
    tools=[set_guests, "terminate_session"],
)


class ConfirmBooking(BaseModel):
    """The customer's answer to the booking summary."""

    confirmed: bool


async def confirm_booking(args: dict[str, Any], ctx: Any) -> Any:
    """The customer answered the summary: book on yes, start over on no."""
    if not args.get("confirmed"):
        return go("dates").with_prompt("The customer wants other dates. Ask for the new check-in and check-out "
                                       "dates and call set_dates.")
    state = ctx.state
    booked = await ctx.tool("book_room", check_in=state["check_in"], check_out=state["check_out"],
                            guests=state["guests"])
    return go("goodbye").with_state({"reference": booked["reference"]}).with_prompt(
        f"The room is booked, reference {booked['reference']}. Thank the customer, give the reference, and say "
        "goodbye.")


confirm = agent(
    "confirm",
    prompt="Read back the booking: {check_in} to {check_out}, {guests} guest(s). Ask the customer to confirm, "
           "then call confirm_booking with confirmed true or false.",
    tools=[ConfirmBooking, "terminate_session"],
    handlers={"confirm_booking": confirm_booking},
)
goodbye = terminal("goodbye")

booking = Flow("booking", description="Book a room: dates, guests, confirmation", start=ask_dates,
               nodes=[ask_dates, ask_guests, confirm, goodbye], on=[on_message()])


# ------------------------------------------------------------------ the scripted stand-in

ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
QUESTIONS = {
    "dates": "Welcome to the Harbour Hotel! Which dates would you like (check-in and check-out, YYYY-MM-DD)?",
    "guests": "How many guests will stay?",
}


def _step_of(request: ModelRequest) -> str:
    names = {spec.name for spec in request.tools}
    if "set_dates" in names:
        return "dates"
    if "set_guests" in names:
        return "guests"
    if "confirm_booking" in names:
        return "confirm"
    return "goodbye"


def _scripted(request: ModelRequest) -> ModelResponse:
    """Stand in for a model: read what the customer said, call the step's tool or ask its question."""
    last = request.messages[-1] if request.messages else None
    step = _step_of(request)
    if step == "goodbye":
        return ModelResponse(text=request.system.split(". ", 1)[0].replace("The room is booked", "Your room is booked")
                             + ". Thank you, goodbye!" if "booked" in request.system else
                             "Understood, I've closed this conversation. Goodbye!", finish_reason="stop")
    if last is None or last.role != "user":  # a tool message came back: ask again, with its feedback
        feedback = last.content if last is not None and last.role == "tool" else ""
        return ModelResponse(text=f"{feedback} {QUESTIONS.get(step, '')}".strip(), finish_reason="stop")
    words = last.content.lower()

    def call(name: str, **arguments: Any) -> ModelResponse:
        return ModelResponse(tool_calls=(ToolCall("call_1", name, arguments),), finish_reason="tool_calls")

    if re.search(r"\b(bye|stop|cancel|quit)\b", words):
        return call("terminate_session")
    if step == "dates" and len(found := ISO_DATE.findall(words)) >= 2:
        return call("set_dates", check_in=found[0], check_out=found[1])
    if step == "guests" and (number := re.search(r"\b(\d+)\b", words)):
        return call("set_guests", guests=int(number.group(1)))
    if step == "confirm" and re.search(r"\b(yes|yeah|confirm|ok)\b", words):
        return call("confirm_booking", confirmed=True)
    if step == "confirm" and re.search(r"\b(no|change)\b", words):
        return call("confirm_booking", confirmed=False)
    if step == "confirm":
        return ModelResponse(text=request.system.replace("Read back the booking: ", "Your booking: ").split(". Ask")[0]
                             + ". Shall I book it (yes/no)?", finish_reason="stop")
    return ModelResponse(text=QUESTIONS[step], finish_reason="stop")


fallback_model = FunctionModel(_scripted, name="scripted:hotel")

agent = Agent("Harbour", tools=[book_room], flows=[booking], model=fallback_model, idle="silent")
