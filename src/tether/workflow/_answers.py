"""Answers to typed requests: a gate's response, or an agent's ``request_input``.

One schema language serves both (``text``, ``choice``, ``form``, ``file``; see
:mod:`tether.workflow._contract`). :func:`check_answer` returns the answer coerced to its schema
or raises :class:`ValueError` with the reason it is refused; the caller turns that into a
refusal that changes nothing.

- ``text``: a string (single-line unless ``multiline``);
- ``choice``: one of ``options``; with ``multiple``, a non-empty list of distinct options (a
  single option is taken as a list of one);
- ``form``: an object holding only declared fields, each valid against its JSON Schema
  (type, ``enum`` choices, bounds...); a field is required unless the form lists ``required``
  explicitly or the field declares a ``default`` (filled in when missing);
- ``file``: a file reference ``{"name", "size"?, "type"?, "uri"?}`` (a list of them with
  ``multiple``); ``accept`` (extensions like ``.pdf`` or media types like ``image/*``) and
  ``maxSize`` (bytes, which makes ``size`` required) are enforced.

:func:`coerce_input_schema` turns what an agent passes to ``request_input`` into one of these
schemas (a JSON-Schema-like ``{"type": "string", "enum": [...]}`` is accepted too), or refuses it.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import TypeAdapter, ValidationError

from tether.workflow._contract import ChoiceSchema, FileSchema, FormSchema, GateSchema, TextSchema

__all__ = ["check_answer", "coerce_input_schema", "form_problems"]

_FILE_KEYS = frozenset({"name", "size", "type", "uri"})
_SCHEMA = TypeAdapter[TextSchema | ChoiceSchema | FormSchema | FileSchema](GateSchema)


def form_problems(schema: FormSchema) -> list[str]:
    """Why a form's declared fields are malformed (checked when the workflow is defined)."""
    problems = []
    for name, field in schema.fields.items():
        try:
            Draft202012Validator.check_schema(field)
        except SchemaError as exc:
            problems.append(f"field {name!r} is not a valid JSON Schema: {exc.message}")
    for name in schema.required or []:
        if name not in schema.fields:
            problems.append(f"required field {name!r} is not declared in fields")
    return problems


def _required(schema: FormSchema) -> list[str]:
    if schema.required is not None:
        return list(schema.required)
    return [name for name, field in schema.fields.items() if "default" not in field]


