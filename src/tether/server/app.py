"""``create_app``: the Starlette ASGI app of the HTTP API.

Every ``/v1`` route resolves the caller's tenant first (401 without a valid key when keys are
configured), and every error is JSON with a stable code: an ``ApiError`` keeps its status, an
unknown route is 404 ``not-found``, a wrong method 405 ``method-not-allowed``, and anything else is
logged and answered 500 ``internal-error`` (a 500 is a bug). The app's lifespan loads the stored
flows, runs the wake scheduler, the stored flow refresh (other workers' publishes) and a worker of
the store's workflow run queue and, when the app built the runtime, closes it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tether.agent import Agent
from tether.dialect.registry import Registry
from tether.errors import FlowDefinitionError
from tether.flow.mermaid import flow_to_mermaid
from tether.models.tiers import ModelTiers
from tether.models.types import Model
from tether.runtime.costs import Budgets, PriceTable
from tether.runtime.runtime import Runtime
from tether.runtime.scheduler import WakeScheduler
from tether.runtime.stored_flows import StoredFlowRefresh, load_stored_flows, publish_flows
from tether.server.auth import KeyRing, keys_from_env, operator_keys_from_env
from tether.server.bodies import FlowBody, FlowRegistered
from tether.server.costs import tenant_costs
from tether.server.hot import MessageFastPath
from tether.server.inspector import inspector_routes
from tether.server.openai_compat import OpenAIRoutes
from tether.server.openai_responses import ResponsesRoute
from tether.server.openapi import openapi_document
from tether.server.problems import ApiError, error_answer, error_response
from tether.server.ready import StoreProbe
from tether.server.requests import DEFAULT_MAX_BODY, read_body
from tether.server.sessions import SessionRoutes
from tether.server.stream import KEEPALIVE, POLL
from tether.server.takeover import TakeoverRoutes
from tether.server.workflow_runs import WorkflowRunRoutes
from tether.stores import Store
from tether.workflow_host import RunQueueTask

__all__ = ["create_app"]

Handler = Callable[[Request], Awaitable[Response]]


def _guarded(keys: KeyRing, handler: Handler, *, public: bool = False) -> Handler:
    """``handler`` with the tenant resolved (unless ``public``) and every error answered as JSON."""

    async def endpoint(request: Request) -> Response:
        try:
            if not public:
                authorization, api_key = request.headers.get("authorization"), request.headers.get("x-api-key")
                request.state.tenant = keys.tenant(authorization, api_key)
                request.state.operator = keys.is_operator(authorization, api_key)
            return await handler(request)
        except Exception as exc:
            return error_answer(exc, request.method, request.url.path)

    return endpoint


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
    message = f"no route {request.method} {request.url.path}" if exc.status_code == 404 else str(exc.detail)
    return error_response(ApiError(exc.status_code, code, message), dict(exc.headers or {}))


def _agents_view(runtime: Runtime) -> dict[str, Any]:
    return {"agents": [
        {"id": agent.id, "name": agent.name,
         "flows": [{"id": flow.id, "description": flow.description, "start": flow.start,
                    "nodes": [node.id for node in flow.nodes], "mermaid": flow_to_mermaid(flow)}
                   for flow in agent.flows]}
        for agent in runtime.agents.values()]}


def create_app(
    runtime_or_agents: Runtime | Agent | Sequence[Agent] | Mapping[str, Agent],
    *,
    store: Store | None = None,
    api_keys: Mapping[str, str] | None = None,
    operator_keys: Mapping[str, str] | None = None,
    prices: PriceTable | None = None,
    budgets: Budgets | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    scheduler: bool = True,
    scheduler_interval: float = 1.0,
    cors_origins: Sequence[str] = (),
    flow_registry: Registry | None = None,
    flow_refresh: float = 5.0,
    stream_poll: float = POLL,
    stream_keepalive: float = KEEPALIVE,
    workflows: str | os.PathLike[str] | None = None,
    workflow_workspace: str | os.PathLike[str] = ".",
    workflow_runs: bool | None = None,
    workflow_model: Model | ModelTiers | str | None = None,
) -> Starlette:
    """The ASGI app serving ``runtime_or_agents`` under ``/v1``.

    Args:
        runtime_or_agents: a ``Runtime``, or agents to build one over ``store`` (the app then
            closes that runtime at shutdown).
        store: the store of a runtime the app builds (default: the runtime's SQLite default).
        api_keys: ``{key: tenant}``; default: ``TETHER_API_KEYS`` from the environment. With no
            keys the API is open (every caller is the ``public`` tenant).
        operator_keys: ``{key: tenant}`` of the people who take conversations over (the operator
            routes: ``/v1/handoffs``, ``operator-messages``, ``release``); default:
            ``TETHER_OPERATOR_KEYS``. They act on every route of their tenant; with none, every
            key is its tenant's operator key too.
        prices: the price table the sessions' estimated costs come from (default: the runtime's,
            else ``TETHER_PRICES``).
        budgets: the spending limits checked before every model call (default: the runtime's,
            else ``TETHER_MAX_TOKENS_PER_SESSION``, ``TETHER_MAX_COST_PER_SESSION``,
            ``TETHER_MAX_COST_PER_TENANT_PER_DAY``).
        max_body: the request body limit in bytes (413 ``body-too-large`` past it).
        scheduler: run the wake scheduler while the app is up.
        scheduler_interval: seconds between its polls.
        cors_origins: origins allowed by CORS; none (CORS off) by default.
        flow_registry: the registered actions, conditions and events that flows registered over
            ``PUT /v1/agents/{agent}/flows/{flow}`` may name (tools are the agent's own).
        flow_refresh: seconds between reads of the agents' active stored flow versions, so new
            runs here take what another worker on the store published that late at most (0: only
            at boot; a run that started on another worker's version continues here regardless).
        stream_poll: seconds between the session event stream's re-reads of the store (it sees
            turns of other processes that late at most; this process's turns wake it at once).
        stream_keepalive: seconds between the event stream's ``: keepalive`` comments.
        workflow_runs: drive the store's queued workflow runs while the app is up (one run at a
            time, beside the requests: :class:`~tether.workflow_host.RunQueueTask`); default: as
            ``scheduler``.
        workflow_model: the model of those runs' subprompt and agent nodes (``None``: runs whose
            only work is agent work are left to a worker with a model).
        workflows: the directory of the workflow files (``<id>.yaml``, ``.yml``, ``.json``) that
            ``POST /v1/workflows/{id}/runs`` starts runs of; ``None``: no runs are started here
            (the stored runs of the caller's tenant are still listed and operable).
        workflow_workspace: the working directory of the commands of the runs started here.
    """
    owned = not isinstance(runtime_or_agents, Runtime)
    if isinstance(runtime_or_agents, Runtime):
        if store is not None:
            raise ValueError("give store= only with agents, not with a Runtime (it has its own store)")
        runtime = runtime_or_agents
    else:
        runtime = Runtime(runtime_or_agents, store=store, prices=prices or PriceTable.from_env(),
                          budgets=budgets or Budgets.from_env())
    if prices is not None:
        runtime.costs.prices = prices
    if budgets is not None:
        runtime.costs.budgets = budgets
    keys = KeyRing(api_keys if api_keys is not None else keys_from_env(),
                   operator_keys if operator_keys is not None else operator_keys_from_env())
    wakes = WakeScheduler(runtime, interval=scheduler_interval)
    runs = RunQueueTask(runtime.store, model=workflow_model)
    drive_runs = scheduler if workflow_runs is None else workflow_runs
    refresh = StoredFlowRefresh(runtime, interval=flow_refresh)
    routes = SessionRoutes(runtime, max_body=max_body, stream_poll=stream_poll, stream_keepalive=stream_keepalive)
    openai_routes = OpenAIRoutes(runtime, routes.busy, max_body=max_body)
    takeover = TakeoverRoutes(runtime, routes.session_of, max_body=max_body)
    run_routes = WorkflowRunRoutes(runtime, workflows=Path(workflows) if workflows is not None else None,
                                   workspace=Path(workflow_workspace), max_body=max_body)
    responses_route = ResponsesRoute(openai_routes, max_body=max_body)
    document = openapi_document(_version("tether"))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    probe = StoreProbe(runtime.store)

    async def readyz(request: Request) -> Response:
        # a probe answers at once: a store that does not answer soon is not ready either
        problems = [problem] if (problem := await probe.problem()) is not None else []
        if scheduler and not wakes.running:
            problems.append("wake scheduler not running")
        if problems:
            raise ApiError(503, "not-ready", "; ".join(problems))
        return JSONResponse({"status": "ready", "scheduler": scheduler})

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def root(request: Request) -> Response:
        # a browser goes to the inspector; an API client gets an index of where things are
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse(f"{request.scope.get('root_path', '')}/inspect/", status_code=307)
        return JSONResponse({"service": "tether", "version": document["info"]["version"],
                             "inspector": "/inspect/", "openapi": "/openapi.json", "agents": "/v1/agents",
                             "health": "/healthz", "ready": "/readyz"})

    async def agents(request: Request) -> Response:
        return JSONResponse(_agents_view(runtime))

    async def put_flow(request: Request) -> Response:
        agent_id, flow_id = request.path_params["agent"], request.path_params["flow"]
        if agent_id not in runtime.agents:
            raise ApiError(404, "agent-not-found", f"no agent {agent_id!r} is served here")
        body = await read_body(request, FlowBody, limit=max_body)
        if body.flow.get("id") != flow_id:
            raise ApiError(422, "flow-id-mismatch", f"the body's flow id {body.flow.get('id')!r} is not {flow_id!r}")
        try:
            agent = await publish_flows(runtime, agent_id, [{"flow": body.flow}], flow_registry)
        except FlowDefinitionError as exc:
            issues = [i.as_dict() for i in exc.issues]
            raise ApiError(422, "invalid-flow", f"flow {flow_id!r} was refused with {len(issues)} issue(s)",
                           details=issues) from None
        flow = agent.flows_by_id[flow_id]
        return JSONResponse(FlowRegistered(flow=flow.id, version=flow.version, digest=flow.digest).model_dump())

    session = "/v1/agents/{agent}/sessions/{session_id}"
    table: list[tuple[str, Handler, list[str], bool]] = [
        ("/", root, ["GET"], True),
        ("/healthz", healthz, ["GET"], True),
        ("/readyz", readyz, ["GET"], True),
        ("/openapi.json", openapi, ["GET"], True),
        ("/v1/agents", agents, ["GET"], False),
        ("/v1/agents/{agent}/flows/{flow}", put_flow, ["PUT"], False),
        ("/v1/models", openai_routes.models, ["GET"], False),
        ("/v1/chat/completions", openai_routes.completions, ["POST"], False),
        ("/v1/responses", responses_route.create, ["POST"], False),
        ("/v1/agents/{agent}/sessions", routes.create, ["POST"], False),
        ("/v1/agents/{agent}/sessions", routes.list, ["GET"], False),
        ("/v1/agents/{agent}/messages", routes.first_message, ["POST"], False),
        (session, routes.state, ["GET"], False),
        (session, routes.delete, ["DELETE"], False),
        (session + "/messages", routes.message, ["POST"], False),
        (session + "/transcript", routes.transcript, ["GET"], False),
        (session + "/events", routes.events, ["GET"], False),
        (session + "/events", routes.event, ["POST"], False),
        (session + "/stream", routes.stream, ["GET"], False),
        (session + "/approvals/{approval_id}", routes.approval, ["POST"], False),
        (session + "/signals/{name}", routes.signal, ["POST"], False),
        (session + "/release", takeover.release, ["POST"], False),
        (session + "/operator-messages", takeover.operator_message, ["POST"], False),
        ("/v1/handoffs", takeover.handoffs, ["GET"], False),
        ("/v1/costs", tenant_costs(runtime), ["GET"], False),
        ("/v1/workflows", run_routes.workflows_list, ["GET"], False),
        ("/v1/workflows/{workflow}/runs", run_routes.start, ["POST"], False),
        ("/v1/workflow-runs", run_routes.list, ["GET"], False),
        ("/v1/workflow-runs/{run}", run_routes.show, ["GET"], False),
        ("/v1/workflow-runs/{run}/cancel", run_routes.cancel, ["POST"], False),
        ("/v1/workflow-runs/{run}/nodes/{node}/approve", run_routes.approve, ["POST"], False),
        ("/v1/workflow-runs/{run}/nodes/{node}/reject", run_routes.reject, ["POST"], False),
        ("/v1/workflow-runs/{run}/nodes/{node}/input", run_routes.input, ["POST"], False),
        ("/v1/workflow-runs/{run}/nodes/{node}/retry", run_routes.retry, ["POST"], False),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await load_stored_flows(runtime, flow_registry)  # flows PUT before a restart, or by another worker
        if scheduler:
            wakes.start()
        if drive_runs:
            runs.start()
        refresh.start()  # and flows PUT on another worker since
        try:
            yield
        finally:
            probe.close()
            await refresh.stop()
            await runs.stop()
            await wakes.stop()
            if owned:
                await runtime.close()

    middleware = [Middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["*"],
                             allow_headers=["*"])] if cors_origins else []
    # innermost: CORS (when on) answers preflights and adds its headers to the message turns too
    middleware.append(Middleware(MessageFastPath, routes=routes, keys=keys, max_body=max_body))
    app = Starlette(
        routes=[*(Route(path, _guarded(keys, handler, public=public), methods=methods)
                  for path, handler, methods, public in table),
                *inspector_routes(runtime, lambda handler: _guarded(keys, handler))],
        exception_handlers={HTTPException: _http_error},
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.state.keys = keys
    app.state.busy = routes.busy
    app.state.flow_refresh = refresh
    return app
