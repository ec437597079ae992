"""A hotel booking written as agent steps (seed 004's step model): one prompt per stage, and
tools as the exits. Dates, then guests, then a confirmation that books the room, then the
terminal step that says goodbye and completes the session. ``terminate_session`` ends it early.

    tether chat examples/hotel.py                                  # the scripted fallback
    TETHER_MODEL=openai:gpt-4o-mini tether chat examples/hotel.py  # a real model

Without a model the agent is served by a small scripted stand-in (``fallback_model``) that reads
dates, a number of guests and yes/no from the customer's words, so the example runs offline. It
reads the dates people type (``read_dates``): ``2026-05-01``; ``12/03`` or ``12/03/2026`` (day
first: the 12th of March); ``12 March``, ``12th of March``, ``March 12`` (a year may follow);
``12-15 March``, ``the 12th to the 15th of March``, ``March 12-15`` (two days of one month); ``the
12th`` (of this month, else of the next) where a stay's date is said ("from the 12th", "the 12th to
the 15th", "until the 15th"; not "on the 14th" or "the 1st floor");
``today``, ``tomorrow``; ``Friday``, ``this Friday`` or ``next Friday`` (all three: the first Friday
after today, and for the check-out the first one after the check-in, so "Friday to Sunday" is two
nights). A date with no year is the next one to come; a check-out said without a year that would
be more than two months after the check-in is in the check-in's year ("5 April to 3 April" is
refused as a check-out before the check-in). A check-in given alone ("next Friday") is read
back with a question for the check-out, which may follow as a date ("Sunday") or a number of nights
("2 nights"); "actually Saturday" changes the check-in. Guests said before the guests question ("a room
for 2 people", "3 nights and 2 people") go with the dates (``set_dates`` takes them), and the
booking is read back without asking them again. At the confirmation, "no, 3 guests" (or "yes,
3 guests") reads the booking back with the new number, and other dates ("actually Friday to
Monday", "yes but make it 3 nights") read it back with them (``confirm_booking`` takes both); any
other "no" asks for other dates, after which the booking is read back with the guests given before. The
guests may come as a number, a word ("four people"), a sum ("2 adults and 1 child", "2 adults and
a baby"), the speaker and a partner beside the others ("me and 2 kids" is 3, "my wife and I and our
2 kids" 4), friends and teenagers ("I and 2 friends" is 3) or "just me"; dates and nights said at
the guests question count no guests; at the confirmation, other dates and guests may change together;
a yes or a no as customers say it ("yep", "sure", "nope"). A stay is at most 30 nights. It greets
once, and asks again without the greeting.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel, Field

from tether import Agent, Flow, agent, go, on_message, stay, terminal, tool
from tether.flow.moves import TOOL_VALIDATED
from tether.flow.yes_no import read_yes_no
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.testing import FunctionModel

MAX_GUESTS = 8
MAX_NIGHTS = 30
TOO_MANY = f"We take 1 to {MAX_GUESTS} guests in one booking."


class SetDates(BaseModel):
    """Record the stay's dates (YYYY-MM-DD), once the customer gave both."""

    check_in: str
    check_out: str
    guests: int | None = Field(default=None, description="The number of guests, when the customer has already "
                                                         "said it (\"a room for 2 people\"); null otherwise")


def checked_dates(check_in: str, check_out: str, today: date) -> dict[str, Any] | str:
    """The stay's dates as the booking keeps them, or what is wrong with them."""
    try:
        start, until = date.fromisoformat(check_in), date.fromisoformat(check_out)
    except ValueError:
        return "Dates must look like 2026-05-01."
    if start < today:
        return f"That check-in date has passed: today is {today:%A %d %B %Y}."
    if until <= start:
        return "The check-out date must come after the check-in date."
    if (until - start).days > MAX_NIGHTS:
        return f"We take stays of up to {MAX_NIGHTS} nights in one booking."
    return {"check_in": check_in, "check_out": check_out, "nights": (until - start).days}


