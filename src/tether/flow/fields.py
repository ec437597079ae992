"""Agent fields: session-wide values (known fields are never asked for again).

A field is ``string``, ``number``, ``integer``, ``boolean``, ``enum`` (one of ``enum=``), ``date``
or ``list`` (of ``items``, default strings), optionally with an ``enum`` (for a list: of its
items). Values from a model are coerced on the way in:

- string accepts numbers and booleans (stringified);
- number/integer accept numeric strings, a single comma read as the decimal mark (``"1,5"`` ->
  1.5; ``"1.500,50"`` is rejected); integer truncates;
- boolean accepts true/sim/yes/1 and false/não/nao/no/0 (trimmed, case-insensitive);
- enum accepts one of its values (a string matched case-insensitively gets the declared spelling);
- date accepts an ISO date (``2026-03-01``, or a ``date``) and stores the ISO string;
- list accepts a list (each item coerced as ``items``) or a comma-separated string; an empty list
  is not a value (a required list that is empty is missing).

A value that does not fit is ``bad-value``; outside ``enum``, ``not-in-enum``; an undeclared
name, ``unknown-field``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["Coerced", "Field", "FieldType", "ItemType", "coerce", "is_known"]

FieldType = Literal["string", "number", "integer", "boolean", "enum", "date", "list"]
ItemType = Literal["string", "number", "integer", "boolean", "enum", "date"]
_TRUE = frozenset({"true", "sim", "yes", "1"})
_FALSE = frozenset({"false", "não", "nao", "no", "0"})
_NUMERIC = re.compile(r"^[-+]?(\d+(\.\d+)?|\.\d+)$")


@dataclass(frozen=True)
class Field:
    """A session-wide field.

    Attributes:
        type: ``string``, ``number``, ``integer``, ``boolean``, ``enum``, ``date`` or ``list``.
        enum: the allowed values (required for ``enum``; for a ``list``, of its items).
        items: the type of a ``list``'s items (default ``string``).
        description: what the field means (sent to the model).
        label: a human name (never sent to the model).
        ask: how to ask for it.
        extract: ``anywhere`` (the understand call may harvest it from any message) or ``asked``
            (only the step that asks for it reads it); default ``asked`` for booleans.
        reuse: ``keep`` (default: a value known from an earlier flow is used as it is) or
            ``confirm`` (a new flow that would reuse it asks first: "the same order A-1001?").
        allow_empty: for a ``list``, an empty list is an answer ("no toppings"), not a missing
            value (default: a list needs one item at least, and an empty one is asked for again).
    """

    type: FieldType = "string"
    enum: tuple[Any, ...] | None = None
    items: ItemType = "string"
    description: str | None = None
    label: str | None = None
    ask: str | None = None
    extract: Literal["anywhere", "asked"] | None = None
    reuse: Literal["keep", "confirm"] = "keep"
    allow_empty: bool = False

    def known(self, value: Any) -> bool:
        """Whether ``value`` answers this field: :func:`is_known`, or an empty list where the
        field allows it."""
        return is_known(value) or (self.allow_empty and self.type == "list" and value == [])

    @property
    def extract_mode(self) -> Literal["anywhere", "asked"]:
        if self.extract is not None:
            return self.extract
        return "asked" if self.type == "boolean" else "anywhere"

    def wire_schema(self) -> dict[str, Any]:
        """The JSON Schema the model sees (type, description, enum, items only), nullable."""
        schema: dict[str, Any]
        if self.type == "list":
            schema = {"type": ["array", "null"], "items": replace(self, type=self.items).wire_value()}
        else:
            schema = self.wire_value()
            if "type" in schema:
                schema["type"] = [schema["type"], "null"]
            if "enum" in schema:
                schema["enum"] = [*schema["enum"], None]
        if self.description:
            schema["description"] = self.description
        if self.allow_empty and self.type == "list":  # the model must know [] is an answer, not null
            schema["description"] = (f"{self.description} " if self.description else "") + \
                "(an empty list when the customer wants none; null when not said)"
        return schema

    def wire_value(self) -> dict[str, Any]:
        """The JSON Schema of one (non-null) value of a scalar field."""
        if self.type == "enum":
            return {"enum": list(self.enum or ())}
        if self.type == "date":
            return {"type": "string", "format": "date"}
        schema: dict[str, Any] = {"type": self.type}
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        return schema


@dataclass(frozen=True)
class Coerced:
    """The result of coercing one value: ``ok`` with ``value``, or a ``code`` and ``detail``."""

    ok: bool
    value: Any = None
    code: str | None = None
    detail: str | None = None


def is_known(value: Any) -> bool:
    """A value is known when it is not missing, ``None``, ``""`` or an empty list (see
    :meth:`Field.known` for a list that may be empty)."""
    return value is not None and value != "" and value != []


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
    if field.type == "list":
        return _coerce_list(name, field, value)
    result: Any
    if field.type == "enum":
        return _coerce_enum(name, field, value)
    if field.type == "date":
        return _coerce_date(name, value)
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


def _coerce_enum(name: str, field: Field, value: Any) -> Coerced:
    allowed = list(field.enum or ())
    if any(value == option and type(value) is type(option) for option in allowed):
        return Coerced(True, value)
    if isinstance(value, str):
        for option in allowed:
            if isinstance(option, str) and option.casefold() == value.strip().casefold():
                return Coerced(True, option)
    return Coerced(False, code="not-in-enum", detail=f"{name}: {value!r} is not one of {allowed!r}")


def _coerce_date(name: str, value: Any) -> Coerced:
    if isinstance(value, dt.datetime):
        return Coerced(True, value.date().isoformat())
    if isinstance(value, dt.date):
        return Coerced(True, value.isoformat())
    if isinstance(value, str):
        try:
            return Coerced(True, dt.date.fromisoformat(value.strip()).isoformat())
        except ValueError:
            pass
    return Coerced(False, code="bad-value", detail=f"{name}: expected a date (YYYY-MM-DD), got {value!r}")


def _coerce_list(name: str, field: Field, value: Any) -> Coerced:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple):
        return Coerced(False, code="bad-value", detail=f"{name}: expected a list, got {value!r}")
    item_field = replace(field, type=field.items)
    items: list[Any] = []
    for index, item in enumerate(value):
        result = coerce(f"{name}[{index}]", item_field, item)
        if not result.ok:
            return result
        items.append(result.value)
    if not items and not field.allow_empty:  # "no toppings" for a list that needs one
        return Coerced(False, code="bad-value", detail=f"{name}: give one item at least")
    return Coerced(True, items)


def coerce_fields(fields: Mapping[str, Field], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[Coerced]]:
    """Coerce several values; returns the accepted ones and the rejections (with codes)."""
    accepted: dict[str, Any] = {}
    rejected: list[Coerced] = []
    for name, value in values.items():
        field = fields.get(name)
        if not (field.known(value) if field is not None else is_known(value)):
            continue
        if field is None:
            rejected.append(Coerced(False, code="unknown-field", detail=name))
            continue
        result = coerce(name, field, value)
        if result.ok:
            accepted[name] = result.value
        else:
            rejected.append(result)
    return accepted, rejected
