"""``whole_message``: the whole message is a free-text answer, less the words that introduce it;
with ``questions=False`` a question is not one (with no model, nothing else tells the two apart)."""

from __future__ import annotations

import pytest
import yaml

from tether import whole_message
from tether.dialect import build_flow, parse_document, parse_text, to_spec
from tether.dialect.spec import FlowSpec


def test_the_trimmed_message_of_at_least_min_length_is_the_value() -> None:
    reason = whole_message("reason", min_length=3)
    assert (reason.resolve("  it arrived broken ", {}).status, reason.resolve(" it arrived broken", {}).value) \
        == ("hit", "it arrived broken")
    assert reason.resolve("ok", {}).status == "miss"


@pytest.mark.parametrize(("said", "value"), [
    ("it's 5 Main Street, Springfield", "5 Main Street, Springfield"),
    ("It\u2019s 5 Main Street", "5 Main Street"),  # a typographic apostrophe, as phones type it
    ("its 5 Main Street", "5 Main Street"),
    ("my new address is 14 Oak Ave", "14 Oak Ave"),
    ("sure, my new address is 14 Oak Ave", "14 Oak Ave"),
    ("ok it's 14 Oak Ave", "14 Oak Ave"),
    ("ok", "ok"),
    ("I told you, 22 Baker Street, Bristol", "22 Baker Street, Bristol"),
    ("like I said 22 Baker Street", "22 Baker Street"),
    ("like I said it never arrived", "like I said it never arrived"),  # before a number only
    ("Send it to: 2 Elm Road, please!", "2 Elm Road"),
    ("it is broken", "it is broken"),  # "it is" introduces a number ("it is 5 Main Street"), not a reason
    ("It should be here by now but never came", "It should be here by now but never came"),
    ("its screen cracked", "its screen cracked"),
    ("the address is correct but it never arrived", "the address is correct but it never arrived"),
    ("my name is Ada Lovelace", "Ada Lovelace"),
    ("refund please", "refund"),
    ("the screen is cracked", "the screen is cracked"),  # no introduction: as said
    ("it's", "it's"),  # nothing would be left: as said
    ("italy", "italy"),  # a word that starts like one is not one
])
def test_the_words_that_introduce_the_value_are_left_out(said: str, value: str) -> None:
    assert whole_message("address").resolve(said, {}).value == value
    assert whole_message("address", keep_intro=True).resolve(said, {}).value == said.strip()


def test_min_length_is_checked_without_the_introduction() -> None:
    assert whole_message("address", min_length=5).resolve("it's 12", {}).status == "miss"


def test_a_question_is_an_answer_unless_questions_is_false() -> None:
    asked = "how long does a refund take?"
    assert whole_message("question").resolve(asked, {}).value == asked  # a field that is a question takes it
    reason = whole_message("reason", questions=False)
    assert reason.resolve(asked, {}).status == "miss"
    assert reason.resolve(" why? ", {}).status == "miss"
    assert reason.resolve("it broke? no, it arrived broken", {}).value == "it broke? no, it arrived broken"


def test_a_flow_file_sets_questions_and_writes_it_back() -> None:
    text = """
flow:
  id: refund
  nodes:
    - kind: collect
      id: reason
      fields: [reason]
      ask: What went wrong?
      resolvers: [{kind: whole_message, field: reason, min_length: 3, questions: false}]
"""
    spec, problems = parse_document(parse_text(text))
    assert problems == [] and isinstance(spec, FlowSpec)
    flow = build_flow(spec)
    [resolver] = flow.by_id["reason"].resolvers
    assert resolver.resolve("how long does it take?", {}).status == "miss"
    [written] = to_spec(flow)["nodes"][0]["resolvers"]
    assert written == {"kind": "whole_message", "field": "reason", "min_length": 3, "questions": False}
    assert yaml.safe_load(yaml.safe_dump(to_spec(flow))) == to_spec(flow)


def test_a_flow_file_keeps_the_introduction_with_keep_intro() -> None:
    text = """
flow:
  id: feedback
  nodes:
    - kind: collect
      id: comment
      fields: [comment]
      ask: How was it?
      resolvers: [{kind: whole_message, field: comment, keep_intro: true}]
"""
    spec, problems = parse_document(parse_text(text))
    assert problems == [] and isinstance(spec, FlowSpec)
    flow = build_flow(spec)
    [resolver] = flow.by_id["comment"].resolvers
    assert resolver.resolve("it is great", {}).value == "it is great"
    [written] = to_spec(flow)["nodes"][0]["resolvers"]
    assert written == {"kind": "whole_message", "field": "comment", "keep_intro": True}


@pytest.mark.parametrize("said", ["hmm let me check", "not sure", "hmm, not sure yet", "no clue", "one sec",
                                  "dunno", "I'm not sure"])
def test_a_message_that_only_hedges_is_no_free_text_answer(said: str) -> None:
    assert whole_message("address", min_length=3).resolve(said, {}).status == "miss"


@pytest.mark.parametrize(("said", "value"), [("no", "no"), ("not sure, it just stopped", "not sure, it just stopped"),
                                             ("let me check: 5 Main St", "let me check: 5 Main St")])
def test_a_hedge_with_something_said_is_an_answer(said: str, value: str) -> None:
    assert whole_message("reason").resolve(said, {}).value == value