async def set_dates(args: dict[str, Any], ctx: Any) -> Any:
    """The dates, checked; then the guests, or, when they are known (said with the dates, or before
    the customer changed the dates at the confirmation), the booking read back."""
    dates = checked_dates(args["check_in"], args["check_out"], ctx.now.date())
    if isinstance(dates, str):
        return stay(dates)
    guests = args.get("guests")
    if guests is not None and not 1 <= guests <= MAX_GUESTS:  # the dates hold: the guests are asked again
        return go("guests").with_state(dates).with_prompt(
            f"The stay is {dates['check_in']} to {dates['check_out']}. The customer asked for {guests} guests. Say: "
            f"\"{TOO_MANY}\" Ask how many guests will stay and call set_guests.")
    if guests is not None:
        dates["guests"] = guests
    return go("confirm" if guests is not None or ctx.state.get("guests") else "guests").with_state(dates)


@tool
def set_guests(guests: int) -> Any:
    """Record how many guests will stay."""
    if not 1 <= guests <= MAX_GUESTS:
        return stay(TOO_MANY)
    return go("confirm").with_state({"guests": guests})


@tool
def book_room(check_in: str, check_out: str, guests: int) -> dict[str, str]:
    """Book the room (the hotel's booking system)."""
    return {"reference": f"HTL-{check_in.replace('-', '')}-{guests}"}


ask_dates = agent(
    "dates",
    # ${today}: a model cannot read "Friday" or "tomorrow" as a date without it
    prompt="You book rooms at the Harbour Hotel. Today is ${today}. Ask for the check-in and check-out dates, and "
           "call set_dates with both as YYYY-MM-DD (and guests, when the customer has said how many will stay). "
           "Call terminate_session if the customer wants to stop.",
    tools=[SetDates, "terminate_session"],
    handlers={"set_dates": set_dates},
)
ask_guests = agent(
    "guests",
    prompt="The stay is ${check_in} to ${check_out} (${nights} nights). Ask how many guests will stay and call "
           "set_guests. Call terminate_session if the customer wants to stop.",
    tools=[set_guests, "terminate_session"],
)


class ConfirmBooking(BaseModel):
    """The customer's answer to the booking summary."""

    confirmed: bool
    guests: int | None = Field(default=None, description="The number of guests, when the customer's answer gives "
                                                         "one (\"no, 3 guests\"); null otherwise")
    check_in: str | None = Field(default=None, description="The new check-in (YYYY-MM-DD), when the customer's "
                                                           "answer gives other dates or nights; null otherwise")
    check_out: str | None = Field(default=None, description="The new check-out (YYYY-MM-DD), with check_in")


async def confirm_booking(args: dict[str, Any], ctx: Any) -> Any:
    """The customer answered the summary: with other dates or another number of guests (after a
    yes or a no), read it back with them; else book on yes, and ask for other dates on no."""
    check_in, check_out, guests = args.get("check_in"), args.get("check_out"), args.get("guests")
    changed: dict[str, Any] = {}  # never book what the answer contradicts: read it back with the changes
    said: list[str] = []
    if check_in and check_out and (check_in, check_out) != (ctx.state.get("check_in"), ctx.state.get("check_out")):
        dates = checked_dates(check_in, check_out, ctx.now.date())
        if isinstance(dates, str):
            return stay(dates)
        changed.update(dates)
        said.append(f"the dates to {check_in} to {check_out}")
    if guests is not None and guests != ctx.state.get("guests"):
        if not 1 <= guests <= MAX_GUESTS:
            return stay(TOO_MANY)
        changed["guests"] = guests
        said.append(f"to {guests} guest(s)")
    if changed:
        return stay(f"Changed {', and '.join(said)}.").with_state(changed)
    if check_in and check_out and not args.get("confirmed"):
        return stay("Those are the dates I have.")  # the dates read back, said again: not a "no"
    if not args.get("confirmed"):
        return go("dates").with_prompt(f"The customer wants other dates. Today is {ctx.now:%A, %Y-%m-%d}. Ask for "
                                       "the new check-in and check-out dates and call set_dates.")
    state = ctx.state
    booked = await ctx.tool("book_room", check_in=state["check_in"], check_out=state["check_out"],
                            guests=state["guests"])
    return go("goodbye").with_state({"reference": booked["reference"]}).with_prompt(
        f"The room is booked, reference {booked['reference']}. Thank the customer, give the reference, and say "
        "goodbye.")


