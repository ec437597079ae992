"""The OpenAPI 3.1 document of the HTTP API, assembled from the pydantic body models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tether.server import bodies

__all__ = ["ROUTES", "openapi_document"]

_S = "/v1/agents/{agent}/sessions/{session_id}"
_R = "/v1/workflow-runs/{run}"

ROUTES: list[tuple[str, str, str, type[BaseModel] | None, type[BaseModel] | None, int]] = [
    # (method, path, summary, request body, response body, success status)
    ("get", "/", "An index of the server's places (a browser asking for HTML is sent to /inspect/)", None, None, 200),
    ("get", "/healthz", "The process is up", None, None, 200),
    ("get", "/readyz", "The store is reachable and the wake scheduler alive", None, None, 200),
    ("get", "/v1/agents", "The agents, their flows and mermaid graphs", None, bodies.AgentList, 200),
    ("get", "/v1/models", "The agents as OpenAI-style models tether:<agent>", None, None, 200),
    ("post", "/v1/chat/completions", "OpenAI-compatible chat completion with agent tether:<agent> "
     "(stream: true answers chat.completion.chunk events)", bodies.ChatCompletionBody, None, 200),
    ("post", "/v1/responses", "OpenAI Responses API (text) with agent tether:<agent> (stream: true answers "
     "response.* events)", bodies.ResponsesBody, None, 200),
    ("get", "/v1/agents/{agent}/sessions", "The caller's sessions of an agent", None, bodies.SessionList, 200),
    ("post", "/v1/agents/{agent}/sessions", "Start a session (optionally a flow)", bodies.StartBody,
     bodies.SessionCreated, 201),
    ("post", "/v1/agents/{agent}/messages", "A conversation's first message: creates its session (the envelope's "
     "session is the id to use next)", bodies.MessageBody, bodies.Envelope, 200),
    ("get", _S, "Session state, runs and pending approvals", None, bodies.SessionState, 200),
    ("delete", _S, "Delete a session and its records", None, None, 204),
    ("post", _S + "/messages", "Send a message; the seed 004 envelope (SSE with Accept: text/event-stream)",
     bodies.MessageBody, bodies.Envelope, 200),
    ("get", _S + "/transcript", "The transcript, paged (after, limit)", None, bodies.TranscriptPage, 200),
    ("get", _S + "/events", "The event records, paged (after, limit)", None, bodies.EventPage, 200),
    ("post", _S + "/events", "Report a host event", bodies.EventBody, bodies.Envelope, 200),
    ("get", _S + "/stream", "The event records as server-sent events, live (Last-Event-ID or after resumes)",
     None, None, 200),
    ("post", _S + "/approvals/{approval_id}", "Decide a pending approval", bodies.ApprovalBody, bodies.Envelope, 200),
    ("post", _S + "/signals/{name}", "Deliver a signal", bodies.SignalBody, bodies.Envelope, 200),
    ("post", _S + "/release", "Give a handed-off session back to the bot (operators)", bodies.ReleaseBody, None, 200),
    ("post", _S + "/operator-messages", "A person who has the handed-off session answers the customer (operators)",
     bodies.OperatorMessageBody, bodies.OperatorMessageSaid, 200),
    ("get", "/v1/costs", "What the caller's tenant spent, with the prices and budgets in force", None,
     bodies.TenantCosts, 200),
    ("get", "/v1/handoffs", "The sessions waiting for a person, oldest hand-off first (operators)", None,
     bodies.HandoffList, 200),
    ("get", "/v1/workflows", "The workflows this server starts runs of (tether serve --workflows DIR)", None,
     bodies.WorkflowList, 200),
    ("post", "/v1/workflows/{workflow}/runs", "Start a run of a workflow, stored for the workers (tether worker)",
     bodies.WorkflowRunStartBody, bodies.WorkflowRunState, 201),
    ("get", "/v1/workflow-runs", "The caller's workflow runs, newest saved first, with what each waits on (filters: "
     "status, waiting, workflow; paged: limit, after)", None, bodies.WorkflowRunList, 200),
    ("get", _R, "A workflow run: its nodes, what it waits on, attempts and verdicts, latest events", None,
     bodies.WorkflowRunState, 200),
    ("post", _R + "/cancel", "Cancel a workflow run (operators)", bodies.WorkflowCancelBody, bodies.WorkflowRunState,
     200),
    ("post", _R + "/nodes/{node}/approve", "Approve a node's pending approval (operators)", bodies.WorkflowApproveBody,
     bodies.WorkflowRunState, 200),
    ("post", _R + "/nodes/{node}/reject", "Reject a node's pending approval with feedback (operators)",
     bodies.WorkflowRejectBody, bodies.WorkflowRunState, 200),
    ("post", _R + "/nodes/{node}/input", "Answer a node's input request (operators)", bodies.WorkflowInputBody,
     bodies.WorkflowRunState, 200),
    ("post", _R + "/nodes/{node}/retry", "Retry a failed node (operators)", bodies.WorkflowRetryBody,
     bodies.WorkflowRunState, 200),
    ("put", "/v1/agents/{agent}/flows/{flow}", "Register a new version of a flow (a flow file as JSON); 422 lists "
     "every issue", bodies.FlowBody, bodies.FlowRegistered, 200),
]

_ERRORS = {"400": "bad JSON, an unsupported parameter, or a history that names no conversation",
           "401": "no or bad API key",
           "403": "another tenant's session, or an operator route without an operator key",
           "404": "unknown agent, session, workflow, run (or another tenant's run), node or route",
           "409": "the session is not handed off (operator-messages); the run cannot take the action now",
           "413": "body too large", "422": "invalid body or query"}


def _ref(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, str]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        schemas[name] = sub
    schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _parameters(path: str) -> list[dict[str, Any]]:
    names = [part[1:-1] for part in path.split("/") if part.startswith("{")]
    params: list[dict[str, Any]] = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                                    for n in names]
    if path.endswith(("/transcript", "/events", "/sessions", "/handoffs")):
        params += [{"name": n, "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}}
                   for n in (("after", "limit") if path.endswith(("/transcript", "/events")) else ("limit",))]
    if path.endswith(("/sessions", "/handoffs", "/workflow-runs")):
        params.append({"name": "after", "in": "query", "required": False, "schema": {"type": "string"}})
    if path.endswith("/workflow-runs"):
        params += [{"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
                   *({"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                     for n in ("status", "waiting", "workflow"))]
    if path.endswith("/stream"):
        params += [{"name": "after", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}},
                   {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}}]
    if path in ("/v1/chat/completions", "/v1/responses"):
        params.append({"name": "X-Tether-Session", "in": "header", "required": False, "schema": {"type": "string"}})
    if path.endswith("/messages") or path in ("/v1/chat/completions", "/v1/responses"):
        params.append({"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}})
    return params


def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI document describing every route."""
    schemas: dict[str, Any] = {}
    error = _ref(bodies.ErrorBody, schemas)
    paths: dict[str, dict[str, Any]] = {}
    for method, path, summary, request, response, status in ROUTES:
        responses: dict[str, Any] = {str(status): {"description": "OK"}}
        if response is not None:
            responses[str(status)]["content"] = {"application/json": {"schema": _ref(response, schemas)}}
        if path.endswith("/stream"):
            responses[str(status)]["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
        if path.startswith("/v1"):
            responses.update({code: {"description": text, "content": {"application/json": {"schema": error}}}
                              for code, text in _ERRORS.items()})
        operation: dict[str, Any] = {"summary": summary, "operationId": f"{method}_{path}", "responses": responses}
        parameters = _parameters(path)
        if parameters:
            operation["parameters"] = parameters
        if request is not None:
            # an empty body is the defaults
            optional = request in (bodies.StartBody, bodies.SignalBody, bodies.ReleaseBody, bodies.WorkflowRunStartBody,
                                   bodies.WorkflowApproveBody, bodies.WorkflowRetryBody, bodies.WorkflowCancelBody)
            operation["requestBody"] = {"required": not optional,
                                        "content": {"application/json": {"schema": _ref(request, schemas)}}}
        paths.setdefault(path, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "tether", "version": version},
        "paths": paths,
        "components": {"schemas": schemas,
                       "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}}},
        "security": [{"apiKey": []}],
    }
