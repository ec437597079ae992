"""``tether chat`` on examples/hotel.py (agent steps) with no model: its scripted stand-in books
a room, the closing message completes the session, and resuming it starts a new one."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

from cli_helpers import EXAMPLES, chat

HOTEL = EXAMPLES / "hotel.py"


def test_hotel_booking_with_the_offline_stand_in(tmp_path: Path) -> None:
    db = tmp_path / "hotel.db"
    # dates to come (the chat runs on the real clock, and a check-in date that has passed is refused)
    check_in = date.today() + timedelta(days=30)
    check_out = check_in + timedelta(days=3)
    done = chat(HOTEL, db, "hi", f"{check_in} to {check_out}", "2", "yes", cwd=tmp_path)
    assert done.code == 0, done.err
    replies = done.replies("Harbour")
    assert replies[0].startswith("Welcome to the Harbour Hotel!")
    assert replies[1] == "How many guests will stay?"
    assert replies[2] == f"Your booking: {check_in} to {check_out}, 2 guest(s). Shall I book it (yes/no)?"
    assert f"HTL-{check_in:%Y%m%d}-2" in replies[3]
    assert done.infos()[:3] == ["booking/dates · 1 call", "booking/guests · 2 calls", "booking/confirm · 2 calls"]
    session = done.session
    again = chat(HOTEL, db, "hello", cwd=tmp_path, extra=("--session", session))
    assert again.code == 0, again.err
    assert f"session {session} completed; starting a new one" in again.out  # never resumed
    assert again.replies("Harbour")[-1].startswith("Welcome to the Harbour Hotel!")


def test_hotel_reads_typed_dates_and_greets_once(tmp_path: Path) -> None:
    done = chat(HOTEL, tmp_path / "hotel.db", "hi", "soon-ish", "12 March to 15/03", "2", cwd=tmp_path, process=True)
    assert done.code == 0, done.err
    replies = done.replies("Harbour")
    assert replies[0].startswith("Welcome to the Harbour Hotel! Which dates")
    assert replies[1].startswith("Which dates") and sum("Welcome" in reply for reply in replies) == 1
    assert replies[2] == "How many guests will stay?"
    assert re.fullmatch(r"Your booking: (\d{4})-03-12 to \1-03-15, 2 guest\(s\)\. Shall I book it \(yes/no\)\?",
                        replies[3]), replies
