"""``pattern(value=, case=)``: one value however the customer spells it ("a1002", "A 1002",
"A-1002"), and a template or case the pattern cannot make is refused when the flow is defined."""

from __future__ import annotations

import pytest
import yaml

from tether import pattern
from tether.dialect import build_flow, parse_document, parse_text, to_spec, validate
from tether.dialect.spec import FlowSpec

ORDER = r"\b([A-Z])[- ]?(\d{4})\b"


@pytest.mark.parametrize("text", ["a1002", "A 1002", "it's A-1002 thanks", "order a-1002"])
def test_every_spelling_is_one_value(text: str) -> None:
    resolver = pattern("order", ORDER, value=r"\1-\2", case="upper")
    assert (resolver.resolve(text, {}).status, resolver.resolve(text, {}).value) == ("hit", "A-1002")


def test_two_spellings_of_one_value_are_one_match_and_two_values_are_ambiguous() -> None:
    resolver = pattern("order", ORDER, value=r"\1-\2", case="upper")
    assert resolver.resolve("A-1002, yes a1002", {}).value == "A-1002"
    assert resolver.resolve("A-1002 or A-1003", {}).status == "ambiguous"
    assert resolver.resolve("A-1001, sorry, I meant a 1003", {}).value == "A-1003"  # after the correction word
    # without a value template the first group is the value, as before: two spellings, two values
    assert pattern("order", r"\b([A-Z]-?\d{4})\b").resolve("A-1002, yes a1002", {}).status == "ambiguous"


def test_named_groups_and_lower_case() -> None:
    resolver = pattern("code", r"(?P<letters>[A-Z]{2})\s*(?P<digits>\d{3})", value=r"\g<letters>\g<digits>",
                       case="lower")
    assert resolver.resolve("code: AB 123", {}).value == "ab123"
    assert pattern("code", r"[A-Z]{2}\d{3}", case="upper").resolve("code ab123", {}).value == "AB123"


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"value": r"\1-\3"}, "invalid group reference 3"),
    ({"value": r"\g<missing>"}, "unknown group name 'missing'"),
    ({"value": r"\g<1"}, "missing >"),
    ({"regex": r"\b((A)"}, "bad regex"),
    ({"case": "title"}, "case must be 'upper' or 'lower'"),
])
def test_what_the_pattern_cannot_make_is_refused_when_defined(kwargs: dict[str, str], named: str) -> None:
    regex = kwargs.pop("regex", ORDER)
    with pytest.raises(ValueError, match=named) as raised:
        pattern("order", regex, **kwargs)  # type: ignore[arg-type]
    assert "'order'" in str(raised.value)  # the field it is for


FLOW = """
flow:
  id: orders
  nodes:
    - kind: collect
      id: ask_order
      fields: [order]
      ask: Your order number?
      resolvers:
        - {kind: pattern, field: order, regex: "\\\\b([A-Z])[- ]?(\\\\d{4})\\\\b", value: "\\\\1-\\\\2", case: upper}
"""


def test_a_flow_file_sets_value_and_case_and_writes_them_back() -> None:
    spec, problems = parse_document(parse_text(FLOW))
    assert problems == [] and isinstance(spec, FlowSpec)
    flow = build_flow(spec)
    [resolver] = flow.by_id["ask_order"].resolvers
    assert resolver.resolve("a 1002", {}).value == "A-1002"
    [written] = to_spec(flow)["nodes"][0]["resolvers"]
    assert written == {"kind": "pattern", "field": "order", "regex": ORDER, "value": r"\1-\2", "case": "upper"}
    assert yaml.safe_load(yaml.safe_dump(to_spec(flow))) == to_spec(flow)
    plain = build_flow(parse_document(parse_text(FLOW.replace(', value: "\\\\1-\\\\2", case: upper', "")))[0])
    assert to_spec(plain)["nodes"][0]["resolvers"] == [{"kind": "pattern", "field": "order", "regex": ORDER}]


def test_a_flow_file_with_a_template_its_regex_cannot_fill_is_an_issue_at_its_resolver() -> None:
    issues = validate(parse_text(FLOW.replace("\\\\1-\\\\2", "\\\\1-\\\\3")))
    assert [(i.code, i.node, i.path) for i in issues] == [
        ("invalid-pattern", "ask_order", "flow.nodes.0.resolvers.0")]
    assert "invalid group reference 3" in issues[0].message
