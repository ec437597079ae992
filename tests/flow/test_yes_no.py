"""A yes/no question takes the ways customers say yes and no ("yep", "sure", "go ahead"; "nope",
"nah", "don't"), and "not sure" is neither."""

from __future__ import annotations

import pytest

from tether import enum_check
from tether.flow.yes_no import read_yes_no

CONFIRM = enum_check("confirm", ["yes", "no"])


@pytest.mark.parametrize("text", ["yes", "Yep!", "sure", "yeah", "y", "ok", "correct", "go ahead", "sounds good",
                                  "of course", "perfect", "yes please", "that's right", "please do"])
def test_ways_to_say_yes(text: str) -> None:
    assert (CONFIRM.resolve(text, {}).status, CONFIRM.resolve(text, {}).value) == ("hit", "yes")


@pytest.mark.parametrize("text", ["no", "Nope", "nah", "n", "no thanks", "don't", "do not", "wrong"])
def test_ways_to_say_no(text: str) -> None:
    assert (CONFIRM.resolve(text, {}).status, CONFIRM.resolve(text, {}).value) == ("hit", "no")


@pytest.mark.parametrize("text", ["not sure", "I'm not sure", "maybe", "hmm", "yes and no"])
def test_neither_or_both_is_no_answer(text: str) -> None:
    assert CONFIRM.resolve(text, {}).status in ("miss", "ambiguous")


def test_only_a_yes_no_question_reads_them_and_its_values_keep_their_spelling() -> None:
    assert enum_check("size", ["small", "large"]).resolve("sure", {}).status == "miss"
    assert enum_check("ok", ["Yes", "No"]).resolve("yep", {}).value == "Yes"


def test_a_question_may_add_words_of_its_own() -> None:
    assert read_yes_no("the same one") is None
    assert read_yes_no("the same one", yes=frozenset({"same"})) is True
    assert read_yes_no("another one", no=frozenset({"another"})) is False


def test_a_cancel_is_asked_not_told_of() -> None:
    from tether.flow.repair import Repair, asks_to_cancel

    phrases = Repair().cancel_phrases
    for asked in ("cancel", "please cancel this", "I want to cancel", "never mind, track my order", "forget it"):
        assert asks_to_cancel(asked, phrases), asked
    for told in ("I tried to cancel it but was charged", "how do I cancel?", "I couldn't cancel it", "hello"):
        assert not asks_to_cancel(told, phrases), told


@pytest.mark.parametrize("text", ["no worries, go ahead", "no problem", "ya", "k", "alright", "sure, why not"])
def test_a_yes_that_has_a_no_in_it_or_is_short(text: str) -> None:
    assert CONFIRM.resolve(text, {}).value == "yes"


def test_a_refused_or_narrated_cancel_is_not_a_cancel() -> None:
    from tether.flow.repair import Repair, asks_to_cancel

    phrases = Repair().cancel_phrases
    for told in ("don't cancel it, go ahead", "I had to cancel my trip", "my bank said to cancel the card",
                 "I never said cancel", "no don't cancel, yes place it"):
        assert not asks_to_cancel(told, phrases), told


@pytest.mark.parametrize("text", ["ok stop", "ok wait", "yes, hang on", "sure, wait a second"])
def test_a_yes_held_back_is_no_answer(text: str) -> None:
    assert read_yes_no(text) is None
    assert CONFIRM.resolve(text, {}).status == "miss"


@pytest.mark.parametrize("text", ["hang on, yes", "wait, go ahead", "yes please, the sooner the better, can't wait",
                                  "sure, go ahead, I'll wait for the email", "yes, 12 Bus Stop Lane",
                                  "yes please, I'll stop by to pick it up", "yes, stop asking and place it",
                                  "yes, then I'll hang up", "yes go ahead, we'll wait",
                                  "yes, hold on to it until I'm back on Friday"])
def test_a_word_that_only_sounds_like_a_hold_keeps_the_yes(text: str) -> None:
    assert read_yes_no(text) is True


def test_a_no_that_waits_is_still_a_no() -> None:
    assert read_yes_no("no wait, keep the old one") is False
    assert read_yes_no("stop") is None



def test_a_hold_marks_a_correction_only_when_said_as_one() -> None:
    from tether.flow.repair import Repair, corrected_text, marks_correction

    markers = Repair().correction_markers
    assert marks_correction("wait, A-1002", markers) and marks_correction("no wait, 7 Main St", markers)
    assert not marks_correction("ok, no need to wait", markers) and not marks_correction("can't wait", markers)
    assert corrected_text("ok, no need to wait", markers) is None
    assert corrected_text("14 Main Street, wait", markers) == "14 Main Street"


@pytest.mark.parametrize(("text", "said"), [
    ("no wait, what's the fee?", None),          # held to ask: not refused
    ("nope, hang on, is it free?", None),
    ("no wait, can you make it 6 Main St instead?", None),
    ("no wait", False),                          # no question: a no
    ("no, what is the fee?", False),             # no hold: the no stands
])
def test_a_no_held_to_ask_a_question_is_no_answer(text: str, said: bool | None) -> None:
    assert read_yes_no(text) is said


@pytest.mark.parametrize(("text", "value"), [
    ("no sorry, my mistake, the original address is fine", None),  # "fine" is said of the address: asked again
    ("yes, no wait, no", "no"),
    ("yes sorry go ahead", "yes"),
    ("no, actually yes please", "yes"),
])
def test_an_answer_after_a_self_correction_counts_only_when_it_opens_what_follows(text: str,
                                                                                 value: str | None) -> None:
    found = enum_check("confirm", ["yes", "no"]).resolve(text, {})
    assert found.value == value
