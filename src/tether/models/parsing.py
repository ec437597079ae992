"""Tolerant but fail-closed extraction of one JSON value from a model's reply.

Pure: this module imports only the standard library's ``json``/``re``/``dataclasses``/``typing``
and :mod:`tether.errors`; the pure engine may use it.

The parsed payload is

1. the whole reply, when it parses as JSON;
2. else the content of a single code fence (```` ```json ```` or ```` ``` ````) wrapping *all* of
   the reply, when that parses;
3. else the reply's (or the fence content's) **sole** top-level bracket structure (``{...}`` or
   ``[...]``) standing on lines of its own: prose on other lines before or after it is fine
   (``"Here's the classification:\\n{...}"``).

Extraction never repairs and never guesses. It raises :class:`ReplyParseError` (a ``ValueError``)
with a stable ``reason`` when the reply is empty (``empty``), holds no bracket structure
(``no-json``), holds two candidate values (``two-candidates``), a stray or mismatched bracket
(``unbalanced``), an unterminated structure or string (``unterminated``), a candidate sharing a
line with prose (``embedded``), a candidate that does not itself parse (``invalid-json``), or a value nested more
than :data:`MAX_REPLY_DEPTH` levels deep (``too-deep``: no schema tether sends is that deep, and a
deeper value would exhaust the interpreter's recursion limit in the decoder or in validation).
:func:`parse_structured` adds a minimal structural check against a JSON Schema (``schema``).

Strings in the parsed value are storable: an escaped lone surrogate becomes U+FFFD and an escaped
NUL is removed. Brackets inside JSON strings of a structure do not count; quotes in the surrounding prose are
prose, not strings. The guarantee is structural, not semantic: a refusal printed as one JSON value
on its own line is still accepted; validating it against the declared schema is the next layer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tether.errors import TetherError

__all__ = ["MAX_REPLY_DEPTH", "REPLY_PARSE_REASONS", "UNSTORABLE", "ReplyParseError", "extract_json", "json_depth",
           "parse_structured", "storable_text", "storable_value"]

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""A NUL or a surrogate code point (in a Python string, always a lone surrogate): no store can save it."""


def _replace(match: re.Match[str]) -> str:
    return "" if match.group() == "\x00" else "\ufffd"


def storable_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD and NULs removed."""
    return UNSTORABLE.sub(_replace, text) if UNSTORABLE.search(text) else text


def storable_value(value: Any) -> Any:
    """``value`` (JSON-like, at most :data:`MAX_REPLY_DEPTH` deep) with every string, keys included,
    made storable."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_value(k): storable_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(storable_value(v) for v in value)
    return value

MAX_REPLY_DEPTH = 64
"""The deepest nesting of arrays and objects a model reply may hold."""

REPLY_PARSE_REASONS: tuple[str, ...] = (
    "empty",
    "no-json",
    "two-candidates",
    "unbalanced",
    "unterminated",
    "embedded",
    "invalid-json",
    "too-deep",
    "schema",
)

_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\Z", re.DOTALL)
_CLOSERS = {"}": "{", "]": "["}


