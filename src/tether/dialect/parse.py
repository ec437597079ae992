"""Parsing a flow-file document strictly: every problem as an issue with a dot path and a hint.

A document is ``{"agent": {...}}`` or ``{"flow": {...}}`` (YAML or JSON text, already read). An
unknown key names its path and the nearest allowed key (``did you mean 'max_turns'?``); a wrong
``kind`` or ``op`` names the nearest legal one.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

import tether.dialect.spec as spec_module
from tether.dialect.spec import AgentFile, AgentSpec, FlowFile, FlowSpec
from tether.errors import DefinitionIssue
from tether.pydantic_issues import error_message

__all__ = ["did_you_mean", "parse_document"]

_TAGS = {"reply", "collect", "action", "decide", "router", "wait",  # node kinds
         "message", "mention", "silence", "event",  # trigger kinds
         "predicate", "judge",  # gate kinds
         "pattern", "enum", "range", "jsonpath", "whole_message",  # resolver kinds
         "eq", "ne", "lt", "lte", "gt", "gte", "in", "notIn", "exists", "notExists", "truthy", "falsy", "and", "or",
         "not", "condition"}
_PREDICATE_KEYS = {"when", "arg", "if"}


def _member_names() -> set[str]:
    names = {"str", "constrained-str", "dict[str,union[ValueSource,TemplateSource,PathSource]]"}
    return names | {name for name, value in vars(spec_module).items() if isinstance(value, type)}


_MEMBERS = _member_names()


def _is_member(part: int | str) -> bool:
    """A union member's name in an error location (``ReplySpec``, ``literal['once','always']``)."""
    return isinstance(part, str) and (part in _MEMBERS
                                      or part.startswith(("literal[", "dict[", "list[", "tagged-union[")))


def _is_tag(loc: Sequence[int | str], index: int) -> bool:
    part = loc[index]
    if _is_member(part):
        return True
    if part not in _TAGS or index == 0:
        return False
    previous = loc[index - 1]
    return isinstance(previous, int) or previous in _PREDICATE_KEYS


