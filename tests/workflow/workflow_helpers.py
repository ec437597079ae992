"""Small builders shared by the workflow tests."""

from __future__ import annotations

import copy
from typing import Any


def node(node_id: str, run: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A v2 node mapping."""
    return {"id": node_id, "label": node_id.title(), "description": f"the {node_id} step", "run": run, **fields}


def fn(node_id: str, command: str = "true", *, capture: str | None = None, kind: str = "function",
       run: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A function (or, with ``kind="check"``, a check) node; ``capture`` names the stdout field."""
    spec: dict[str, Any] = {"kind": kind, "command": command, **(run or {})}
    if capture:
        spec["capture"] = {"stdout": f"fields.{capture}"}
    return node(node_id, spec, **fields)


def definition(nodes: list[dict[str, Any]], edges: list[tuple[str, str]] | None = None,
               **fields: Any) -> dict[str, Any]:
    """A v2 workflow mapping with flow edges ``source -> target``."""
    return {
        "schemaVersion": 2, "id": "wf", "version": "1", "name": "Workflow",
        "nodes": copy.deepcopy(nodes),
        "edges": [{"id": f"{s}->{t}", "source": s, "target": t, "type": "flow"} for s, t in edges or []],
        **fields,
    }
