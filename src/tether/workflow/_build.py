"""Building workflows in Python: small constructors over the contract models.

>>> wf = workflow("release", nodes=[function_node("build", "make")], edges=[])
>>> wf.nodes[0].run.kind
'function'
"""

from __future__ import annotations

from typing import Any

from tether.workflow._contract import Edge, EdgeType, Node, Workflow

__all__ = ["agent_node", "check_node", "edge", "function_node", "gate_node", "router_node", "subflow_node",
           "subprompt_node", "workflow"]


def workflow(id: str, *, nodes: list[Node], edges: list[Edge], name: str | None = None, version: str = "1",
             **fields: Any) -> Workflow:
    """A v2 :class:`Workflow` (``fields``: ``input``, ``output``, ``defaults``, ``entry``, ``meta``, ...)."""
    return Workflow.model_validate({"schemaVersion": 2, "id": id, "version": version, "name": name or id,
                                    "nodes": nodes, "edges": edges, **fields})


def edge(source: str, target: str, type: EdgeType = "flow", id: str | None = None) -> Edge:
    """An edge (id ``source->target`` unless given)."""
    return Edge(id=id or f"{source}->{target}", source=source, target=target, type=type)


def _node(id: str, run: dict[str, Any], label: str | None, description: str | None, fields: dict[str, Any]) -> Node:
    return Node.model_validate({"id": id, "label": label or id, "description": description or id, "run": run,
                                **fields})


def function_node(id: str, command: str | list[str], *, label: str | None = None, description: str | None = None,
                  run: dict[str, Any] | None = None, **fields: Any) -> Node:
    """A ``function`` node (``run`` adds run keys: runtime, cwd, successExit, capture, env)."""
    return _node(id, {"kind": "function", "command": command, **(run or {})}, label, description, fields)


def check_node(id: str, command: str | list[str], *, label: str | None = None, description: str | None = None,
               run: dict[str, Any] | None = None, **fields: Any) -> Node:
    """A ``check`` node (``run`` adds run keys, e.g. ``{"onFail": "fail"}``)."""
    return _node(id, {"kind": "check", "command": command, **(run or {})}, label, description, fields)


def gate_node(id: str, prompt: str, schema: dict[str, Any] | None = None, *, label: str | None = None,
              description: str | None = None, **fields: Any) -> Node:
    """A ``gate`` node (``schema`` defaults to a text answer)."""
    run = {"kind": "gate", "prompt": prompt, "schema": schema or {"kind": "text"}}
    return _node(id, run, label, description, fields)


def router_node(id: str, routes: list[tuple[str, str | None]], *, label: str | None = None,
                description: str | None = None, **fields: Any) -> Node:
    """A ``router`` node from ``(when, target)`` pairs (``when="default"`` is the catch-all)."""
    run = {"kind": "router", "routes": [{"when": when, "target": target} for when, target in routes]}
    return _node(id, run, label, description, fields)


def subflow_node(id: str, flow: str, *, pass_context: bool = False, label: str | None = None,
                 description: str | None = None, **fields: Any) -> Node:
    """A ``sub-flow`` node running workflow ``flow`` inline."""
    return _node(id, {"kind": "sub-flow", "flow": flow, "passContext": pass_context}, label, description, fields)


def subprompt_node(id: str, instruction: str, *, model: str | None = None, label: str | None = None,
                   description: str | None = None, **fields: Any) -> Node:
    """A ``subprompt`` node: one isolated model call (``model``: a tier, ``small``/``default``/``deep``)."""
    run: dict[str, Any] = {"kind": "subprompt", "instruction": instruction}
    if model is not None:
        run["model"] = model
    return _node(id, run, label, description, fields)


def agent_node(id: str, instruction: str, *, model: str | None = None, assets: list[str] | None = None,
               label: str | None = None, description: str | None = None, **fields: Any) -> Node:
    """An ``agent`` node, worked by the model through the flow tools."""
    run: dict[str, Any] = {"kind": "agent", "instruction": instruction, "assets": assets or []}
    if model is not None:
        run["model"] = model
    return _node(id, run, label, description, fields)