confirm = agent(
    "confirm",
    prompt="Read back the booking: ${check_in} to ${check_out}, ${guests} guest(s). Ask the customer to confirm, "
           "then call confirm_booking with confirmed true or false (false when the customer wants other dates or "
           "nights; with check_in and check_out when the customer says which, today being ${today}; and guests, "
           "when the customer gives another number of guests instead).",
    tools=[ConfirmBooking, "terminate_session"],
    handlers={"confirm_booking": confirm_booking},
)
goodbye = terminal("goodbye")

booking = Flow("booking", description="Book a room: dates, guests, confirmation", start=ask_dates,
               nodes=[ask_dates, ask_guests, confirm, goodbye], on=[on_message(repeat="always")])


# ------------------------------------------------------------------ reading the dates people type

MONTHS = {name: number for number, names in enumerate(
    ("jan january", "feb february", "mar march", "apr april", "may", "jun june", "jul july", "aug august",
     "sep sept september", "oct october", "nov november", "dec december"), start=1) for name in names.split()}
WEEKDAYS = {name: number for number, names in enumerate(
    ("mon monday", "tue tues tuesday", "wed wednesday", "thu thur thurs thursday", "fri friday", "sat saturday",
     "sun sunday")) for name in names.split()}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
DATE_PHRASE = re.compile(
    rf"\b(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b"
    rf"|\b(?P<d>\d{{1,2}})/(?P<m>\d{{1,2}})(?:/(?P<y>\d{{2}}|\d{{4}}))?\b"
    rf"|\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? (?P<month>{_MONTH})\b\.?(?:,? (?P<year>\d{{4}}))?"
    rf"|\b(?P<month2>{_MONTH})\.? (?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (?P<year2>\d{{4}}))?"
    # "the 12th" said as a date of the stay: after "from", "until" or the like, or before "to", "for"
    rf"|(?:(?<=from )|(?<=until )|(?<=till )|(?<=to )|(?<=arrive )|(?<=arriving )|(?<=leave )|(?<=leaving )"
    rf"|(?=the \d{{1,2}}(?:st|nd|rd|th) (?:to|until|till|through|-|for) ))"
    rf"the (?P<dom>\d{{1,2}})(?:st|nd|rd|th)\b(?!(?: of)? (?:{_MONTH})\b)"
    rf"|\b(?P<relative>today|tomorrow)\b"
    rf"|\b(?:(?:this|next|on) )?(?P<weekday>{_WEEKDAY})\b",
    re.IGNORECASE)


def _on_or_after(day: int, month: int, year: int | None, after: date) -> date | None:
    """The date, its year the given one, else the first year in which it is not before ``after``."""
    try:
        if year is not None:
            return date(year + 2000 if year < 100 else year, month, day)
        found = date(after.year, month, day)
        return found if found >= after else date(after.year + 1, month, day)
    except ValueError:  # the 31st of April, the 12th of the 13th month
        return None


def _phrase_date(found: re.Match[str], after: date) -> date | None:
    groups = found.groupdict()
    if groups["iso"]:
        try:
            return date.fromisoformat(groups["iso"])
        except ValueError:
            return None
    if groups["d"]:
        return _on_or_after(int(groups["d"]), int(groups["m"]), int(groups["y"]) if groups["y"] else None, after)
    if groups["day"] or groups["day2"]:
        day, month, year = ((groups["day"], groups["month"], groups["year"]) if groups["day"] else
                            (groups["day2"], groups["month2"], groups["year2"]))
        return _on_or_after(int(day), MONTHS[month.lower()], int(year) if year else None, after)
    if groups["dom"]:  # "the 12th": of this month, else of the next one
        on = _on_or_after(int(groups["dom"]), after.month, after.year, after)
        if on is not None and on >= after:
            return on
        following = date(after.year + (after.month == 12), after.month % 12 + 1, 1)
        return _on_or_after(int(groups["dom"]), following.month, following.year, after)
    if groups["relative"]:
        return after + timedelta(days=0 if groups["relative"].lower() == "today" else 1)
    ahead = (WEEKDAYS[groups["weekday"].lower()] - after.weekday() - 1) % 7 + 1  # 1 to 7 days on
    return after + timedelta(days=ahead)


