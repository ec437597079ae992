"""``tether chat`` shows refused input as an error line and the conversation goes on."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import SHIPPING, chat


def test_a_nul_byte_is_refused_and_the_next_message_is_answered(tmp_path: Path) -> None:
    done = chat(SHIPPING, tmp_path / "t.db", "hi", "ab\x00cd", "ship to 1 Main St", cwd=tmp_path)
    assert done.code == 0, done.err
    assert "error: message.text holds a NUL character at index 2; it cannot be stored [invalid-input]" in done.out
    replies = done.replies("Shippy")
    assert len(replies) == 2 and replies[1].startswith("Booked! Your shipment to 1 Main St")
