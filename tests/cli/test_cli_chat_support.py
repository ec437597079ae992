"""``tether chat`` on examples/support.py (no model): a conversation across flows, resumed."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import SUPPORT, chat, tether

pytestmark = pytest.mark.skipif(not SUPPORT.exists(), reason="examples/support.py is not there yet")

NO_MODEL = "needs a language model"


def test_support_conversation_then_resume(tmp_path: Path) -> None:
    db = tmp_path / "support.db"
    first = chat(SUPPORT, db, "hello", "where is my order", "A-1009", "/quit", cwd=tmp_path)
    assert first.code == 0, first.err
    replies = first.replies("Sam")
    assert "What would you like to do?" in replies[0]  # the catch-all menu greets
    assert "order number" in replies[1]  # the orders flow asks for the number
    assert "couldn't find an order A-1009" in replies[2]  # looked up in the bundled table
    assert "order number" in replies[3]  # ... and asked again
    assert first.infos() == ["menu/topic · 0 calls", "orders/ask_order · 0 calls", "orders/ask_order · 0 calls"]
    assert not any(NO_MODEL in reply for reply in replies)
    session = first.session

    second = chat(SUPPORT, db, "A-1002", "refund", "yes", "it arrived broken", "yes", "talk to a person", "/state",
                  cwd=tmp_path, extra=("--session", session))
    assert second.code == 0, second.err
    assert f"session {session} (resumed)" in second.out
    infos = second.infos()
    assert infos[0] == "orders/ask_order"  # continues where the first process stopped
    reprinted, *replies = second.replies("Sam")
    assert "order number" in reprinted  # the last bot message (the ask after A-1009), shown again on resume
    assert not any(NO_MODEL in reply for reply in replies)
    assert "Order A-1002 is processing" in replies[0]
    assert infos[1] == "menu/topic · 0 calls"  # the orders flow ended; the menu it interrupted asks again
    assert replies[1] == "Is this about the same order, A-1002? Please answer yes or no."  # reused: confirmed
    assert infos[2] == "refund/refund_order · 0 calls"
    assert "what went wrong" in replies[2] and infos[3] == "refund/refund_reason · 0 calls"
    assert "Open a refund request for order A-1002 (it arrived broken)?" in replies[3]  # asks before opening
    assert "refund request R-" in replies[4] and "order A-1002" in replies[4]
    assert "connecting you with a person" in replies[5]
    assert infos[-1].endswith("handoff to human: customer asked for a person")
    assert '"order_number": "A-1002"' in second.out  # /state shows the session data

    shown = tether("sessions", "show", session, "--db", db)
    assert shown.code == 0, shown.err
    assert "user/user: A-1009" in shown.out and "user/user: talk to a person" in shown.out


def test_support_change_of_address(tmp_path: Path) -> None:
    done = tether("chat", SUPPORT, "--db", tmp_path / "t.db", "--message", "I need to change my delivery address",
                  "--message", "A-1002", "--message", "7 New Road, Springfield", "--message", "yes")
    assert done.code == 0, done.err
    replies = done.replies("Sam")
    assert "Which order" in replies[0]
    assert "new delivery address" in replies[1]
    assert "A-1002 to 7 New Road, Springfield?" in replies[2]
    assert replies[3] == "Done: order A-1002 will go to 7 New Road, Springfield."