class ReplyParseError(TetherError, ValueError):
    """A reply holds no single, well-formed JSON value. ``reason`` says why (see the module doc)."""

    code = "reply-parse"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, code=f"reply-{reason}")
        self.reason = reason


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0); iterative, so any depth is safe."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _too_deep(text: str) -> bool:
    """True when brackets outside strings nest deeper than :data:`MAX_REPLY_DEPTH` (checked before
    decoding, so the decoder never recurses that far)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
            if depth > MAX_REPLY_DEPTH:
                return True
        elif ch in "}]":
            depth -= 1
    return False


def _loads(text: str) -> tuple[bool, Any]:
    if _too_deep(text):
        raise ReplyParseError("too-deep", f"the reply nests deeper than {MAX_REPLY_DEPTH} levels")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
        # "\ud800" and "\u0000" escapes decode to strings no store can save: make them storable
        return True, storable_value(value) if "\\u" in text else value
    except RecursionError:  # defensive: _too_deep bounds the nesting well below the recursion limit
        raise ReplyParseError("too-deep", "the reply nests too deeply to decode") from None
    except ValueError:
        return False, None


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int  # exclusive


def _scan(text: str) -> list[_Span]:
    """Find the top-level bracket structures, tracking JSON strings inside them only."""
    spans: list[_Span] = []
    stack: list[str] = []
    start = 0
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in "{[":
            if not stack:
                start = i
            stack.append(ch)
        elif ch in "}]":
            if not stack:
                raise ReplyParseError("unbalanced", f"stray {ch!r} at offset {i} of the reply")
            if stack[-1] != _CLOSERS[ch]:
                raise ReplyParseError("unbalanced", f"{ch!r} at offset {i} closes {stack[-1]!r}")
            stack.pop()
            if not stack:
                spans.append(_Span(start, i + 1))
        elif ch == '"' and stack:
            in_string = True
    if stack or in_string:
        raise ReplyParseError("unterminated", f"the structure opened at offset {start} is never closed")
    return spans


def _stands_alone(text: str, span: _Span) -> bool:
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = text.find("\n", span.end)
    if line_end < 0:
        line_end = len(text)
    return not text[line_start : span.start].strip() and not text[span.end : line_end].strip()


def _sole_structure(text: str) -> Any:
    spans = _scan(text)
    if not spans:
        raise ReplyParseError("no-json", "the reply holds no JSON object or array")
    if len(spans) > 1:
        raise ReplyParseError("two-candidates", f"the reply holds {len(spans)} candidate JSON values")
    span = spans[0]
    if not _stands_alone(text, span):
        raise ReplyParseError("embedded", "the JSON value shares a line with prose")
    ok, value = _loads(text[span.start : span.end])
    if not ok:
        raise ReplyParseError("invalid-json", "the reply's bracket structure is not valid JSON")
    return value


def extract_json(text: str) -> Any:
    """Return the one JSON value a reply holds, or raise :class:`ReplyParseError`.

    >>> extract_json('Here is the result:\\n{"a": 1}')
    {'a': 1}
    """
    stripped = text.strip()
    if not stripped:
        raise ReplyParseError("empty", "the reply is empty")
    ok, value = _loads(stripped)
    if ok:
        return value
    fence = _FENCE.match(stripped)
    if fence is not None:
        body = fence.group("body").strip()
        if not body:
            raise ReplyParseError("empty", "the reply's code fence is empty")
        ok, value = _loads(body)
        if ok:
            return value
        return _sole_structure(body)
    return _sole_structure(stripped)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: str) -> bool:
    types = _JSON_TYPES.get(expected)
    if types is None:
        return True
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    return isinstance(value, types)


def _check(value: Any, schema: dict[str, Any], path: str) -> str | None:
    expected = schema.get("type")
    if isinstance(expected, str) and not _type_ok(value, expected):
        return f"{path}: expected {expected}, got {type(value).__name__}"
    if isinstance(expected, list) and not any(_type_ok(value, t) for t in expected if isinstance(t, str)):
        return f"{path}: expected one of {expected}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: {value!r} is not one of {schema['enum']!r}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                return f"{path}: missing required property {key!r}"
        properties = schema.get("properties", {})
        for key, sub in properties.items():
            if key in value and isinstance(sub, dict):
                problem = _check(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                return f"{path}: unexpected property {extra[0]!r}"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problem = _check(item, schema["items"], f"{path}[{i}]")
            if problem:
                return problem
    return None


def parse_structured(text: str, schema: dict[str, Any] | None = None) -> Any:
    """:func:`extract_json`, then (when ``schema`` is given) a minimal structural check.

    The check covers ``type``, ``enum``, ``required``, ``properties``, ``additionalProperties:
    false`` and ``items``, recursively; anything else in the schema is ignored. A mismatch raises
    :class:`ReplyParseError` with reason ``schema``.
    """
    value = extract_json(text)
    if schema:
        problem = _check(value, schema, "$")
        if problem:
            raise ReplyParseError("schema", f"the reply does not match the schema: {problem}")
    return value
