"""The request and response bodies of the HTTP API, as pydantic models (the OpenAPI document is
built from their JSON schemas)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tether.server.openai_bodies import ChatCompletionBody, ChatMessageIn, ResponsesBody

__all__ = [
    "AgentInfo",
    "AgentList",
    "ApprovalBody",
    "ChatCompletionBody",
    "ChatMessageIn",
    "Envelope",
    "ErrorBody",
    "EventBody",
    "EventPage",
    "FlowBody",
    "FlowInfo",
    "FlowRegistered",
    "HandoffList",
    "MessageBody",
    "OperatorMessageBody",
    "OperatorMessageSaid",
    "ReleaseBody",
    "ResponsesBody",
    "SessionCreated",
    "SessionList",
    "SessionState",
    "SignalBody",
    "StartBody",
    "TenantCosts",
    "TranscriptPage",
    "WorkflowApproveBody",
    "WorkflowCancelBody",
    "WorkflowInputBody",
    "WorkflowList",
    "WorkflowRejectBody",
    "WorkflowRetryBody",
    "WorkflowRunList",
    "WorkflowRunStartBody",
    "WorkflowRunState",
]

_STRICT = ConfigDict(extra="forbid")


class StartBody(BaseModel):
    """``POST /v1/agents/{agent}/sessions``: optionally start flow ``flow`` with ``input``."""

    model_config = _STRICT

    flow: str | None = Field(default=None, description="a flow to start by hand (a Start input)")
    input: Any = Field(default=None, description="the start input handed to the flow")
    key: str = Field(default="", description="keys the started run (idempotency)")


class MessageBody(BaseModel):
    """``POST .../messages``: the customer's text. ``id`` (or the ``Idempotency-Key`` header) is the
    client message id: the same id again returns the first answer."""

    model_config = _STRICT

    text: str
    id: str | None = Field(default=None, max_length=200)


class EventBody(BaseModel):
    """``POST .../events``: the host reports event ``name`` (``key`` deduplicates)."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    payload: Any = None
    key: str = ""


class ApprovalBody(BaseModel):
    """``POST .../approvals/{approval_id}``: a human's decision."""

    model_config = _STRICT

    decision: Literal["approved", "rejected"] | bool
    feedback: str | None = None
    decided_by: str | None = None


class SignalBody(BaseModel):
    """``POST .../signals/{name}``: deliver a signal (``id`` deduplicates deliveries)."""

    model_config = _STRICT

    payload: Any = None
    id: str | None = None


class OperatorMessageBody(BaseModel):
    """``POST .../operator-messages``: what a person who has the session says to the customer."""

    model_config = _STRICT

    text: str = Field(min_length=1, description="the message to the customer")
    by: str = Field(min_length=1, max_length=200, description="who says it (shown as the message's author)")


class ReleaseBody(BaseModel):
    """``POST .../release`` (optional): who gives the session back to the bot."""

    model_config = _STRICT

    by: str | None = Field(default=None, max_length=200)


class TenantCosts(BaseModel):
    """``GET /v1/costs``: what the caller's tenant spent (its latest sessions, up to 1,000):
    ``sessions``, ``tokens_in``, ``tokens_out``, ``calls``, ``estimated_cost``, ``today`` (the
    cost of this UTC day), and the ``prices`` and ``budgets`` in force."""

    tenant: str
    sessions: int
    tokens_in: int
    tokens_out: int
    calls: int
    estimated_cost: float
    currency: str
    today: float
    prices: dict[str, Any]
    budgets: dict[str, Any]


class OperatorMessageSaid(BaseModel):
    """The transcript message an operator's message was stored as (``role: "agent"``, ``by``)."""

    session: str
    message: dict[str, Any]


class HandoffList(BaseModel):
    """``GET /v1/handoffs``: sessions waiting for a person, oldest hand-off first; each with
    ``session``, ``agent``, ``since`` (the hand-off), ``reason``, ``customer_messages`` and
    ``operator_messages`` (since the hand-off) and ``last_customer_message``. ``next``: the
    ``after`` of the next page (``null`` on the last)."""

    sessions: list[dict[str, Any]]
    next: str | None = None


class Envelope(BaseModel):
    """The seed 004 response envelope."""

    success: bool
    completed: bool
    message: str
    session: str
    content_type: str = "text/plain"
    code: str | None = None


class ErrorBody(BaseModel):
    """Every error answer."""

    success: Literal[False] = False
    code: str
    message: str
    details: Any = None


class FlowInfo(BaseModel):
    """A flow of an agent with its mermaid graph."""

    id: str
    description: str
    start: str
    nodes: list[str]
    mermaid: str


class AgentInfo(BaseModel):
    """A registered agent."""

    id: str
    name: str
    flows: list[FlowInfo]


class AgentList(BaseModel):
    """``GET /v1/agents``."""

    agents: list[AgentInfo]


class SessionCreated(BaseModel):
    """``POST /v1/agents/{agent}/sessions``: the new session, and the start turn's envelope if any."""

    session: str
    agent: str
    status: str
    reply: Envelope | None = None


