"""Agent fields: session-wide values (known fields are never asked for again).

A field is ``string``, ``number``, ``integer`` or ``boolean``, optionally with an ``enum``.
Values from a model are coerced on the way in:

- string accepts numbers and booleans (stringified);
- number/integer accept numeric strings, a single comma read as the decimal mark (``"1,5"`` ->
  1.5; ``"1.500,50"`` is rejected); integer truncates;
- boolean accepts true/sim/yes/1 and false/não/nao/no/0 (trimmed, case-insensitive).

A value that does not fit is ``bad-value``; outside ``enum``, ``not-in-enum``; an undeclared
name, ``unknown-field``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Coerced", "Field", "FieldType", "coerce", "is_known"]

FieldType = Literal["string", "number", "integer", "boolean"]
_TRUE = frozenset({"true", "sim", "yes", "1"})
_FALSE = frozenset({"false", "não", "nao", "no", "0"})
_NUMERIC = re.compile(r"^[-+]?(\d+(\.\d+)?|\.\d+)$")


@dataclass(frozen=True)
class Field:
    """A session-wide field.

    Attributes:
        type: ``string``, ``number``, ``integer`` or ``boolean``.
        enum: the allowed values, if restricted.
        description: what the field means (sent to the model).
        label: a human name (never sent to the model).
        ask: how to ask for it.
        extract: ``anywhere`` (the understand call may harvest it from any message) or ``asked``
            (only the step that asks for it reads it); default ``asked`` for booleans.
    """

    type: FieldType = "string"
    enum: tuple[Any, ...] | None = None
    description: str | None = None
    label: str | None = None
    ask: str | None = None
    extract: Literal["anywhere", "asked"] | None = None

    @property
    def extract_mode(self) -> Literal["anywhere", "asked"]:
        if self.extract is not None:
            return self.extract
        return "asked" if self.type == "boolean" else "anywhere"

    def wire_schema(self) -> dict[str, Any]:
        """The JSON Schema the model sees (type, description, enum only), nullable."""
        schema: dict[str, Any] = {"type": [self.type, "null"]}
        if self.description:
            schema["description"] = self.description
        if self.enum is not None:
            schema["enum"] = [*self.enum, None]
        return schema


@dataclass(frozen=True)
class Coerced:
    """The result of coercing one value: ``ok`` with ``value``, or a ``code`` and ``detail``."""

    ok: bool
    value: Any = None
    code: str | None = None
    detail: str | None = None


def is_known(value: Any) -> bool:
    """A value is known when it is not missing, ``None`` or ``""``."""
    return value is not None and value != ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if text.count(",") == 1 and "." not in text:
            text = text.replace(",", ".")
        if _NUMERIC.match(text):
            return float(text)
    return None


def coerce(name: str, field: Field, value: Any) -> Coerced:
    """Coerce a model-supplied value for ``field`` named ``name``."""
    result: Any
    if field.type == "string":
        if isinstance(value, bool):
            result = "true" if value else "false"
        elif isinstance(value, int | float):
            result = str(value)
        elif isinstance(value, str):
            result = value
        else:
            return Coerced(False, code="bad-value", detail=f"{name}: expected a string, got {value!r}")
    elif field.type in ("number", "integer"):
        number = _number(value)
        if number is None:
            return Coerced(False, code="bad-value", detail=f"{name}: expected a {field.type}, got {value!r}")
        result = int(number) if field.type == "integer" else (int(number) if number.is_integer() and
                                                               isinstance(value, int) else number)
    else:
        if isinstance(value, bool):
            result = value
        elif isinstance(value, str | int) and str(value).strip().lower() in _TRUE:
            result = True
        elif isinstance(value, str | int) and str(value).strip().lower() in _FALSE:
            result = False
        else:
            return Coerced(False, code="bad-value", detail=f"{name}: expected a boolean, got {value!r}")
    if field.enum is not None and result not in field.enum:
        return Coerced(False, code="not-in-enum", detail=f"{name}: {result!r} is not one of {list(field.enum)!r}")
    return Coerced(True, result)


def coerce_fields(fields: Mapping[str, Field], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[Coerced]]:
    """Coerce several values; returns the accepted ones and the rejections (with codes)."""
    accepted: dict[str, Any] = {}
    rejected: list[Coerced] = []
    for name, value in values.items():
        if value is None or value == "":
            continue
        field = fields.get(name)
        if field is None:
            rejected.append(Coerced(False, code="unknown-field", detail=name))
            continue
        result = coerce(name, field, value)
        if result.ok:
            accepted[name] = result.value
        else:
            rejected.append(result)
    return accepted, rejected
