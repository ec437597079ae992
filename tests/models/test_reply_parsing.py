"""Tolerant but fail-closed JSON extraction: a table of accepted and rejected replies."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from tether.models.parsing import ReplyParseError, extract_json, parse_structured

ACCEPTED: list[tuple[str, str, Any]] = [
    ("whole object", '{"a": 1}', {"a": 1}),
    ("whole array", "[1, 2, 3]", [1, 2, 3]),
    ("whole scalar", "42", 42),
    ("whole string", '"yes"', "yes"),
    ("surrounding whitespace", '\n\n  {"a": 1}  \n', {"a": 1}),
    ("json fence", '```json\n{"a": 1}\n```', {"a": 1}),
    ("bare fence", '```\n[{"a": 1}]\n```', [{"a": 1}]),
    ("fence with trailing spaces", '```JSON  \n{"a": 1}\n  ```', {"a": 1}),
    ("narrated, structure on its own lines", 'Here\'s the classification:\n{\n  "label": "spam"\n}', {"label": "spam"}),
    ("prose after", '{"a": 1}\nHope this helps!', {"a": 1}),
    ("prose before and after", "Sure.\n\n[1, 2]\n\nAnything else?", [1, 2]),
    ("prose with a fenced value", 'Result:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}),
    ("brackets inside strings", 'Here:\n{"text": "a } and ] and { [", "n": 1}', {"text": "a } and ] and { [", "n": 1}),
    ("escaped quote in string", 'Out:\n{"q": "say \\"}\\" now"}', {"q": 'say "}" now'}),
    ("quotes in prose", 'He said "hi" and left.\n{"a": 1}', {"a": 1}),
    ("nested structures", 'ok\n{"a": [{"b": {"c": []}}]}', {"a": [{"b": {"c": []}}]}),
    ("indented structure", 'Answer:\n    {"a": 1}', {"a": 1}),
    ("fence around narrated structure", '```\nResult:\n{"a": 1}\n```', {"a": 1}),
    ("unicode", 'Résultat :\n{"ville": "São Paulo"}', {"ville": "São Paulo"}),
]

REJECTED: list[tuple[str, str, str]] = [
    ("empty", "", "empty"),
    ("whitespace only", "   \n\t ", "empty"),
    ("empty fence", "```json\n\n```", "empty"),
    ("plain prose", "I need more information.", "no-json"),
    ("two objects", '{"a": 1}\n{"b": 2}', "two-candidates"),
    ("two values with prose", 'First:\n{"a": 1}\nor maybe:\n[2]', "two-candidates"),
    ("two fences", '```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```', "two-candidates"),
    ("stray closer", 'Done }\n{"a": 1}', "unbalanced"),
    ("stray closer after", '{"a": 1}\n]', "unbalanced"),
    ("mismatched", '{"a": [1, 2}', "unbalanced"),
    ("unterminated object", 'Here:\n{"a": 1', "unterminated"),
    ("unterminated string", 'Here:\n{"a": "oops}', "unterminated"),
    ("embedded mid-sentence", 'the answer is {"a":1} I think', "embedded"),
    ("prose before on the same line", 'Answer: {"a": 1}', "embedded"),
    ("prose after on the same line", '{"a": 1} is my answer', "embedded"),
    ("not json: single quotes", "Here:\n{'a': 1}", "invalid-json"),
    ("not json: trailing comma", 'Here:\n{"a": 1,}', "invalid-json"),
    ("not json: bare words", "Result:\n[yes, no]", "invalid-json"),
    ("not json: NaN", "Result:\n[NaN]", "invalid-json"),
    ("whole NaN", "NaN", "no-json"),
    ("citation brackets", 'See [1].\n{"a": 1}', "two-candidates"),
]


@pytest.mark.parametrize(("reply", "expected"), [(r, e) for _, r, e in ACCEPTED], ids=[n for n, _, _ in ACCEPTED])
def test_accepted(reply: str, expected: Any) -> None:
    assert extract_json(reply) == expected


@pytest.mark.parametrize(("reply", "reason"), [(r, e) for _, r, e in REJECTED], ids=[n for n, _, _ in REJECTED])
def test_rejected(reply: str, reason: str) -> None:
    with pytest.raises(ReplyParseError) as caught:
        extract_json(reply)
    assert caught.value.reason == reason
    assert isinstance(caught.value, ValueError)
    assert caught.value.code == f"reply-{reason}"


def test_parse_structured_checks_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": ["spam", "ham"]}, "score": {"type": "number"}},
        "required": ["label"],
        "additionalProperties": False,
    }
    assert parse_structured('Here:\n{"label": "spam", "score": 1}', schema) == {"label": "spam", "score": 1}
    for bad in (
        '{"score": 1}',
        '{"label": "eggs"}',
        '{"label": "ham", "x": 1}',
        "[1]",
        '{"label": "ham", "score": true}',
    ):
        with pytest.raises(ReplyParseError) as caught:
            parse_structured(bad, schema)
        assert caught.value.reason == "schema"
    assert parse_structured("[1, 2]", {"type": "array", "items": {"type": "integer"}}) == [1, 2]
    assert parse_structured('{"a": 1}') == {"a": 1}


def test_parsing_module_is_pure() -> None:
    source = Path(__file__).resolve().parents[2] / "src" / "tether" / "models" / "parsing.py"
    allowed = {"__future__", "json", "re", "dataclasses", "typing", "tether.errors"}
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert imported <= allowed, imported - allowed


@pytest.mark.parametrize("depth", [65, 5_000, 200_000])
@pytest.mark.parametrize("shape", ["array", "object", "fenced", "narrated"])
def test_a_reply_nested_too_deep_fails_closed(depth: int, shape: str) -> None:
    array = "[" * depth + "]" * depth
    reply = {
        "array": array,
        "object": '{"a": ' * depth + "1" + "}" * depth,
        "fenced": f"```json\n{array}\n```",
        "narrated": f"Here you go:\n{array}\n",
    }[shape]
    with pytest.raises(ReplyParseError) as caught:
        extract_json(reply)
    assert caught.value.reason == "too-deep" and caught.value.code == "reply-too-deep"


def test_nesting_up_to_the_limit_parses_and_brackets_in_strings_do_not_count() -> None:
    from tether.models.parsing import MAX_REPLY_DEPTH, json_depth

    value = extract_json("[" * MAX_REPLY_DEPTH + "]" * MAX_REPLY_DEPTH)
    assert json_depth(value) == MAX_REPLY_DEPTH
    assert extract_json('{"text": "' + "[" * 500 + '"}') == {"text": "[" * 500}
    assert json_depth({"a": [1, {"b": []}]}) == 4 and json_depth("x") == 0


def test_deeply_nested_tool_arguments_are_an_invalid_reply() -> None:
    from tether.errors import ModelError
    from tether.models._adapter import parse_tool_arguments

    with pytest.raises(ModelError) as caught:
        parse_tool_arguments("c1", "submit", "[" * 100_000 + "]" * 100_000, "openai")
    assert caught.value.kind == "invalid"


def test_escaped_lone_surrogates_and_nuls_parse_to_storable_strings() -> None:
    value = extract_json('{"message": "hi \\ud800 there\\u0000", "k\\udfff": ["\\ud83d\\ude00"]}')
    assert value == {"message": "hi \ufffd there", "k\ufffd": ["\U0001f600"]}  # a proper pair stays an emoji
    assert extract_json('Here:\n["\\ud800"]') == ["\ufffd"]
