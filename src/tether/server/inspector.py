"""The web inspector at ``/inspect``: a session list and a live session page, and the workflow runs
(``/inspect/workflow-runs``) with a page per run to act on it, served by the API app.

The page is plain HTML, CSS and one script (``static/``), with no build step. It holds no data of
its own: the script calls the ``/v1`` API with the key the user typed (kept in the tab's session
storage), so the inspector sees exactly what that key may see. The page and its static files are
public; the one JSON route here, ``/inspect/api/agents`` (the agents' flow graphs as nodes and
edges), is guarded like every ``/v1`` route.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from tether.agent import Agent
from tether.flow.flow import Flow
from tether.flow.transitions import End, Escalate, Goto, Handoff, StartFlow, Stay, Transition
from tether.runtime.runtime import Runtime

__all__ = ["STATIC_DIR", "flow_graph", "inspector_routes"]

STATIC_DIR = Path(__file__).with_name("static")
"""The inspector's page, stylesheet and script."""

Handler = Callable[[Request], Awaitable[Response]]


def _edge(source: str, label: str, move: Transition, *, declared: bool = False) -> dict[str, Any]:
    """One move out of ``source``: ``kind`` is ``goto`` (``target`` a node), ``stay``, ``end``,
    ``handoff``, ``escalate`` or ``start_flow`` (``target`` the started flow)."""
    target = ""
    if isinstance(move, Goto):
        kind, target = "goto", move.target
    elif isinstance(move, StartFlow):
        kind, target = "start_flow", move.flow
    else:
        kind = {Stay: "stay", End: "end", Handoff: "handoff", Escalate: "escalate"}[type(move)]
    return {"source": source, "target": target, "kind": kind, "label": label, "declared": declared}


def flow_graph(flow: Flow) -> dict[str, Any]:
    """A flow as the page draws it: its nodes in declaration order and their moves, the static ones
    and (``declared``) the ``targets=[...]`` a node whose code decides declares. A node whose code
    could go anywhere has a ``code`` edge."""
    edges: list[dict[str, Any]] = []
    for node in flow.nodes:
        for option, target in node.static_targets():
            label = "" if option in ("next", "then", "on_complete") else option
            edges.append(_edge(node.id, label, flow.resolve_static(node.id, target)))
        edges.extend(_edge(node.id, "", flow.resolve_static(node.id, target), declared=True) for target in node.targets)
        if node.is_opaque() and not node.targets:
            edges.append({"source": node.id, "target": "", "kind": "code", "label": "", "declared": False})
    return {
        "id": flow.id,
        "description": flow.description,
        "start": flow.start,
        "nodes": [{"id": node.id, "kind": node.kind, "label": node.label or node.id} for node in flow.nodes],
        "edges": edges,
    }


def _agent_graphs(agent: Agent) -> dict[str, Any]:
    return {"id": agent.id, "name": agent.name, "flows": [flow_graph(flow) for flow in agent.flows]}


def inspector_routes(runtime: Runtime, guard: Callable[[Handler], Handler]) -> list[BaseRoute]:
    """The inspector's routes; ``guard`` wraps a handler with the API's auth and error handling."""
    page = (STATIC_DIR / "inspector.html").read_text(encoding="utf-8")
    graphs = {"agents": [_agent_graphs(agent) for agent in runtime.agents.values()]}

    async def index(request: Request) -> Response:
        # links in the page are absolute, under the path the app is mounted at (the root path
        # here ends with this mount's own "/inspect")
        root = html.escape(str(request.scope.get("root_path", "")).rstrip("/").removesuffix("/inspect"))
        return HTMLResponse(page.replace("__ROOT__", root), headers={"Cache-Control": "no-store"})

    async def agents(request: Request) -> Response:
        return JSONResponse(graphs)

    async def favicon(request: Request) -> Response:
        # what a browser asks the server's root for, on any page (the inspector's links its own)
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "public, max-age=86400"})

    # one mount: the inspector is a part of the app of its own, not an API route (``/inspect``
    # redirects to ``/inspect/``); and the favicon, public like the page
    return [Route("/favicon.ico", favicon, methods=["GET"]), Mount("/inspect", routes=[
        Route("/", index, methods=["GET"]),
        Route("/api/agents", guard(agents), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="inspector-static"),
        Route("/workflow-runs", index, methods=["GET"]),
        Route("/{agent}/{session_id}", index, methods=["GET"]),  # a workflow run's page too (workflow-runs/{run})
    ])]
