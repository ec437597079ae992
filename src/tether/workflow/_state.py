"""The run snapshot: one JSON document per workflow run (a mutation returns a new snapshot).

Node states: ``pending`` (not yet admitted) -> ``available`` -> ``running`` ->
``awaiting_approval`` | ``awaiting_input`` -> ``complete`` | ``failed`` | ``skipped``.

Provenance fields are optional on purpose: a snapshot written before they existed hydrates,
and its producers read fail-closed as agent-obtained (``obtained_by``/``input_origins`` absent).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from tether.executors.provenance import ObtainedBy, Origin

__all__ = [
    "Approval",
    "Attempt",
    "InputRequest",
    "NodeOutput",
    "NodeState",
    "NodeStatus",
    "RunStatus",
    "SETTLED",
    "WorkflowSnapshot",
]

NodeStatus = Literal[
    "pending", "available", "running", "awaiting_approval", "awaiting_input", "complete", "failed", "skipped"
]
RunStatus = Literal["running", "waiting", "blocked", "complete", "failed", "cancelled"]
SETTLED = frozenset({"complete", "skipped"})
"""Statuses that satisfy a hard ``flow`` edge."""

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True)


class NodeOutput(BaseModel):
    """What a node produced: ``fields`` (captures, decisions), a ``summary``, a router's ``selected``."""

    model_config = _CONFIG

    fields: dict[str, JsonValue] = Field(default_factory=dict)
    summary: str | None = None
    selected: list[str] | None = None


class Attempt(BaseModel):
    """One settled attempt of a deterministic node (the output history).

    ``verdict`` is a check's :class:`~tether.executors.CheckVerdict` in JSON form: it stays with a
    failed check even after an override completes the node. ``summary`` is a subprompt's reply,
    kept on a failed attempt too. ``in_doubt``: the attempt was in flight when its host stopped (a
    worker killed mid-node), so whether its command ran is unknown (see
    :func:`tether.workflow.ops.resolve_in_doubt`).
    """

    model_config = _CONFIG

    generation: int
    status: Literal["complete", "failed"]
    error: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    spawn_failed: bool = False
    in_doubt: bool = False
    fields: dict[str, JsonValue] = Field(default_factory=dict)
    summary: str | None = None
    verdict: dict[str, Any] | None = None
    process: dict[str, Any] | None = None


class Approval(BaseModel):
    """A request for a human decision on a node, and the decision once made.

    ``kind``: ``gate`` (a first-class gate), ``checkpoint`` (a node's ``gate.approval``),
    ``check`` (an escalated failed check: ``check`` holds its id, exit status and provenance),
    ``sub-flow`` (a child run's gate, projected onto the parent node: ``child_node``) or
    ``agent`` (an agent node's ``request_approval``: ``proposed`` is the output it asks to
    complete with; a rejection sends the node back to the agent with the feedback).
    """

    model_config = _CONFIG

    kind: Literal["gate", "checkpoint", "check", "sub-flow", "agent"]
    summary: str
    schema_: dict[str, JsonValue] | None = Field(default=None, alias="schema")
    check: dict[str, JsonValue] | None = None
    child_node: str | None = None
    proposed: NodeOutput | None = None
    request: int = 1
    decision: Literal["approved", "rejected"] | None = None
    feedback: str | None = None
    decided_by: str | None = None
    response: JsonValue = None


class InputRequest(BaseModel):
    """A request for typed input on a node, and the answer once given (``child_node``: a child
    run's request, projected onto its parent sub-flow node)."""

    model_config = _CONFIG

    prompt: str
    schema_: dict[str, JsonValue] = Field(alias="schema")
    response: JsonValue = None
    provided_by: str | None = None
    child_node: str | None = None


class NodeState(BaseModel):
    """One node's execution state.

    Attributes:
        status: see the module docstring.
        generation: bumped whenever an attempt starts or the node is reset; an attempt whose
            generation is no longer current is stale and its result is discarded.
        output: the settled output (complete nodes; a skipped router admits every branch).
        attempts / error_history: every settled attempt and every error, in order.
        obtained_by / input_origins: provenance of the output (``None``: unknown, fail-closed).
        skip_reason: ``pruned`` (a losing router branch), ``optional`` (an optional node failed),
            ``agent`` (the agent skipped an optional node).
        corrections: how many invalid ``complete_node`` outputs the agent sent (one correction
            is allowed; the second fails the node).
        blocked_by / failed_conditions / expression_error: derived on every mutation.
    """

    model_config = _CONFIG

    status: NodeStatus = "pending"
    generation: int = 0
    output: NodeOutput | None = None
    error: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    error_history: list[str] = Field(default_factory=list)
    approval: Approval | None = None
    approvals: list[Approval] = Field(default_factory=list)
    input_request: InputRequest | None = None
    obtained_by: ObtainedBy | None = None
    input_origins: dict[str, tuple[Origin, ...]] | None = None
    skip_reason: Literal["pruned", "optional", "agent"] | None = None
    corrections: int = 0
    blocked_by: list[str] = Field(default_factory=list)
    failed_conditions: list[str] = Field(default_factory=list)
    expression_error: str | None = None
    skipped_producer: str | None = None


class WorkflowSnapshot(BaseModel):
    """The whole state of one workflow run.

    ``workflow_digest`` is the digest of the definition the run was started with
    (:attr:`~tether.workflow.WorkflowGraph.digest`): the run is pinned to it, and a host refuses to
    load it under another definition. ``None``: unknown (a run saved before runs were pinned).
    ``stimuli`` are what the agent's next turn starts with (``input_received``,
    ``approval_received``); ``model_calls`` and ``usage`` count every model call the run made
    (subprompts and agent turns, its sub-flow children's included).
    """

    model_config = _CONFIG

    run_id: str
    workflow_id: str
    workflow_version: str
    workflow_digest: str | None = None
    status: RunStatus = "running"
    autonomous: bool = False
    input: dict[str, JsonValue] = Field(default_factory=dict)
    nodes: dict[str, NodeState]
    output: dict[str, JsonValue] | None = None
    mutations: int = 0
    stimuli: list[dict[str, JsonValue]] = Field(default_factory=list)
    model_calls: int = 0
    usage: dict[str, int] = Field(default_factory=dict)

    def node(self, node_id: str) -> NodeState:
        """The state of ``node_id`` (``KeyError`` when the workflow has no such node)."""
        return self.nodes[node_id]
