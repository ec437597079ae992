"""Loading workflow definitions: from a mapping, or from JSON or YAML text.

A definition with ``schemaVersion`` is parsed strictly as v2; one without goes through the v1
normaliser first. Every problem becomes a :class:`~tether.errors.DefinitionIssue` with a dot
path, the top level rendered ``<root>``::

    <root>: Unrecognized key: "whoops"
    nodes.0.run: Invalid discriminator value. Expected 'agent' | 'subprompt' | ... | 'sub-flow'
    nodes.0.run: Unrecognized key: "model"

The JSON Schema of the contract is generated from the models (:func:`workflow_json_schema`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from tether.errors import DefinitionIssue, WorkflowDefinitionError
from tether.pydantic_issues import validation_issues as shared_issues
from tether.syntax_errors import syntax_error
from tether.workflow._contract import Workflow
from tether.workflow._graph import WorkflowGraph, compile_workflow
from tether.workflow._normalize import normalize_v1

__all__ = [
    "CAMEL_KEYS",
    "SCHEMA_ID",
    "camel_keys",
    "load_workflow",
    "parse_workflow",
    "parse_workflow_text",
    "validation_issues",
    "workflow_json_schema",
]

SCHEMA_ID = "https://tether.dev/schemas/workflow/v2.json"
_TAGGED = {"run", "schema"}  # fields that are discriminated unions: pydantic adds the tag to the path


def _is_tag(loc: Sequence[int | str], index: int) -> bool:
    return index > 0 and loc[index - 1] in _TAGGED


def validation_issues(exc: ValidationError, workflow_id: str | None = None) -> list[DefinitionIssue]:
    """The issues of a pydantic validation error, with dot paths."""
    return shared_issues(exc, prefix="workflow", is_tag=_is_tag, flow=workflow_id)


def parse_workflow(data: Mapping[str, Any] | Workflow) -> WorkflowGraph:
    """Parse (and normalise v1) ``data``, check it and compile it.

    Raises :class:`WorkflowDefinitionError` listing every problem with its path.
    """
    if isinstance(data, Workflow):
        return compile_workflow(data)
    if not isinstance(data, Mapping):
        raise WorkflowDefinitionError(DefinitionIssue("workflow-not-object", "A workflow must be an object",
                                                      path="<root>"))
    raw = dict(data)
    if "schemaVersion" not in raw and "schema_version" not in raw:  # v2 keys are read in either case
        raw = normalize_v1(raw)
    workflow_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    try:
        workflow = Workflow.model_validate(raw)
    except ValidationError as exc:
        raise WorkflowDefinitionError(validation_issues(exc, workflow_id),
                                      title=f"workflow {workflow_id or '?'!r} is invalid") from None
    return compile_workflow(workflow)


def parse_workflow_text(text: str, fmt: Literal["json", "yaml"] = "yaml", source: str | None = None) -> WorkflowGraph:
    """Parse a definition from JSON or YAML text (YAML accepts JSON too); a syntax error says
    ``source:line:column`` (``source``: the file it came from)."""
    try:
        data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise WorkflowDefinitionError(DefinitionIssue("workflow-syntax", syntax_error(exc, source, fmt.upper()),
                                                      path="<root>")) from None
    return parse_workflow(data)


def load_workflow(source: Mapping[str, Any] | Workflow | str, fmt: Literal["json", "yaml"] = "yaml") -> WorkflowGraph:
    """A compiled workflow from a mapping, a :class:`Workflow` or JSON/YAML text."""
    if isinstance(source, str):
        return parse_workflow_text(source, fmt)
    return parse_workflow(source)


CAMEL_KEYS = {"schemaVersion": "schema_version", "successExit": "success_exit", "onFail": "on_fail",
              "maxSize": "max_size", "passContext": "pass_context", "timeoutSec": "timeout_sec",
              "parallelGroup": "parallel_group", "researchDepth": "research_depth", "autoReview": "auto_review",
              "cliMode": "cli_mode"}
"""Seed 001's camelCase keys of a workflow file, and the snake_case key each is written as."""


def camel_keys(data: Any, path: str = "") -> list[tuple[str, str, str]]:
    """``(path, key, snake_case key)`` for every camelCase key of seed 001 in ``data`` (a workflow
    file's contents): the older form of the file's keys, read as they are (``tether check`` lists
    them)."""
    found: list[tuple[str, str, str]] = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if key in CAMEL_KEYS:
                found.append((where, key, CAMEL_KEYS[key]))
            found += camel_keys(value, where)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            found += camel_keys(item, f"{path}.{index}" if path else str(index))
    return found


def workflow_json_schema() -> dict[str, Any]:
    """The JSON Schema of the v2 contract, generated from the models: the snake_case keys a file
    is written in (seed 001's camelCase files are read too, but this schema describes one form)."""
    schema = Workflow.model_json_schema(by_alias=False, mode="validation")
    _rename_field(schema, "$schema")
    _rename_field(schema.get("$defs", {}).get("GateRun", {}), "schema")
    schema["$id"] = SCHEMA_ID
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def _rename_field(model: dict[str, Any], key: str) -> None:
    """The ``schema_`` field of a model's JSON Schema, under the key a file writes it with."""
    properties = model.get("properties", {})
    if "schema_" in properties:
        properties[key] = properties.pop("schema_")
        model["required"] = [key if name == "schema_" else name for name in model.get("required", [])]
