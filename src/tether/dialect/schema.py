"""The JSON Schema of flow files, generated from the dialect's models.

Every object is closed (``additionalProperties: false``); node schemas (``schema``,
``output_schema``) are JSON Schemas themselves and stay open. Given what an agent offers, the
schema enumerates it: the fields a collect may gather or a flow clear, the tools an action or reply
may call, the registered actions, the events a wait or trigger may name and the conditions a
predicate may call. That schema can serve as a model's response schema for "write me a flow": what
it allows is what the agent can run.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from tether.dialect.spec import AgentFile, FlowFile

__all__ = ["SCHEMA_IDS", "flow_file_schema"]

SCHEMA_IDS = {"flow": "https://tether.dev/schemas/flow-file/v1.json",
              "agent": "https://tether.dev/schemas/agent-file/v1.json"}


def _names(values: Iterable[str]) -> dict[str, Any]:
    listed = sorted(set(values))
    return {"enum": listed} if listed else {"not": {}}


def _restrict(prop: dict[str, Any], names: dict[str, Any]) -> None:
    """Replace the plain-string branch of ``prop`` (or of its array items) with ``names``."""
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        _restrict(prop["items"], names)
        return
    if prop.get("type") == "string":
        for key in ("type", "minLength", "pattern"):
            prop.pop(key, None)
        prop.update(names)
        return
    for branch in prop.get("anyOf", []):
        _restrict(branch, names)


def flow_file_schema(kind: str = "flow", *, fields: Iterable[str] | None = None, tools: Iterable[str] | None = None,
                     actions: Iterable[str] | None = None, events: Iterable[str] | None = None,
                     conditions: Iterable[str] | None = None) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a ``flow`` (or ``agent``) file; each name list given
    restricts the matching references to exactly those names."""
    model = FlowFile if kind == "flow" else AgentFile
    schema = copy.deepcopy(model.model_json_schema(by_alias=True, mode="validation"))
    defs = schema.get("$defs", {})
    restrictions: list[tuple[Iterable[str] | None, list[tuple[str, str]]]] = [
        (fields, [("CollectSpec", "fields"), ("FlowSpec", "clear_on_start"), ("FlowSpec", "collect")]),
        (tools, [("ActionSpec", "tool"), ("ReplySpec", "tools"), ("FlowSpec", "tools")]),
        (actions, [("ActionSpec", "do")]),
        (events, [("WaitSpec", "event"), ("EventTriggerSpec", "name")]),
        (conditions, [("ConditionCall", "name")]),
    ]
    for values, places in restrictions:
        if values is None:
            continue
        names = _names(values)
        for definition, prop in places:
            _restrict(defs[definition]["properties"][prop], names)
    schema["$id"] = SCHEMA_IDS[kind]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