def _check_form(schema: FormSchema, answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise ValueError(f"a form answer must be an object of fields, got {type(answer).__name__}")
    unknown = sorted(set(answer) - set(schema.fields))
    if unknown:
        raise ValueError(f"unknown form field {unknown[0]!r} (fields: {', '.join(schema.fields)})")
    missing = [name for name in _required(schema) if answer.get(name) is None]
    if missing:
        raise ValueError(f"form field {missing[0]!r} is required")
    values = dict(answer)
    for name, field in schema.fields.items():
        if name not in values:
            if "default" in field:
                values[name] = field["default"]
            continue
        error = next(iter(Draft202012Validator(field).iter_errors(values[name])), None)
        if error is not None:
            where = "".join(f"[{p!r}]" for p in error.path)
            raise ValueError(f"form field {name!r}{where}: {error.message}")
    return values


def _accepted(schema: FileSchema, ref: dict[str, Any]) -> bool:
    if not schema.accept:
        return True
    name, media = str(ref["name"]).lower(), str(ref.get("type") or "").lower()
    for pattern in (p.lower() for p in schema.accept):
        if pattern.startswith(".") and name.endswith(pattern):
            return True
        if "/" in pattern and media and (media == pattern or (pattern.endswith("/*") and
                                                              media.startswith(pattern[:-1]))):
            return True
    return False


def _check_file(schema: FileSchema, ref: Any) -> dict[str, Any]:
    if not isinstance(ref, dict):
        raise ValueError(f"a file answer must be an object like {{'name': ..., 'size': ...}}, got {ref!r}")
    unknown = sorted(set(ref) - _FILE_KEYS)
    if unknown:
        raise ValueError(f"unknown file key {unknown[0]!r} (keys: {', '.join(sorted(_FILE_KEYS))})")
    if not isinstance(ref.get("name"), str) or not ref["name"]:
        raise ValueError("a file needs a non-empty 'name'")
    size = ref.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise ValueError(f"file {ref['name']!r}: 'size' must be a non-negative integer of bytes")
    if schema.max_size is not None:
        if size is None:
            raise ValueError(f"file {ref['name']!r}: 'size' is required (maxSize is {schema.max_size})")
        if size > schema.max_size:
            raise ValueError(f"file {ref['name']!r} is {size} bytes, over maxSize {schema.max_size}")
    for key in ("type", "uri"):
        if key in ref and not isinstance(ref[key], str):
            raise ValueError(f"file {ref['name']!r}: {key!r} must be a string")
    if not _accepted(schema, ref):
        raise ValueError(f"file {ref['name']!r} is not an accepted type ({', '.join(schema.accept or [])})")
    return dict(ref)


def check_answer(schema: GateSchema, answer: Any) -> Any:
    """``answer`` coerced to ``schema``; raises :class:`ValueError` naming what is wrong."""
    if isinstance(schema, TextSchema):
        if not isinstance(answer, str):
            raise ValueError(f"a text answer must be a string, got {type(answer).__name__}")
        if not schema.multiline and "\n" in answer.strip():
            raise ValueError("a single-line text answer cannot hold a line break")
        return answer
    if isinstance(schema, ChoiceSchema):
        chosen = answer if isinstance(answer, list) else [answer]
        if not schema.multiple and len(chosen) != 1:
            raise ValueError(f"choose exactly one of {schema.options}")
        if not chosen:
            raise ValueError(f"choose at least one of {schema.options}")
        bad = [c for c in chosen if c not in schema.options]
        if bad:
            raise ValueError(f"{bad[0]!r} is not one of {schema.options}")
        if len(set(map(str, chosen))) != len(chosen):
            raise ValueError("a choice cannot be chosen twice")
        return chosen if schema.multiple else chosen[0]
    if isinstance(schema, FormSchema):
        return _check_form(schema, answer)
    refs = answer if isinstance(answer, list) else [answer]
    if not schema.multiple and len(refs) != 1:
        raise ValueError("exactly one file is expected")
    if not refs:
        raise ValueError("at least one file is expected")
    checked = [_check_file(schema, ref) for ref in refs]
    return checked if schema.multiple else checked[0]


def coerce_input_schema(schema: Any) -> GateSchema:
    """The input schema an agent asked for, as one of the four kinds; :class:`ValueError` when it
    cannot be rendered as an answerable control."""
    if schema is None:
        return TextSchema(kind="text")
    if not isinstance(schema, dict):
        raise ValueError(f"an input schema must be an object, got {type(schema).__name__}")
    if "kind" not in schema and "type" in schema:
        schema = _from_json_schema(schema)
    try:
        coerced = _SCHEMA.validate_python(schema)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "schema"
        raise ValueError(f"input schema {where}: {first['msg']}") from None
    if isinstance(coerced, FormSchema):
        problems = form_problems(coerced)
        if problems:
            raise ValueError(f"input schema: {problems[0]}")
    return coerced


def _from_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "string" and isinstance(schema.get("enum"), list):
        return {"kind": "choice", "options": [str(o) for o in schema["enum"]]}
    if kind == "string":
        return {"kind": "text"}
    if kind == "array" and isinstance(schema.get("items"), dict) and isinstance(schema["items"].get("enum"), list):
        return {"kind": "choice", "options": [str(o) for o in schema["items"]["enum"]], "multiple": True}
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        form: dict[str, Any] = {"kind": "form", "fields": schema["properties"]}
        if isinstance(schema.get("required"), list):
            form["required"] = schema["required"]
        return form
    raise ValueError(f"input schema of type {kind!r} cannot be rendered as text, choice, form or file")
