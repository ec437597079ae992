"""The inspector's routes without a browser: the page and its files are public and hold no data,
the graph route is guarded like the API, and a flow's graph lists its nodes and static edges."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from server_client import ACME
from starlette.applications import Starlette
from starlette.routing import Mount

from tether import Flow, action, end, goto, handoff, on_message, reply, router, start_flow
from tether.runtime import Runtime
from tether.server import create_app
from tether.server.inspector import flow_graph


@pytest.mark.parametrize("path", ["/inspect/", "/inspect/Echo/some-session"])
async def test_the_page_is_served_without_a_key_and_links_its_files_absolutely(
        client: httpx.AsyncClient, path: str) -> None:
    page = await client.get(path)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script src="/inspect/static/inspector.js">' in page.text
    assert '<link rel="stylesheet" href="/inspect/static/inspector.css">' in page.text
    assert "__ROOT__" not in page.text


async def test_inspect_without_the_slash_redirects_to_the_page(client: httpx.AsyncClient) -> None:
    moved = await client.get("/inspect")
    assert moved.status_code in (307, 308) and moved.headers["location"].endswith("/inspect/")


@pytest.mark.parametrize(("name", "kind"), [("inspector.js", "javascript"), ("inspector.css", "text/css")])
async def test_the_static_files_are_served(client: httpx.AsyncClient, name: str, kind: str) -> None:
    served = await client.get(f"/inspect/static/{name}")
    assert served.status_code == 200 and kind in served.headers["content-type"]
    assert (await client.get("/inspect/static/nothing.js")).status_code == 404


async def test_the_graph_route_needs_a_key_when_keys_are_configured(client: httpx.AsyncClient) -> None:
    refused = await client.get("/inspect/api/agents")
    assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
    assert (await client.get("/inspect/api/agents", headers={"Authorization": "Bearer wrong"})).status_code == 401
    graphs = (await client.get("/inspect/api/agents", headers=ACME)).json()
    echo = next(agent for agent in graphs["agents"] if agent["id"] == "Echo")
    chat = next(flow for flow in echo["flows"] if flow["id"] == "chat")
    assert chat["start"] == "count"
    assert [node["id"] for node in chat["nodes"]] == ["count", "answer"]
    assert {"source": "answer", "target": "", "kind": "end", "label": "", "declared": False} in chat["edges"]


async def test_the_graph_route_is_open_when_the_server_is(open_client: httpx.AsyncClient) -> None:
    assert (await open_client.get("/inspect/api/agents")).status_code == 200


def _edge(source: str, target: str, kind: str, label: str = "", declared: bool = False) -> dict[str, Any]:
    return {"source": source, "target": target, "kind": kind, "label": label, "declared": declared}


def test_a_flow_graph_lists_every_move_in_declaration_order() -> None:
    ask = action("ask", lambda state, ctx: goto("yes"))
    check = router("check", when="data.ok == true", then="yes", else_="no", label="Is it ok?")
    yes = reply("yes", response="Yes.", next=end("done"))
    no = reply("no", response="No.", next=handoff("human", "not ok"))
    again = reply("again", response="Again?", next=goto("check"))
    pick = action("pick", lambda state, ctx: goto("yes"), targets=["yes", start_flow("other")])
    flow = Flow("f", start=ask, nodes=[ask, check, yes, no, again, pick], on=[on_message()])
    graph = flow_graph(flow)
    assert graph["edges"] == [
        _edge("ask", "check", "goto"), _edge("ask", "", "code"),
        _edge("check", "yes", "goto"), _edge("check", "no", "goto", "else"),
        _edge("yes", "", "end"), _edge("no", "", "handoff"),
        _edge("again", "check", "goto"),
        _edge("pick", "", "end"), _edge("pick", "yes", "goto", declared=True),
        _edge("pick", "other", "start_flow", declared=True),
    ]
    assert graph["nodes"][1] == {"id": "check", "kind": "router", "label": "Is it ok?"}
    assert graph["start"] == "ask"


async def test_mounted_under_a_prefix_the_page_links_under_it(runtime: Runtime) -> None:
    outer = Starlette(routes=[Mount("/tether", app=create_app(runtime, api_keys={}, scheduler=False))])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url="http://test") as client:
        page = await client.get("/tether/inspect/Echo/s1")
        assert '<script src="/tether/inspect/static/inspector.js">' in page.text
        assert (await client.get("/tether/inspect/static/inspector.js")).status_code == 200


async def test_the_favicon_is_served_without_a_key(client: httpx.AsyncClient) -> None:
    page = await client.get("/inspect/")
    assert '<link rel="icon" type="image/svg+xml" href="/inspect/static/favicon.svg">' in page.text
    for path in ("/favicon.ico", "/inspect/static/favicon.svg"):  # the browser's default ask, and the page's link
        icon = await client.get(path)
        assert icon.status_code == 200, path
        assert icon.headers["content-type"].startswith("image/svg+xml") and icon.text.startswith("<svg")
