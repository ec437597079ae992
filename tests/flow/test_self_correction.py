"""A message that corrects itself ("large, no wait, medium"; "A-1001, sorry, I meant A-1002"): the
``enum_check`` and ``pattern`` resolvers read the value after its last correction word, when only
one follows it, instead of finding two and asking again."""

from __future__ import annotations

import pytest

from tether import enum_check, pattern

SIZE = enum_check("size", ["small", "medium", "large"])
ORDER = pattern("order_number", r"\b([A-Z]-\d{4})\b")


@pytest.mark.parametrize(("text", "value"), [
    ("large pepperoni, no wait, medium", "medium"),
    ("small, actually make it large", "large"),
    ("large, sorry, medium please", "medium"),
    ("large, I meant medium", "medium"),
])
def test_a_choice_corrected_in_the_same_message_is_the_one_after_the_correction(text: str, value: str) -> None:
    found = SIZE.resolve(text, {})
    assert (found.status, found.value) == ("hit", value)


@pytest.mark.parametrize(("text", "value"), [
    ("A-1001, sorry I meant A-1002", "A-1002"),
    ("where is my order A-1001? no wait, A-1002", "A-1002"),
    ("A-1001 A-1001", "A-1001"),  # one distinct match
])
def test_a_match_corrected_in_the_same_message_is_the_one_after_the_correction(text: str, value: str) -> None:
    found = ORDER.resolve(text, {})
    assert (found.status, found.value) == ("hit", value)


def test_without_a_correction_word_or_with_two_values_after_it_both_still_stand() -> None:
    assert SIZE.resolve("large or medium", {}).status == "ambiguous"
    assert SIZE.resolve("large, I mean medium or small", {}).status == "ambiguous"
    assert ORDER.resolve("A-1001 and A-1002", {}).status == "ambiguous"
    assert ORDER.resolve("A-1001, sorry, A-1002 or A-1003", {}).status == "ambiguous"


def test_a_yes_no_answer_corrected_in_the_same_message() -> None:
    assert enum_check("confirm", ["yes", "no"]).resolve("yes, no wait, no", {}).value == "no"


@pytest.mark.parametrize(("text", "status", "value"), [
    ("an extra large with ham", "miss", None),   # another size than large: the step asks again
    ("2 x large please", "hit", "large"),        # "x" is a times sign
    ("extra-large", "miss", None),
    ("extra large, no wait, large", "hit", "large"),
    ("a large with extra cheese", "hit", "large"),
])
def test_a_value_said_with_extra_before_it_is_another_value(text: str, status: str, value: str | None) -> None:
    found = enum_check("size", ["small", "medium", "large"]).resolve(text, {})
    assert (found.status, found.value) == (status, value)
