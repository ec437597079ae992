"""The web inspector at ``/inspect``: a session list and a live session page, served by the API app.

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
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from tether.agent import Agent
from tether.flow.flow import Flow
from tether.flow.mermaid import flow_edges
from tether.runtime.runtime import Runtime

__all__ = ["STATIC_DIR", "flow_graph", "inspector_routes"]

STATIC_DIR = Path(__file__).with_name("static")
"""The inspector's page, stylesheet and script."""

Handler = Callable[[Request], Awaitable[Response]]


def flow_graph(flow: Flow) -> dict[str, Any]:
    """A flow as the page draws it: its nodes in declaration order and its static edges."""
    return {
        "id": flow.id,
        "description": flow.description,
        "start": flow.start,
        "nodes": [{"id": node.id, "kind": node.kind, "label": node.label or node.id} for node in flow.nodes],
        "edges": [{"source": edge.source, "target": edge.target, "kind": edge.kind, "label": edge.label}
                  for edge in flow_edges(flow)],
    }


def _agent_graphs(agent: Agent) -> dict[str, Any]:
    return {"id": agent.id, "name": agent.name, "flows": [flow_graph(flow) for flow in agent.flows]}


def inspector_routes(runtime: Runtime, guard: Callable[[Handler], Handler]) -> list[BaseRoute]:
    """The inspector's routes; ``guard`` wraps a handler with the API's auth and error handling."""
    page = (STATIC_DIR / "inspector.html").read_text(encoding="utf-8")
    graphs = {"agents": [_agent_graphs(agent) for agent in runtime.agents.values()]}

    async def index(request: Request) -> Response:
        # links in the page are absolute, under the path the app is mounted at
        root = html.escape(str(request.scope.get("root_path", "")).rstrip("/"))
        return HTMLResponse(page.replace("__ROOT__", root), headers={"Cache-Control": "no-store"})

    async def agents(request: Request) -> Response:
        return JSONResponse(graphs)

    return [
        Route("/inspect", index, methods=["GET"]),
        Route("/inspect/", index, methods=["GET"]),
        Route("/inspect/api/agents", guard(agents), methods=["GET"]),
        Mount("/inspect/static", StaticFiles(directory=STATIC_DIR), name="inspector-static"),
        Route("/inspect/{agent}/{session_id}", index, methods=["GET"]),
    ]
