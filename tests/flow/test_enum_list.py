"""``enum_list``: every listed value a message names, for a list field, with no model."""

from __future__ import annotations

from tether import enum_list

TOPPINGS = enum_list("toppings", ["ham", "olives", "peppers", "green peppers", "extra cheese"])


def test_every_named_value_in_the_order_of_the_text() -> None:
    found = TOPPINGS.resolve("Olives, HAM and extra cheese please", {})
    assert (found.status, found.value) == ("hit", ["olives", "ham", "extra cheese"])


def test_a_longer_value_is_not_also_read_as_the_shorter_one() -> None:
    assert TOPPINGS.resolve("green peppers", {}).value == ["green peppers"]
    assert TOPPINGS.resolve("green peppers and peppers", {}).value == ["green peppers", "peppers"]


def test_whole_words_only_and_nothing_named_is_a_miss() -> None:
    assert TOPPINGS.resolve("hamburger with olive oil", {}).status == "miss"
    assert TOPPINGS.resolve("", {}).status == "miss"
