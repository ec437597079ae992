"""``corrected_text``: the free-text value a message marked as a correction gives (no model)."""

from __future__ import annotations

import pytest

from tether import Repair
from tether.flow.repair import corrected_text

MARKERS = Repair().correction_markers


@pytest.mark.parametrize(("text", "value"), [
    ("actually make it 14 Main Street, Springfield", "14 Main Street, Springfield"),
    ("sorry, it's 14 Main Street instead", "14 Main Street"),
    ("sorry I meant 14 Main St.", "14 Main St"),
    ("no wait, it's 14 Main St", "14 Main St"),
    ("change it to 14 Main St please", "14 Main St"),
    ("it arrived broken, actually", "it arrived broken"),
    ("no wait, it should go to 14 Oak Avenue", "14 Oak Avenue"),
    ("actually send it to 2 Elm Road", "2 Elm Road"),
    ("actually, the new address is 9 Pine Lane", "9 Pine Lane"),
    ("wait, my name is Ada", "Ada"),
])
def test_the_message_less_its_correction_words(text: str, value: str) -> None:
    assert corrected_text(text, MARKERS) == value


@pytest.mark.parametrize("text", [
    "14 Main St",            # no marker: an answer, not a correction
    "it's 14 Main St",
    "actually, no",          # nothing left but small words
    "actually",
    "wait, what?",           # a question is not a value
])
def test_no_value_without_a_marker_at_an_end_or_with_nothing_left(text: str) -> None:
    assert corrected_text(text, MARKERS) is None