class SessionState(BaseModel):
    """``GET .../{id}``: the session document's state (without its transcript window), its runs,
    the approvals its runs wait on, what it spent and its log entries.

    ``usage`` holds ``llm_calls``, ``agent_calls``, ``workflow_calls`` and the token counts
    (``prompt_tokens``, ``completion_tokens``, ``cached_input_tokens``, ``cache_creation_tokens``,
    ``reasoning_tokens``). ``cost`` is what the runtime tallied of its model calls: ``tokens_in``,
    ``tokens_out``, ``calls``, ``estimated_cost`` (US dollars, from the operator's price table;
    ``unpriced_calls`` had no price), ``currency`` and ``by_model``. ``log``, ``warn`` and
    ``error`` are the entries the session keeps (the
    engine keeps the newest 100 of each), oldest first: ``at``, ``level``, ``message`` and any details (``code``,
    ``flow``, ``node``, ...).
    """

    id: str
    agent: str
    tenant: str
    status: str
    revision: int
    created_at: str
    saved_at: str | None
    data: dict[str, Any]
    runs: list[dict[str, Any]]
    pending_approvals: list[dict[str, Any]]
    waiting: list[dict[str, Any]]
    usage: dict[str, int]
    cost: dict[str, Any]
    log: list[dict[str, Any]]
    warn: list[dict[str, Any]]
    error: list[dict[str, Any]]


class SessionList(BaseModel):
    """``GET /v1/agents/{agent}/sessions``: the caller's sessions, newest saved first. ``next``:
    the ``after`` of the next page (``null`` on the last)."""

    sessions: list[dict[str, Any]]
    next: str | None = None


class TranscriptPage(BaseModel):
    """``GET .../transcript?after=SEQ&limit=N``; ``next`` is the ``after`` of the next page."""

    messages: list[dict[str, Any]]
    next: int | None


class EventPage(BaseModel):
    """``GET .../events?after=SEQ&limit=N``; ``next`` is the ``after`` of the next page."""

    events: list[dict[str, Any]]
    next: int | None


class FlowBody(BaseModel):
    """``PUT /v1/agents/{agent}/flows/{flow}``: a flow file as JSON (``{"flow": {...}}``, see
    ``docs/flow-files.md``); its ``id`` must be the path's."""

    model_config = _STRICT

    flow: dict[str, Any]


class FlowRegistered(BaseModel):
    """The flow version the agent now serves to new runs."""

    flow: str
    version: str | None
    digest: str


_BY = Field(default=None, max_length=200, description="who acts (recorded on the run's event, and as the "
            "decision's or answer's author)")


class WorkflowRunStartBody(BaseModel):
    """``POST /v1/workflows/{workflow}/runs``: a new run, stored for the workers."""

    model_config = _STRICT

    input: dict[str, Any] = Field(default_factory=dict, description="the run input (over the workflow's defaults)")
    autonomous: bool = Field(default=False, description="no pauses but mandatory approvals, gates and escalations")
    run: str | None = Field(default=None, min_length=1, max_length=200, description="the run id (default: a new "
                            "UUID); a run id already stored is a 409")


class WorkflowApproveBody(BaseModel):
    """``POST .../nodes/{node}/approve``: approve the node's pending approval."""

    model_config = _STRICT

    by: str | None = _BY
    feedback: str | None = Field(default=None, description="a note (needed to override a failed check)")
    response: Any = Field(default=None, description="a gate's response, in the gate's schema")


class WorkflowRejectBody(BaseModel):
    """``POST .../nodes/{node}/reject``: reject the node's pending approval, saying why."""

    model_config = _STRICT

    by: str | None = _BY
    feedback: str = Field(min_length=1, description="why: the agent (or whoever asked) gets it to revise")


class WorkflowInputBody(BaseModel):
    """``POST .../nodes/{node}/input``: answer the node's input request."""

    model_config = _STRICT

    by: str | None = _BY
    response: Any = Field(description="the answer, in the request's schema")


class WorkflowRetryBody(BaseModel):
    """``POST .../nodes/{node}/retry`` (optional): return a failed node to admission."""

    model_config = _STRICT

    by: str | None = _BY


class WorkflowCancelBody(BaseModel):
    """``POST /v1/workflow-runs/{run}/cancel`` (optional): cancel the run."""

    model_config = _STRICT

    by: str | None = _BY
    reason: str | None = Field(default=None, max_length=2000, description="recorded on the nodes it stops")


class WorkflowList(BaseModel):
    """``GET /v1/workflows``: the workflows this server starts runs of (``id``, ``file``, ``nodes``)."""

    workflows: list[dict[str, Any]]


class WorkflowRunList(BaseModel):
    """``GET /v1/workflow-runs``: the caller's runs, newest saved first: each with ``run``,
    ``workflow``, ``status``, ``waiting`` (what it waits on: ``approval``, ``input``, ``agent``,
    ``worker``, ``failed``, ``blocked`` or ``null``), ``waiting_on`` (the details), ``created_at``,
    ``saved_at``. ``next``: the ``after`` of the next page (``null`` on the last)."""

    runs: list[dict[str, Any]]
    next: str | None = None


class WorkflowRunState(BaseModel):
    """``GET /v1/workflow-runs/{run}`` and every action's answer: the run (``run``, ``workflow``,
    ``version``, ``status``, ``waiting``, ``waiting_on``, ``input``, ``output``, ``autonomous``,
    ``model_calls``, ``usage``), its ``nodes`` (each node's state: status, generation, attempts
    with their verdicts, approvals, input request, error) and its latest ``events``."""

    run: str
    workflow: str
    status: str
    waiting: str | None = None
    waiting_on: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    events: list[dict[str, Any]] = Field(default_factory=list)
