"""The v1 -> v2 compatibility normaliser, for definitions without ``schemaVersion``.

- ``globals`` -> ``defaults`` (``approval_mode`` -> ``approval``, ``auto_approve`` -> ``auto``,
  ``research_depth`` -> ``researchDepth``, ``auto_review`` -> ``autoReview``, ``cli_mode`` ->
  ``cliMode``, ``run_input`` kept; anything else -> ``defaults.parameters``; ``subagent_mode``
  dropped); ``${key}`` bindings are rewritten to ``${defaults.<mapped>}`` /
  ``${defaults.parameters.<key>}``.
- ``metadata``/``meta`` -> ``meta``; top-level ``requires`` joins the entry node's (or the first
  node's) ``run.assets``.
- ``type: skill`` + ``data.skill`` -> an ``agent`` node with a ``skill:<name>`` asset; its
  instruction is ``data.parameters.instructions``, else the node ``description`` (the only case
  a description is executed); other parameters -> ``contract.input``.
- ``data.approval.mandatory`` -> ``gate.approval: mandatory``; ``optional``/``parallel_group`` ->
  ``control``; ``data.subagent`` dropped.
- ``type: sub-flow`` + ``data.flow`` -> a ``sub-flow`` node with a ``flow:<id>`` asset
  (``data.pass_context`` -> ``passContext``).
- any other type (group, router, gate, ...) -> an inert ``router`` placeholder with
  ``contract.requires: [{expr: "false"}]`` and ``control.optional: true``: it never becomes
  available, so its outgoing hard edges keep blocking.
- edges are kept; a missing ``type`` becomes ``optional``, a missing ``id`` is generated.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["normalize_v1"]

_GLOBALS = {
    "approval_mode": "approval",
    "auto_approve": "auto",
    "research_depth": "researchDepth",
    "auto_review": "autoReview",
    "cli_mode": "cliMode",
    "run_input": "run_input",
}
_DEFAULT_KEYS = {"approval", "researchDepth", "autoReview", "verbosity", "cliMode", "run_input"}
_KEY_BINDING = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _defaults(globals_: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    defaults: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    rename: dict[str, str] = {}
    for key, value in globals_.items():
        if key == "subagent_mode":
            continue
        mapped = _GLOBALS.get(key, key if key in _DEFAULT_KEYS else None)
        if mapped is None:
            parameters[key] = value
            rename[key] = f"defaults.parameters.{key}"
        else:
            defaults[mapped] = value
            rename[key] = f"defaults.{mapped}"
    if parameters:
        defaults["parameters"] = parameters
    return defaults, rename


def _rewrite(value: Any, rename: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _KEY_BINDING.sub(lambda m: "${" + rename.get(m.group(1), m.group(1)) + "}", value)
    if isinstance(value, list):
        return [_rewrite(v, rename) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, rename) for k, v in value.items()}
    return value


def _node(raw: dict[str, Any], rename: dict[str, str]) -> dict[str, Any]:
    data = dict(raw.get("data") or {})
    description = str(raw.get("description") or raw.get("label") or raw["id"])
    node: dict[str, Any] = {"id": raw["id"], "label": str(raw.get("label") or raw["id"]), "description": description}
    kind = raw.get("type")
    control: dict[str, Any] = {}
    if kind == "skill" and data.get("skill"):
        parameters = dict(data.get("parameters") or {})
        instruction = parameters.pop("instructions", None) or description
        node["run"] = {"kind": "agent", "instruction": _rewrite(instruction, rename),
                       "assets": [f"skill:{data['skill']}"]}
        if parameters:
            node["contract"] = {"input": _rewrite(parameters, rename)}
        if (data.get("approval") or {}).get("mandatory"):
            node["gate"] = {"approval": "mandatory"}
    elif kind == "sub-flow" and data.get("flow"):
        node["run"] = {"kind": "sub-flow", "flow": data["flow"], "assets": [f"flow:{data['flow']}"]}
        if data.get("pass_context"):
            node["run"]["passContext"] = True
    else:
        node["run"] = {"kind": "router", "routes": [{"when": "false", "target": None}]}
        node["contract"] = {"requires": [{"expr": "false", "message": f"legacy {kind or 'untyped'} node (inert)"}]}
        control["optional"] = True
    if raw.get("optional"):
        control["optional"] = True
    if raw.get("parallel_group"):
        control["parallelGroup"] = raw["parallel_group"]
    if control:
        node["control"] = control
    return node


def normalize_v1(definition: dict[str, Any]) -> dict[str, Any]:
    """The v2 form of a legacy (v1) definition; the result is then parsed strictly."""
    defaults, rename = _defaults(dict(definition.get("globals") or {}))
    nodes = [_node(raw, rename) for raw in definition.get("nodes") or [] if isinstance(raw, dict) and "id" in raw]
    result: dict[str, Any] = {
        "schemaVersion": 2,
        "id": definition.get("id"),
        "version": str(definition.get("version", "1")),
        "name": definition.get("name") or definition.get("id"),
        "nodes": nodes,
        "edges": [],
    }
    if definition.get("description"):
        result["description"] = definition["description"]
    if defaults:
        result["defaults"] = defaults
    meta = definition.get("meta") or definition.get("metadata")
    if meta:
        result["meta"] = meta
    requires = list(definition.get("requires") or [])
    if requires and nodes:
        entry = definition.get("entry")
        target = next((n for n in nodes if n["id"] == entry), nodes[0])
        target["run"]["assets"] = [*target["run"].get("assets", []), *requires]
    if definition.get("entry"):
        result["entry"] = definition["entry"]
    for index, raw in enumerate(definition.get("edges") or []):
        edge = {"id": raw.get("id") or f"e{index}-{raw.get('source')}-{raw.get('target')}",
                "source": raw.get("source"), "target": raw.get("target"), "type": raw.get("type") or "optional"}
        result["edges"].append(edge)
    return result