def did_you_mean(name: str, options: Iterable[str]) -> str | None:
    """``did you mean 'x'?`` for the option nearest ``name``, or None."""
    close = difflib.get_close_matches(name, sorted(set(options)), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def _members(annotation: Any) -> list[Any]:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        found: list[Any] = []
        for arg in get_args(annotation):
            found.extend(_members(arg))
        return found
    return [annotation]


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _step(annotation: Any, part: int | str) -> Any:
    """The annotation one location part further in, or None when it cannot be told."""
    members = _members(annotation)
    if isinstance(part, int):
        lists = [get_args(m)[0] for m in members if get_origin(m) is list]
        return lists[0] if len(lists) == 1 else None
    for member in members:
        if isinstance(member, type) and member.__name__ == part:
            return member
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    for model in models:  # a discriminator tag picks the member
        for name in ("kind", "op"):
            field = model.model_fields.get(name)
            if field is not None and part in get_args(field.annotation):
                return model
    if len(models) == 1:
        for name, field in models[0].model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return None
    dicts = [get_args(m)[1] for m in members if get_origin(m) is dict]
    return dicts[0] if len(dicts) == 1 else None


def _models_at(root: type[BaseModel], loc: Sequence[int | str]) -> list[type[BaseModel]]:
    """The models the annotation at ``loc`` (from ``root``) accepts: one, or a union's members."""
    annotation: Any = root
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return []
    return [m for m in _members(annotation) if isinstance(m, type) and issubclass(m, BaseModel)]


def _allowed_keys(root: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    return sorted({key for model in _models_at(root, loc) for key in _keys(model)})


def _closest_members(errors: list[Any]) -> list[Any]:
    """Of the errors a plain union reports for each member it tried, keep the member's that
    came closest (fewest errors): ``next: {gto: x}`` is one unknown key, not five."""
    groups: dict[tuple[Any, ...], dict[str, list[Any]]] = {}
    kept: list[Any] = []
    for error in errors:
        loc = tuple(error["loc"])
        at = next((i for i, part in enumerate(loc) if _is_member(part) and part not in _TAGS), None)
        if at is None:
            kept.append(error)
        else:
            groups.setdefault(loc[:at], {}).setdefault(str(loc[at]), []).append(error)
    for members in groups.values():
        kept.extend(min(members.items(), key=lambda item: (len(item[1]), "str" in item[0]))[1])
    return kept


def _tags(root: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The ``kind``/``op`` values the union at ``loc`` accepts."""
    return [str(tag) for m in _models_at(root, loc) for name in ("kind", "op") if name in m.model_fields
            for tag in get_args(m.model_fields[name].annotation)]


_TYPE_HINTS = {"list_type": "write a list, e.g. [a, b]", "string_type": "write text (quote it in YAML)",
               "dict_type": "write an object, e.g. {key: value}", "model_type": "write an object, e.g. {key: value}",
               "bool_type": "write true or false", "bool_parsing": "write true or false",
               "int_type": "write a whole number", "int_parsing": "write a whole number",
               "float_type": "write a number", "float_parsing": "write a number",
               "literal_error": "write one of the values the schema lists (tether schema flow)"}


def _hint(root: type[BaseModel], error: Any) -> str | None:
    hint = _specific_hint(root, error)
    if hint is not None:
        return hint
    loc = tuple(p for p in error["loc"] if not (_is_member(p) and p not in _TAGS))
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "missing":
        return f"add {loc[-1]}: ..." if loc else None
    if kind == "union_tag_not_found":
        tags = _tags(root, loc)
        name = str(ctx.get("discriminator", "kind")).strip("'")
        return f"add {name}: one of {', '.join(tags)}" if tags else f"add {name}: ..."
    if kind == "too_short":
        return f"give at least {ctx.get('min_length', 1)} item(s)"
    if kind in ("greater_than_equal", "greater_than"):
        return f"write a number {'at least' if kind == 'greater_than_equal' else 'above'} " \
               f"{ctx.get('ge', ctx.get('gt'))}"
    if "repeat" in loc:
        return "write once, always or {cooldown: 1h}"
    return _TYPE_HINTS.get(kind)


def _specific_hint(root: type[BaseModel], error: Any) -> str | None:
    loc = tuple(p for p in error["loc"] if not (_is_member(p) and p not in _TAGS))
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1])
        return did_you_mean(str(loc[-1]), allowed) or (f"allowed keys: {', '.join(allowed)}" if allowed else None)
    if error["type"] == "union_tag_invalid":
        ctx = error.get("ctx") or {}
        tags = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",")]
        return did_you_mean(str(ctx.get("tag", "")), tags) or f"one of: {', '.join(tags)}"
    if error["type"] == "literal_error" and isinstance(error.get("input"), str):
        expected = str((error.get("ctx") or {}).get("expected", ""))
        return did_you_mean(error["input"], [t.strip(" '") for t in expected.replace(" or ", ",").split(",")])
    return None


def parse_document(data: Any) -> tuple[AgentSpec | FlowSpec | None, list[DefinitionIssue]]:
    """The spec ``data`` holds, or None and every problem found."""
    if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in ("agent", "flow"):
        keys = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
        return None, [DefinitionIssue("dialect-document", f"a flow file holds one 'agent' or one 'flow', got {keys}",
                                      path="<root>", hint="start the file with 'agent:' or 'flow:'")]
    root: type[AgentFile | FlowFile] = AgentFile if "agent" in data else FlowFile
    try:
        document = root.model_validate(data)
    except ValidationError as exc:
        issues: list[DefinitionIssue] = []
        seen: set[tuple[str, str]] = set()
        for error in _closest_members(exc.errors()):
            path, message = error_message(error, _is_tag)
            if (path, message) in seen:
                continue
            seen.add((path, message))
            code = "dialect-" + error["type"].replace("_", "-")
            issues.append(DefinitionIssue(code, message, path=path, hint=_hint(root, error)))
        return None, issues
    return (document.agent if isinstance(document, AgentFile) else document.flow), []



