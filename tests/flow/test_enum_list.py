"""``enum_list``: every listed value a message names, for a list field, with no model; and the
negations it and ``enum_check`` read."""

from __future__ import annotations

import pytest

from tether import enum_list

TOPPINGS = enum_list("toppings", ["ham", "olives", "peppers", "green peppers", "extra cheese"])


def test_every_named_value_in_the_order_of_the_text() -> None:
    found = TOPPINGS.resolve("Olives, HAM and extra cheese please", {})
    assert (found.status, found.value) == ("hit", ["olives", "ham", "extra cheese"])


def test_a_longer_value_is_not_also_read_as_the_shorter_one() -> None:
    assert TOPPINGS.resolve("green peppers", {}).value == ["green peppers"]
    assert TOPPINGS.resolve("green peppers and peppers", {}).value == ["green peppers", "peppers"]


def test_whole_words_only_and_nothing_named_is_a_miss() -> None:
    assert TOPPINGS.resolve("hamburger with oil", {}).status == "miss"  # "hamburger" is not "ham"
    assert TOPPINGS.resolve("", {}).status == "miss"


def test_a_value_right_after_a_negation_is_left_out() -> None:
    assert TOPPINGS.resolve("ham but no olives", {}).value == ["ham"]
    assert TOPPINGS.resolve("olives instead of ham", {}).value == ["olives"]
    assert TOPPINGS.resolve("ham, hold the olives", {}).value == ["ham"]
    assert TOPPINGS.resolve("no extra cheese, just peppers", {}).value == ["peppers"]
    assert TOPPINGS.resolve("green peppers but not peppers", {}).value == ["green peppers"]
    assert TOPPINGS.resolve("without olives and peppers", {}).status == "miss"  # the list goes on negated


@pytest.mark.parametrize("said", ["take off the olives", "i don't want olives", "I dont want any olives",
                                  "skip the olives", "leave off olives", "lose the olives", "get rid of the olives",
                                  "w/o olives", "my kid hates olives", "i'm allergic to olives",
                                  "not a fan of olives", "don't like olives"])
def test_the_ways_customers_leave_a_value_out(said: str) -> None:
    assert TOPPINGS.resolve(f"ham, {said}", {}).value == ["ham"]
    assert TOPPINGS.resolve(said, {"state": {"toppings": ["ham", "olives"]}}).value == ["ham"]  # taken out
    assert TOPPINGS.resolve(said, {}).status == "miss"  # never named


def test_a_value_liked_is_named() -> None:
    assert TOPPINGS.resolve("I'm a big fan of olives", {}).value == ["olives"]
    assert TOPPINGS.resolve("i want ham and olives", {}).value == ["ham", "olives"]


def test_a_negation_governs_only_the_values_it_precedes() -> None:
    assert TOPPINGS.resolve("no, make it ham and olives", {}).value == ["ham", "olives"]
    assert TOPPINGS.resolve("no make it ham", {}).value == ["ham"]  # "make" ends it: ham is named
    assert TOPPINGS.resolve("not sure, olives I guess", {}).value == ["olives"]


def test_a_message_that_only_leaves_values_out_takes_them_out_of_the_list_held() -> None:
    held = {"state": {"toppings": ["ham", "olives"]}}
    assert TOPPINGS.resolve("actually no olives", held).value == ["ham"]
    assert TOPPINGS.resolve("no peppers", held).status == "miss"  # nothing held to take out
    assert TOPPINGS.resolve("no olives", {}).status == "miss"  # no list yet
    # every value taken out: the empty list, an answer only where the field allows it (Field.allow_empty)
    assert TOPPINGS.resolve("no ham and no olives", held).value == []


def test_a_choice_after_not_is_not_named_and_after_no_it_is() -> None:
    from tether import enum_check

    size = enum_check("size", ["small", "medium", "large"])
    assert size.resolve("not large, medium", {}).value == "medium"
    assert size.resolve("small not large", {}).value == "small"
    assert size.resolve("large instead of small", {}).value == "large"
    assert size.resolve("no large please", {}).value == "large"  # "no, large" at a yes/no question
    assert size.resolve("large or medium", {}).status == "ambiguous"
    assert enum_check("confirm", ["yes", "no"]).resolve("no thanks", {}).value == "no"


