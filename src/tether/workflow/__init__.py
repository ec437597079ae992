"""tether.workflow: declared-edge workflows (seed 001), the pure half.

This package is pure (no I/O, no clock, no randomness): the v2 definition contract
(:class:`Workflow`, loaded by :func:`load_workflow` from a mapping or JSON/YAML text, legacy v1
definitions normalised), its JSON Schema (:func:`workflow_json_schema`), the compiled graph
(:class:`WorkflowGraph`), the run snapshot (:class:`WorkflowSnapshot`) and the state machine:
:func:`mutate` plus the operations in :mod:`tether.workflow.ops`.

The host that drives a run on the process executor and saves it in a store is
:class:`tether.workflow_host.WorkflowRun`.
"""

from tether.workflow import _ops as ops
from tether.workflow._build import (
    agent_node,
    check_node,
    edge,
    function_node,
    gate_node,
    router_node,
    subflow_node,
    subprompt_node,
    workflow,
)
from tether.workflow._contract import Edge, Node, Workflow
from tether.workflow._derive import derive, mutate, new_snapshot, resolve_bindings, scope
from tether.workflow._expr import Wait, compile_expression
from tether.workflow._graph import WorkflowGraph, compile_workflow
from tether.workflow._load import load_workflow, parse_workflow, workflow_json_schema
from tether.workflow._normalize import normalize_v1
from tether.workflow._state import Approval, Attempt, NodeOutput, NodeState, WorkflowSnapshot

__all__ = [
    "Approval",
    "Attempt",
    "Edge",
    "Node",
    "NodeOutput",
    "NodeState",
    "Wait",
    "Workflow",
    "WorkflowGraph",
    "WorkflowSnapshot",
    "agent_node",
    "check_node",
    "compile_expression",
    "compile_workflow",
    "derive",
    "edge",
    "function_node",
    "gate_node",
    "load_workflow",
    "mutate",
    "new_snapshot",
    "normalize_v1",
    "ops",
    "parse_workflow",
    "resolve_bindings",
    "router_node",
    "scope",
    "subflow_node",
    "subprompt_node",
    "workflow",
    "workflow_json_schema",
]
