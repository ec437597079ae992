"""Building workflows in Python: one function per node kind, with keywords, no raw dicts.

>>> wf = workflow("release", nodes=[function_node("build", "make", stdout="artifact"),
...                                  check_node("test", "make test", timeout="10m", on_fail="fail")],
...               edges=[edge("build", "test")])
>>> wf.nodes[1].control.timeout_sec
600.0

Every builder takes the same node keywords: ``label``, ``description``, ``phase``; the node's
contract (``requires``: guard expressions, or ``(expression, message)`` pairs; ``inputs``:
binding name -> value or ``${expr}`` template; ``output``: the JSON Schema of the fields it
produces; ``artifacts``); ``approval`` (``"none"``, ``"optional"``, ``"mandatory"``); and its
control (``optional``, ``retries``, ``timeout``: seconds or ``"30s"``/``"5m"``/``"1h"``,
``parallel_group``). :func:`workflow` checks the graph (unique ids, edges, route targets, an
optional check, expressions) when it is built, raising
:class:`~tether.errors.WorkflowDefinitionError` with every problem.

The older forms (``run={"onFail": "fail"}``, ``control={"timeoutSec": 30}``,
``contract={...}``, ``gate={...}``) still work and warn (:class:`DeprecationWarning`) naming the
keyword that replaces them.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tether.workflow._contract import Edge, EdgeType, Node, Workflow
from tether.workflow._graph import compile_workflow

__all__ = ["agent_node", "check_node", "edge", "function_node", "gate_node", "parse_duration", "router_node",
           "subflow_node", "subprompt_node", "workflow"]

Approval = Literal["none", "optional", "mandatory"]
Guard = str | tuple[str, str]
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_OLD_FORMS = {"run": "the builder's keywords (for example on_fail=, stdout=, cwd=)",
              "control": "optional=, retries=, timeout=, parallel_group=",
              "contract": "requires=, inputs=, output=, artifacts=", "gate": "approval="}


def parse_duration(value: float | int | str) -> float:
    """Seconds from ``30``, ``2.5``, ``"30s"``, ``"250ms"``, ``"5m"`` or ``"1h"``."""
    if isinstance(value, bool):
        raise ValueError(f"timeout must be seconds or a duration like '30s', got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f"timeout {value!r} is not a duration: write seconds, or '250ms', '30s', '5m', '1h'")
    return float(match.group(1)) * _UNITS[match.group(2)]


def workflow(id: str, *, nodes: list[Node], edges: list[Edge], name: str | None = None, version: str = "1",
             **fields: Any) -> Workflow:
    """A v2 :class:`Workflow` (``fields``: ``input``, ``output``, ``defaults``, ``entry``, ``meta``,
    ``description``), checked as a graph now: a problem raises
    :class:`~tether.errors.WorkflowDefinitionError` here, not when the workflow is run."""
    built = Workflow.model_validate({"schema_version": 2, "id": id, "version": version, "name": name or id,
                                     "nodes": nodes, "edges": edges, **fields})
    compile_workflow(built)
    return built


def edge(source: str, target: str, type: EdgeType = "flow", id: str | None = None) -> Edge:
    """An edge (id ``source->target`` unless given)."""
    return Edge(id=id or f"{source}->{target}", source=source, target=target, type=type)


def _node(id: str, run: dict[str, Any], options: dict[str, Any]) -> Node:
    """A node from its ``run`` and the common keywords (plus any older raw-dict forms)."""
    old = {key: options.pop(key) for key in list(options) if key in _OLD_FORMS}
    if old:
        forms = ", ".join(f"{key}={{...}}" for key in old)
        instead = "; ".join(f"for {key}: {_OLD_FORMS[key]}" for key in old)
        warnings.warn(f"node {id!r}: {forms} is deprecated; use keywords ({instead})", DeprecationWarning,
                      stacklevel=3)
    label, description = options.pop("label", None), options.pop("description", None)
    phase = options.pop("phase", None)
    contract: dict[str, Any] = dict(old.get("contract") or {})
    if (requires := options.pop("requires", None)) is not None:
        contract["requires"] = [{"expr": g} if isinstance(g, str) else {"expr": g[0], "message": g[1]}
                                for g in requires]
    if (inputs := options.pop("inputs", None)) is not None:
        contract["input"] = dict(inputs)
    output, artifacts = options.pop("output", None), options.pop("artifacts", None)
    if output is not None or artifacts is not None:
        contract["output"] = {**({"fields": dict(output)} if output is not None else {}),
                              **({"artifacts": [{"name": a} if isinstance(a, str) else a for a in artifacts]}
                                 if artifacts is not None else {})}
    control: dict[str, Any] = dict(old.get("control") or {})
    for key in ("optional", "retries", "parallel_group"):
        if (value := options.pop(key, None)) is not None:
            control[key] = value
    if (timeout := options.pop("timeout", None)) is not None:
        control["timeout_sec"] = parse_duration(timeout)
    gate: dict[str, Any] = dict(old.get("gate") or {})
    if (approval := options.pop("approval", None)) is not None:
        gate["approval"] = approval
    if options:
        raise TypeError(f"node {id!r}: unknown keyword(s) {sorted(options)}")
    return Node.model_validate({"id": id, "label": label or id, "description": description or label or id,
                                "run": {**run, **(old.get("run") or {})}, "phase": phase, "contract": contract,
                                "gate": gate, "control": control})


def _process(kind: str, command: str | Sequence[str], runtime: str | None, cwd: str | None,
             success_exit: Sequence[int] | None, stdout: str | None, stderr: str | None,
             env: Sequence[str] | None, assets: Sequence[str] | None) -> dict[str, Any]:
    run: dict[str, Any] = {"kind": kind, "command": command if isinstance(command, str) else list(command)}
    if runtime is not None:
        run["runtime"] = runtime
    if cwd is not None:
        run["cwd"] = cwd
    if success_exit is not None:
        run["success_exit"] = list(success_exit)
    if stdout is not None or stderr is not None:
        run["capture"] = {k: f"fields.{v}" for k, v in (("stdout", stdout), ("stderr", stderr)) if v is not None}
    if env is not None:
        run["env"] = list(env)
    if assets is not None:
        run["assets"] = list(assets)
    return run


def function_node(id: str, command: str | Sequence[str], *, runtime: Literal["shell", "node", "python"] | None = None,
                  cwd: str | None = None, success_exit: Sequence[int] | None = None, stdout: str | None = None,
                  stderr: str | None = None, env: Sequence[str] | None = None, assets: Sequence[str] | None = None,
                  **node: Any) -> Node:
    """A ``function`` node: ``command`` runs as a subprocess for its effect. ``stdout``/``stderr``
    name the output field that captures the stream; ``env`` names parent environment variables
    (globs) it may inherit beyond the allow-list; ``success_exit`` the exit codes that succeed."""
    return _node(id, _process("function", command, runtime, cwd, success_exit, stdout, stderr, env, assets), node)


def check_node(id: str, command: str | Sequence[str], *, on_fail: Literal["escalate", "fail"] | None = None,
               runtime: Literal["shell", "node", "python"] | None = None, cwd: str | None = None,
               success_exit: Sequence[int] | None = None, stdout: str | None = None, stderr: str | None = None,
               env: Sequence[str] | None = None, assets: Sequence[str] | None = None, **node: Any) -> Node:
    """A ``check`` node: the exit status is the verdict. ``on_fail="escalate"`` (the default) parks
    a failure for a human; ``"fail"`` fails the node. A check cannot be ``optional``."""
    run = _process("check", command, runtime, cwd, success_exit, stdout, stderr, env, assets)
    if on_fail is not None:
        run["on_fail"] = on_fail
    return _node(id, run, node)


def gate_node(id: str, prompt: str, schema: Mapping[str, Any] | None = None, **node: Any) -> Node:
    """A ``gate`` node: parks for a human (``schema`` defaults to a text answer, for example
    ``{"kind": "choice", "options": ["ship", "hold"]}``)."""
    return _node(id, {"kind": "gate", "prompt": prompt, "schema": dict(schema or {"kind": "text"})}, node)


def router_node(id: str, routes: Sequence[tuple[str, str | None]], *, assets: Sequence[str] | None = None,
                **node: Any) -> Node:
    """A ``router`` node from ``(when, target)`` pairs (``when="default"`` is the catch-all)."""
    run: dict[str, Any] = {"kind": "router", "routes": [{"when": when, "target": target} for when, target in routes]}
    if assets is not None:
        run["assets"] = list(assets)
    return _node(id, run, node)


def subflow_node(id: str, flow: str, *, pass_context: bool = False, **node: Any) -> Node:
    """A ``sub-flow`` node running workflow ``flow`` inline."""
    return _node(id, {"kind": "sub-flow", "flow": flow, "pass_context": pass_context}, node)


def subprompt_node(id: str, instruction: str, *, model: str | None = None, assets: Sequence[str] | None = None,
                   **node: Any) -> Node:
    """A ``subprompt`` node: one isolated model call (``model``: a tier, ``small``/``default``/``deep``)."""
    run: dict[str, Any] = {"kind": "subprompt", "instruction": instruction}
    if model is not None:
        run["model"] = model
    if assets is not None:
        run["assets"] = list(assets)
    return _node(id, run, node)


def agent_node(id: str, instruction: str, *, model: str | None = None, assets: Sequence[str] | None = None,
               **node: Any) -> Node:
    """An ``agent`` node, worked by the model through the flow tools."""
    run: dict[str, Any] = {"kind": "agent", "instruction": instruction, "assets": list(assets or [])}
    if model is not None:
        run["model"] = model
    return _node(id, run, node)