def test_a_message_that_names_none_and_says_so_is_the_empty_list() -> None:
    for text in ("no toppings please", "none", "nothing", "without any toppings", "no topping"):
        found = TOPPINGS.resolve(text, {})
        assert (found.status, found.value) == ("hit", []), text
    assert TOPPINGS.resolve("I want toppings", {}).status == "miss"
    assert TOPPINGS.resolve("nothing else but ham", {}).value == ["ham"]  # a value named wins


def test_a_message_that_says_it_adds_adds_to_the_list_held() -> None:
    held = {"state": {"toppings": ["ham", "olives"]}}
    for text in ("peppers too", "also peppers", "add peppers", "peppers as well", "plus peppers please"):
        assert TOPPINGS.resolve(text, held).value == ["ham", "olives", "peppers"], text
    assert TOPPINGS.resolve("peppers too, but no olives", held).value == ["ham", "peppers"]
    assert TOPPINGS.resolve("add ham", held).value == ["ham", "olives"]  # held already: no second ham
    # without an adding word the named values are the list (a correction replaces it)
    assert TOPPINGS.resolve("peppers", held).value == ["peppers"]
    # "extra" in a value's own name adds nothing; nothing held: the values named, as before
    assert TOPPINGS.resolve("extra cheese", held).value == ["extra cheese"]
    assert TOPPINGS.resolve("ham, and also olives", {}).value == ["ham", "olives"]


def test_a_plural_value_is_read_in_the_singular_too() -> None:
    toppings = enum_list("toppings", ["mushrooms", "olives", "onions", "green peppers", "extra cheese"])
    assert toppings.resolve("a medium with extra cheese and mushroom", {}).value == ["extra cheese", "mushrooms"]
    assert toppings.resolve("an olive and a green pepper", {}).value == ["olives", "green peppers"]
    assert toppings.resolve("green pepper but no onion", {}).value == ["green peppers"]  # negated in the singular
    assert toppings.resolve("no onion", {"state": {"toppings": ["onions", "olives"]}}).value == ["olives"]


def test_a_leading_and_adds_and_remove_takes_out() -> None:
    toppings = enum_list("toppings", ["ham", "olives", "mushrooms"])
    held = {"state": {"toppings": ["ham"]}}
    assert toppings.resolve("and olives", held).value == ["ham", "olives"]
    assert toppings.resolve("remove ham", {"state": {"toppings": ["ham", "olives"]}}).value == ["olives"]
    assert toppings.resolve("ham and olives", held).value == ["ham", "olives"]  # a list, not an addition


def test_a_swap_takes_out_what_comes_before_for_with_or_to_and_adds_what_comes_after() -> None:
    toppings = enum_list("toppings", ["ham", "olives", "mushrooms", "onions"])
    held = {"state": {"toppings": ["ham", "onions"]}}
    for text in ("swap the ham for olives", "replace ham with olives", "change ham to olives"):
        assert toppings.resolve(text, held).value == ["onions", "olives"], text
    assert toppings.resolve("switch the ham to mushrooms and olives", held).value == ["onions", "mushrooms", "olives"]
    assert toppings.resolve("swap ham for olives", {}).value == ["ham", "olives"]  # nothing held: the values named


def test_a_value_said_again_after_its_negation_is_named() -> None:
    assert TOPPINGS.resolve("I never eat olives normally but today ham and olives", {}).value == ["ham", "olives"]
    assert TOPPINGS.resolve("last time it didn't have any olives, so olives and ham", {}).value == ["olives", "ham"]


def test_take_out_is_not_a_negation() -> None:  # a take-away order
    assert TOPPINGS.resolve("I'd like to take out a pizza with ham", {}).value == ["ham"]


def test_what_a_negation_does_not_reach() -> None:
    assert TOPPINGS.resolve("peppers, hold the olives and have extra cheese", {}).value == ["peppers", "extra cheese"]
    assert TOPPINGS.resolve("ham and olives. sorry, forgot to mention peppers", {}).value \
        == ["ham", "olives", "peppers"]
    assert TOPPINGS.resolve("my kids won't eat anything but ham", {}).value == ["ham"]
