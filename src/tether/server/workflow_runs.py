"""Workflow runs over HTTP: list a tenant's runs with what each waits on, show one, start one for
the workers, and act on one as a person (approve, reject with feedback, answer an input request,
retry a failed node, cancel).

A run is stored like a session (:mod:`tether.workflow_host._store`) with the tenant that started
it; a run of another tenant is answered as one that does not exist (404 ``run-not-found``). A run
started here goes through :func:`tether.workflow_host.queue_run`, the path of
``tether workflow run --detach``: the server queues it, and a worker of the store's run queue
drives it (``tether worker``, or ``tether serve`` itself). The actions go through
:func:`tether.workflow_host.act_on_run`, which refuses what the run cannot take (404/409/422,
nothing written) and records a ``workflow.action`` event.

Who may do what: any key of a tenant lists and reads its runs and starts runs; the actions are
operator routes (``require_operator``: an operator key once any is configured).
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.engine.core.input_checks import check_value
from tether.engine.core.session import Session
from tether.errors import (
    InvalidInputError,
    SessionConflict,
    WorkflowDefinitionError,
    WorkflowError,
    WorkflowOperationError,
)
from tether.runtime.runtime import Runtime
from tether.server.bodies import (
    WorkflowApproveBody,
    WorkflowCancelBody,
    WorkflowInputBody,
    WorkflowRejectBody,
    WorkflowRetryBody,
    WorkflowRunStartBody,
)
from tether.server.problems import ApiError
from tether.server.requests import next_cursor, page_cursor, query_int
from tether.server.requests import read_body as read_json
from tether.server.takeover import require_operator
from tether.server.views import event_view
from tether.stores.records import session_tenant
from tether.workflow import WorkflowSnapshot
from tether.workflow._state import RunStatus
from tether.workflow_host import RunAction, act_on_run, find_workflow_file, load_workflow_file, queue_run, waiting_on
from tether.workflow_host._files import WORKFLOW_SUFFIXES
from tether.workflow_host._store import WORKFLOW_AGENT_PREFIX, stored_run

__all__ = ["WAITING_KINDS", "WorkflowRunRoutes", "run_view"]

M = TypeVar("M", bound=BaseModel)

WAITING_KINDS = ("approval", "input", "agent", "worker", "failed", "blocked", "none")
"""What ``GET /v1/workflow-runs?waiting=`` filters on (``none``: the runs that wait on nothing)."""

_RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
# the document status a run of each status is stored with (failed and blocked: either)
_STORED = {"running": "running", "waiting": "running", "complete": "completed", "cancelled": "aborted"}
_EVENTS = 200  # the latest events a run's page shows
_LOOK = 25
"""The fewest runs one read of the list asks the store for (a filter that few runs match reads on)."""
_SCAN = 500
"""The most runs one ``GET /v1/workflow-runs`` reads (a run's state is in its document): a filter few
runs match answers a shorter page with a ``next`` to read on, never a request that reads them all."""
_OPEN = ("approval", "input", "agent", "worker")  # what only an open run (stored running) waits on
_REFUSED = {"unknown-run": (404, "run-not-found"), "unknown-node": (404, "node-not-found"),
            "bad-response": (422, "bad-response"), "bad-input": (422, "bad-input"),
            "bad-decision": (422, "bad-decision"), "override-needs-feedback": (422, "override-needs-feedback"),
            "override-output-contract": (422, "override-output-contract"), "node-needed": (422, "node-needed")}


def run_view(document: Session, snapshot: WorkflowSnapshot, *, kinds: dict[str, str] | None = None,
             events: builtins.list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A stored run as JSON: the list's row, and with ``events`` its page (every node's state)."""
    waits = waiting_on(snapshot)
    view: dict[str, Any] = {
        "run": snapshot.run_id, "workflow": snapshot.workflow_id, "version": snapshot.workflow_version,
        "status": snapshot.status, "waiting": waits[0]["kind"] if waits else None, "waiting_on": waits,
        "tenant": session_tenant(document.metadata), "autonomous": snapshot.autonomous,
        "created_at": document.created_at.isoformat(),
        "saved_at": document.saved_at.isoformat() if document.saved_at is not None else None,
        "model_calls": snapshot.model_calls, "usage": snapshot.usage,
    }
    if events is None:
        return view
    nodes = []
    for node_id, state in snapshot.nodes.items():
        node = {"id": node_id, **state.model_dump(mode="json", by_alias=True, exclude_none=True)}
        if kinds is not None and node_id in kinds:
            node["kind"] = kinds[node_id]
        nodes.append(node)
    return {**view, "input": snapshot.input, "output": snapshot.output, "nodes": nodes, "events": events}


async def read_body(request: Request, model: type[M], *, limit: int, optional: bool = False) -> M:
    """The body as ``model`` (see :func:`tether.server.requests.read_body`), with every string in it
    storable and no value nested too deep: 422 ``invalid-body`` naming the field otherwise (what a
    run keeps, from a name to an answer, goes to the store as it is)."""
    body = await read_json(request, model, limit=limit, optional=optional)
    try:
        check_value(body.model_dump(), "body")
    except InvalidInputError as exc:
        raise ApiError(422, "invalid-body", str(exc)) from None
    return body


def _choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = request.query_params.get(name)
    if value is not None and value not in allowed:
        raise ApiError(422, "invalid-query", f"query parameter {name!r} must be one of {', '.join(allowed)}")
    return value


class WorkflowRunRoutes:
    """The workflow run handlers, bound to one runtime's store (``tenant`` and ``operator`` are set
    on ``request.state`` by the app).

    Args:
        workflows: the directory of the workflow files runs may be started of (``<id>.yaml``...);
            ``None``: the server starts no runs (it still lists and acts on stored ones).
        workspace: the working directory of the commands of the runs started here.
    """

    def __init__(self, runtime: Runtime, *, workflows: Path | None, workspace: Path, max_body: int) -> None:
        self.runtime = runtime
        self.workflows = workflows
        self.workspace = workspace
        self.max_body = max_body

    # ------------------------------------------------------------------ reading

    async def _document(self, request: Request) -> tuple[Session, WorkflowSnapshot]:
        run_id = request.path_params["run"]
        document = await self.runtime.store.load(run_id)
        snapshot = stored_run(document) if document is not None else None
        if document is None or snapshot is None or session_tenant(document.metadata) != request.state.tenant:
            raise ApiError(404, "run-not-found", f"no workflow run {run_id!r}")
        return document, snapshot

    async def _page(self, document: Session, snapshot: WorkflowSnapshot) -> dict[str, Any]:
        events = await self.runtime.store.events(document.id, newest=_EVENTS)
        return run_view(document, snapshot, kinds=_kinds(document), events=[event_view(e) for e in events])

    async def show(self, request: Request) -> Response:
        """``GET /v1/workflow-runs/{run}``: the run, every node's state and its latest events."""
        return JSONResponse(await self._page(*await self._document(request)))

    async def list(self, request: Request) -> Response:
        """``GET /v1/workflow-runs``: the caller's runs, newest saved first, a page at a time."""
        limit = query_int(request, "limit", 50, low=1, high=200)
        status = _choice(request, "status", _RUN_STATUSES)
        waiting = _choice(request, "waiting", WAITING_KINDS)
        workflow = request.query_params.get("workflow") or None
        last = page_cursor(request, at="saved_at", item="run")  # the last run read
        store, tenant = self.runtime.store, request.state.tenant
        agent = f"{WORKFLOW_AGENT_PREFIX}{workflow}" if workflow else None
        stored = _STORED.get(status or "") or ("running" if waiting in _OPEN else None)
        found: builtins.list[dict[str, Any]] = []
        budget = _SCAN
        while len(found) <= limit and budget > 0:  # a run's own state is in its document: read on until enough
            asked = min(budget, max(limit + 1 - len(found), _LOOK))
            rows = await store.list(agent=agent, agent_prefix=None if agent else WORKFLOW_AGENT_PREFIX,
                                    status=stored, tenant=tenant, limit=asked, after=last)
            for row in rows:
                if len(found) > limit:
                    break
                budget -= 1
                last = (row.saved_at, row.id)
                document = await store.load(row.id)
                snapshot = stored_run(document) if document is not None else None
                if document is None or snapshot is None or (status is not None and snapshot.status != status):
                    continue
                view = run_view(document, snapshot)
                if waiting is not None and (view["waiting"] or "none") != waiting:
                    continue
                found.append({**view, "_key": last})
            if len(rows) < asked:
                break  # no more runs
        page = found[:limit]
        # more runs matched than the page holds: the page ends at its last run; the runs read ran out
        # first (budget): the page ends where the reading stopped (it may hold fewer than limit, even none)
        end = page[-1]["_key"] if len(found) > limit else last if budget == 0 else None
        return JSONResponse({"runs": [{k: v for k, v in row.items() if k != "_key"} for row in page],
                             "next": next_cursor(end)})

    async def workflows_list(self, request: Request) -> Response:
        """``GET /v1/workflows``: the workflows runs may be started of here."""
        found: builtins.list[dict[str, Any]] = []
        if self.workflows is not None and self.workflows.is_dir():
            for file in sorted(self.workflows.iterdir()):
                if file.suffix not in WORKFLOW_SUFFIXES or not file.is_file():
                    continue
                try:
                    graph = load_workflow_file(file)
                except WorkflowDefinitionError as exc:
                    found.append({"id": file.stem, "file": file.name, "error": exc.message})
                    continue
                found.append({"id": file.stem, "workflow": graph.id, "file": file.name,
                              "input": graph.workflow.input, "nodes": builtins.list(graph.order)})
        return JSONResponse({"workflows": found})

    # ------------------------------------------------------------------ starting

    async def start(self, request: Request) -> Response:
        """``POST /v1/workflows/{workflow}/runs``: store a new run for the workers (201)."""
        name = request.path_params["workflow"]
        file = find_workflow_file(self.workflows, name) if self.workflows is not None else None
        if file is None:
            where = "this server starts no workflow runs (tether serve --workflows DIR)" if self.workflows is None \
                else f"no workflow file {name}.yaml, .yml or .json in the server's workflows directory"
            raise ApiError(404, "workflow-not-found", f"workflow {name!r}: {where}")
        body = await read_body(request, WorkflowRunStartBody, limit=self.max_body, optional=True)
        try:
            snapshot = await queue_run(self.runtime.store, file, workspace=self.workspace, input=body.input,
                                        autonomous=body.autonomous, run_id=body.run, tenant=request.state.tenant)
        except WorkflowDefinitionError as exc:
            raise ApiError(409, "invalid-workflow", f"workflow {name!r} does not load: {exc.message}",
                           details=[issue.as_dict() for issue in exc.issues]) from None
        except SessionConflict:
            raise ApiError(409, "run-exists", f"a run {body.run!r} is already stored") from None
        except WorkflowError as exc:  # the input the workflow refuses
            raise ApiError(422, "invalid-input", f"input: {exc.message}") from None
        document = await self.runtime.store.load(snapshot.run_id)
        assert document is not None
        return JSONResponse(await self._page(document, snapshot), status_code=201)

    # ------------------------------------------------------------------ acting

    async def _act(self, request: Request, act: RunAction) -> Response:
        try:
            await act_on_run(self.runtime.store, request.path_params["run"], act, tenant=request.state.tenant)
        except WorkflowOperationError as exc:
            status, code = _REFUSED.get(exc.code, (409, exc.code))
            raise ApiError(status, code, exc.message) from None
        return JSONResponse(await self._page(*await self._document(request)))

    async def approve(self, request: Request) -> Response:
        """``POST .../nodes/{node}/approve``."""
        require_operator(request)
        body = await read_body(request, WorkflowApproveBody, limit=self.max_body, optional=True)
        return await self._act(request, RunAction("approve", request.path_params["node"], by=body.by,
                                                  feedback=body.feedback, response=body.response))

    async def reject(self, request: Request) -> Response:
        """``POST .../nodes/{node}/reject``."""
        require_operator(request)
        body = await read_body(request, WorkflowRejectBody, limit=self.max_body)
        return await self._act(request, RunAction("reject", request.path_params["node"], by=body.by,
                                                  feedback=body.feedback))

    async def input(self, request: Request) -> Response:
        """``POST .../nodes/{node}/input``."""
        require_operator(request)
        body = await read_body(request, WorkflowInputBody, limit=self.max_body)
        return await self._act(request, RunAction("input", request.path_params["node"], by=body.by,
                                                  response=body.response))

    async def retry(self, request: Request) -> Response:
        """``POST .../nodes/{node}/retry``."""
        require_operator(request)
        body = await read_body(request, WorkflowRetryBody, limit=self.max_body, optional=True)
        return await self._act(request, RunAction("retry", request.path_params["node"], by=body.by))

    async def cancel(self, request: Request) -> Response:
        """``POST /v1/workflow-runs/{run}/cancel``."""
        require_operator(request)
        body = await read_body(request, WorkflowCancelBody, limit=self.max_body, optional=True)
        return await self._act(request, RunAction("cancel", by=body.by, reason=body.reason))


def _kinds(document: Session) -> dict[str, str] | None:
    """Each node's kind (function, check, gate, agent...), from the run's workflow file when it loads."""
    launch = document.metadata.get("launch")
    file = launch.get("file") if isinstance(launch, dict) else None
    if not isinstance(file, str):
        return None
    try:
        graph = load_workflow_file(file)
    except WorkflowDefinitionError:
        return None
    return {node_id: node.run.kind for node_id, node in graph.nodes.items()}