DAY_RANGE = re.compile(rf"\b(?:the )?(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:-|\u2013|to|until|till)\s*(?:the )?"
                       rf"(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({_MONTH})\b"
                       rf"|\b({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?\s*(?:-|\u2013)\s*(\d{{1,2}})(?:st|nd|rd|th)?\b",
                       re.IGNORECASE)
"""Two days of one month ("24-27 dec", "12 to 15 March", "the 5th to the 8th of June", "June
5-8"): read as "24 dec to 27 dec"."""


def _day_range(found: re.Match[str]) -> str:
    first, last, month = found.group(1, 2, 3) if found.group(1) else found.group(5, 6, 4)
    if int(first) >= int(last):  # "30 to 2 jan" is not two days of January: as written
        return found.group(0)
    return f"{first} {month} to {last} {month}"


def read_dates(text: str, today: date) -> list[date]:
    """The dates named in ``text``, in order (see the module docstring for the forms). Relative
    ones count from ``today``, a second one from the first ("Friday to Sunday")."""
    dates: list[date] = []
    for found in DATE_PHRASE.finditer(DAY_RANGE.sub(_day_range, text)):
        base = dates[-1] if dates else today
        # today/tomorrow and weekdays are relative to when the customer speaks, weekdays after that to the last date
        anchor = today if found.group("relative") else base
        if (read := _phrase_date(found, anchor)) is not None:
            said_year = any(found.group(name) for name in ("iso", "y", "year", "year2"))
            dates.append(_same_year(read, base) if dates and not said_year else read)
    return dates


def _same_year(read: date, base: date) -> date:
    """A second date said without a year, a year after the first: in the first's year when it is
    more than two months on ("5 April to 3 April" is a check-out before the check-in, not a stay
    of 363 nights; "28 Dec to 2 Jan" crosses the year)."""
    if (read - base).days <= 60:
        return read
    try:
        return read.replace(year=base.year)
    except ValueError:  # the 29th of February
        return read


# ------------------------------------------------------------------ the scripted stand-in

