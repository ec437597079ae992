"""``corrected_text``: the free-text value a message marked as a correction gives (no model)."""

from __future__ import annotations

import pytest

from tether import Repair
from tether.flow.repair import corrected_text, restates_value

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


@pytest.mark.parametrize(("old", "new"), [
    ("5 Main St, Springfield", "6 Main St"),
    ("5 Main St, Springfield", "6 Main St, Springfield, and don't ring the bell"),  # a delivery note after it
    ("5 Main St, Springfield", "6 Keep Lane, Springfield"),
    ("the colour is wrong", "the colour is wrong and I don't like it"),  # a reason said as a sentence
    ("the box is cracked", "the lid is cracked, not the box"),
])
def test_a_refusals_text_that_gives_another_value(old: str, new: str) -> None:
    assert restates_value(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("5 Main St, Springfield", "22 Baker Street, London"),  # restates nothing: could be anything
    ("5 Main St, Springfield", "keep the old one, forget Main Street"),
    ("5 Main St, Springfield", "I don't live on Main St anymore"),
    ("5 Main St, Springfield", "can you keep it as Main St but number 6"),
    ("5 Main St, Springfield", "the main st address stays unchanged"),
    ("5 Main St, Springfield", "Main St is right, it's just number 6"),  # a sentence about the value
    ("5 Main St, Springfield", "5 Main St, Springfield, that's what"),
    ("doesn't fit", "it doesn't fit but I'll keep it"),
])
def test_a_refusals_text_that_keeps_or_talks_about_the_value(old: str, new: str) -> None:
    assert not restates_value(old, new)


@pytest.mark.parametrize(("text", "value"), [
    ("nope, wrong, it's 6 Main Street", "6 Main Street"),
    ("no wait, wrong street, it's 5 Main Rd, Springfield", "5 Main Rd, Springfield"),
    ("hmm no, make it 6 main st", "6 main st"),
    ("yes but 6 Main St instead", "6 Main St"),
])
def test_a_refusals_leading_words_are_dropped(text: str, value: str) -> None:
    assert corrected_text(text, ("no", "nope", "nah", *MARKERS)) == value