WELCOME = "Welcome to the Harbour Hotel!"
QUESTIONS = {
    "dates": "Which dates would you like? Check-in and check-out: 12 March to 15 March, 12/03 to 15/03 or "
             "Friday to Sunday.",
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
        feedback = last.content if last is not None and last.role == "tool" and last.content != TOOL_VALIDATED \
            else ""
        return ModelResponse(text=f"{feedback} {_question(request, step)}".strip(), finish_reason="stop")
    words = last.content.lower()

    def call(name: str, **arguments: Any) -> ModelResponse:
        return ModelResponse(tool_calls=(ToolCall("call_1", name, arguments),), finish_reason="tool_calls")

    if step == "dates" and (stay_dates := _stay_dates(request, words)) is not None:
        said = [m.content.lower() for m in request.messages if m.role == "user"]
        guests = next((n for text in reversed(said) if (n := _party(_undated(text))) is not None), None)
        return call("set_dates", check_in=stay_dates[0].isoformat(), check_out=stay_dates[1].isoformat(),
                    **({"guests": guests} if guests is not None else {}))
    if step == "dates" and (check_in := _check_in(request, words)) is not None:
        return ModelResponse(text=f"Check-in on {check_in:%A %d %B}. And the check-out date, or how many nights?",
                             finish_reason="stop")
    party = _party(words)  # "3 guests", "2 adults and 1 child"
    if step == "guests" and party is not None:
        return call("set_guests", guests=party)
    if step == "guests" and (number := re.search(r"\b(\d+|" + "|".join(COUNTS) + r")\b", _undated(words))):
        return call("set_guests", guests=_count(number.group(1)))  # "4"
    if step == "guests" and COUPLE.search(words):
        return call("set_guests", guests=2)  # "me and my husband", "the two of us", "a couple"
    if step == "guests" and re.search(r"\b(?:just|only) me\b|\bmyself\b|\balone\b", words):
        return call("set_guests", guests=1)
    # at the confirmation only a total changes the guests ("no, 3 guests"): "we have 1 baby, so a cot
    # would be great" says who comes, not how many
    guests = _total(words)
    said = read_yes_no(words, yes=frozenset({"confirm"}), no=frozenset({"change"}))  # "yep", "sure"; "nope"
    if step == "confirm" and said and guests is None and (NIGHTS.search(words) or read_dates(words, _today(request))) \
            and re.search(r"\b(?:actually|instead|rather|change|make it|from)\b", words):
        said = False  # "yes but make it 3 nights": other dates, never the ones read back
    changed = _changed_stay(request, words) if step == "confirm" else None
    if changed is not None:  # "actually can we do friday to monday", "yes but 3 guests and 4 nights"
        return call("confirm_booking", confirmed=False, check_in=changed[0].isoformat(),
                    check_out=changed[1].isoformat(), guests=guests)
    if step == "confirm" and (said is not None or guests is not None):  # "ok wait, make it 3 guests"
        return call("confirm_booking", confirmed=bool(said), guests=guests)
    if re.search(r"^\W*(?:(?:actually|ok|okay|no|please)\W+)*(?:bye|goodbye|stop|cancel|quit)\b", words):
        return call("terminate_session")  # a message that takes its leave, not one that says "bus stop" in passing
    return ModelResponse(text=_question(request, step), finish_reason="stop")


COUNTS = {word: number for number, word in enumerate(("one", "two", "three", "four", "five", "six", "seven"), 1)}
NIGHTS = re.compile(rf"\b(\d{{1,2}}|{'|'.join(COUNTS)}) nights?\b")
CHANGE = re.compile(r"\b(actually|instead|rather|change|make it)\b")
_PARTNER = r"(?:husband|wife|partner|boyfriend|girlfriend|fiance|fiancee|friend|son|daughter|mum|mom|dad|mother|" \
    r"father|brother|sister|colleague)"
COUPLE = re.compile(rf"\b(?:me|myself|i) and (?:my|a) {_PARTNER}\b|\b(?:my|a) {_PARTNER} and (?:me|myself|i)\b|"
                    r"\btwo of us\b|\ba couple\b")


PEOPLE = re.compile(rf"\b(?P<n>\d+|{'|'.join(COUNTS)}) (?:(?P<total>guests?|people|persons?|of us)|adults?|children|"
                    r"child|kids?|infants?|bab(?:y|ies)|teen(?:ager)?s?|friends?|colleagues?|grandparents?)\b"
                    r"|\b(?P<a>a|an) (?:adult|child|kid|infant|baby|teen(?:ager)?)\b")
"""Who comes, counted: "3 guests", "2 adults", "a baby" (a friend or a colleague only with a number:
"me and a friend" is the speaker and a partner, "a friend recommended you" counts no one)."""
SPEAKER = re.compile(r"\b(?:me|myself|i)(?: and| plus|,)|\b(?:and|plus) (?:me|myself|i)\b")
"""The one who speaks, counted beside the others: "me and 2 kids" and "2 friends and I" are 3."""


def _undated(words: str) -> str:
    """``words`` without its dates and nights: "5 june to 8 june" and "4 nights" count no guests."""
    return NIGHTS.sub(" ", DATE_PHRASE.sub(" ", DAY_RANGE.sub(_day_range, words)))


def _count(text: str) -> int:
    return 1 if text in ("a", "an") else COUNTS.get(text) or int(text)


def _number(found: re.Match[str]) -> int:
    """How many a match of :data:`PEOPLE` counts."""
    return _count(found.group("n") or found.group("a"))


def _total(words: str) -> int | None:
    """The total a message counts ("3 guests", "four people"), or None."""
    return next((_number(f) for f in PEOPLE.finditer(words) if f.group("total")), None)


def _party(words: str) -> int | None:
    """The guests a message counts: a total ("four people", "3 guests: 2 adults and 1 child" is 3),
    else the kinds it names added up, with the speaker and a partner named beside them ("2 adults
    and a baby" is 3, "me and 2 kids" 3, "my wife and I and our 2 kids" 4); None when it counts none."""
    found = list(PEOPLE.finditer(words))
    total = next((_number(f) for f in found if f.group("total")), None)
    if total is not None or not found:
        return total
    # "me and my husband", "a couple": two besides the kinds counted; "my wife, me and 2 kids": each named
    partner = bool(re.search(rf"\bmy {_PARTNER}\b", words))
    besides = 2 if COUPLE.search(words) else partner + bool(SPEAKER.search(words))
    if not besides and all(f.group("a") for f in found):
        return None  # "I have a baby": who else comes is not said
    return sum(_number(f) for f in found) + besides


TODAY = re.compile(r"\b[Tt]oday (?:is|being) \w+, (\d{4}-\d{2}-\d{2})")


def _today(request: ModelRequest) -> date:
    """The date the step's prompt gives (``Today is ${today}``, ``today being ${today}``), as a
    model reads it: the turn's date, from the agent's clock (the computer's date only for a prompt
    that gives none)."""
    found = TODAY.search(request.system)
    return date.fromisoformat(found.group(1)) if found else date.today()


def _said_before(request: ModelRequest) -> date | None:
    """The last date the customer gave alone in an earlier message of the step's conversation."""
    earlier = [m.content.lower() for m in request.messages[:-1] if m.role == "user"]
    today = _today(request)
    return next((d[0] for text in reversed(earlier) if len(d := read_dates(text, today)) == 1), None)


def _check_in(request: ModelRequest, words: str) -> date | None:
    """The check-in given alone: in this message, else in an earlier one."""
    found = read_dates(words, _today(request))
    return found[0] if len(found) == 1 else _said_before(request)


def _stay_dates(request: ModelRequest, words: str) -> tuple[date, date] | None:
    """Check-in and check-out read from the message ("12 March to 15 March", "Friday for 2 nights"),
    or a check-out (a date, a number of nights) following a check-in said before ("next Friday",
    then "Sunday" or "2 nights"); a lone date that says it changes ("actually Saturday") is a new
    check-in."""
    found = read_dates(words, _today(request))
    nights = NIGHTS.search(words)
    if len(found) >= 2:
        return found[0], found[1]
    if len(found) == 1 and nights:
        return found[0], found[0] + timedelta(days=_count(nights.group(1)))
    if len(found) == 1 and CHANGE.search(words):
        return None  # a new check-in: the check-out is asked for
    if (check_in := _said_before(request)) is None:
        return None
    if nights:
        return check_in, check_in + timedelta(days=_count(nights.group(1)))
    if len(found) == 1:
        later = read_dates(words, check_in)  # a weekday counts from the check-in: "Friday", then "Sunday"
        return check_in, later[0]
    return None


READ_BACK = re.compile(r"Read back the booking: (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})")


def _changed_stay(request: ModelRequest, words: str) -> tuple[date, date] | None:
    """Other dates said at the confirmation: two dates ("friday to monday"), or a number of nights
    with a date or from the check-in read back ("make it 3 nights")."""
    found = read_dates(words, _today(request))
    nights = NIGHTS.search(words)
    booked = READ_BACK.search(request.system)
    held = (date.fromisoformat(booked.group(1)), date.fromisoformat(booked.group(2))) if booked else None
    start = found[0] if found else held[0] if held else None
    stay_dates = (found[0], found[1]) if len(found) >= 2 else \
        (start, start + timedelta(days=_count(nights.group(1)))) if nights and start is not None else None
    return None if stay_dates == held else stay_dates  # the dates read back, said again, change nothing


def _question(request: ModelRequest, step: str) -> str:
    """What the step asks: the booking read back at ``confirm``; the welcome only before the first answer."""
    if step == "confirm":
        return request.system.replace("Read back the booking: ", "Your booking: ").split(". Ask")[0] + \
            ". Shall I book it (yes/no)?"
    greeted = any(message.role == "assistant" for message in request.messages)
    question = QUESTIONS.get(step, "")
    if step == "guests" and TOO_MANY in request.system:  # the guests said with the dates were too many
        return f"{TOO_MANY} {question}"
    return question if greeted or step != "dates" else f"{WELCOME} {question}"


fallback_model = FunctionModel(_scripted, name="scripted:hotel")

agent = Agent("Harbour", tools=[book_room], flows=[booking], model=fallback_model, idle="silent")
