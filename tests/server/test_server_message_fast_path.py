"""The message routes' lean path (``tether.server.hot``): JSON message turns are answered before
Starlette's router, with the same answers the routes give; whatever it does not take reaches the
routes untouched."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_agents import echo_agent
from server_client import ACME, GLOBEX, KEYS, app_client
from starlette.applications import Starlette
from starlette.types import Message, Receive, Scope, Send

from tether.runtime import Runtime
from tether.server import create_app
from tether.server.hot import MessageFastPath
from tether.stores import SQLiteStore

FIRST = "/v1/agents/Echo/messages"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _counting_router(app: Starlette) -> list[str]:
    """The paths that reached the app's router (its routes), from now on."""
    reached: list[str] = []
    inner = app.router.middleware_stack

    async def counted(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reached.append(f"{scope['method']} {scope['path']}")
        await inner(scope, receive, send)

    app.router.middleware_stack = counted
    return reached


async def _runtime(tmp_path: Path, name: str) -> Runtime:
    return Runtime(echo_agent(), store=SQLiteStore(tmp_path / f"{name}.db"))


@pytest.fixture
async def lean(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, list[str]]]:
    runtime = await _runtime(tmp_path, "lean")
    app = create_app(runtime, api_keys=KEYS, max_body=10_000, scheduler=False)
    reached = _counting_router(app)
    async for client in app_client(app):
        yield client, reached
    await runtime.close()


async def test_message_turns_are_answered_before_the_router(lean: tuple[httpx.AsyncClient, list[str]]) -> None:
    client, reached = lean
    first = await client.post(FIRST, json={"text": "hi", "id": "m1"}, headers=ACME)
    assert first.status_code == 200, first.text
    assert first.headers["content-type"] == "application/json"
    assert int(first.headers["content-length"]) == len(first.content)
    body = first.json()
    assert (body["success"], body["message"]) == (True, "reply 1: hi")
    url = f"/v1/agents/Echo/sessions/{body['session']}/messages"
    again = await client.post(url, json={"text": "more"}, headers={**ACME, "Idempotency-Key": "m2"})
    assert again.json()["message"] == "reply 2: more"
    assert reached == []
    state = await client.get(f"/v1/agents/Echo/sessions/{body['session']}", headers=ACME)
    assert state.status_code == 200
    assert reached == [f"GET /v1/agents/Echo/sessions/{body['session']}"]


async def test_what_the_lean_path_does_not_take_reaches_the_routes(
        lean: tuple[httpx.AsyncClient, list[str]]) -> None:
    client, reached = lean
    sid = (await client.post(FIRST, json={"text": "hi"}, headers=ACME)).json()["session"]
    url = f"/v1/agents/Echo/sessions/{sid}/messages"
    unauthenticated = await client.post(url, json={"text": "x"})
    assert (unauthenticated.status_code, unauthenticated.json()["code"]) == (401, "unauthenticated")
    assert unauthenticated.headers["www-authenticate"] == "Bearer"
    nobody = await client.post("/v1/agents/Nobody/messages", json={"text": "x"}, headers=ACME)
    assert (nobody.status_code, nobody.json()["code"]) == (404, "agent-not-found")
    async with client.stream("POST", url, json={"text": "streamed"},
                             headers={**ACME, "Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert "reply 2: streamed" in (await stream.aread()).decode()
    slash = await client.post(url + "/", json={"text": "x"}, headers=ACME)
    assert slash.status_code in (307, 404)  # the router's own answer to a path it has no route for
    assert reached == [f"POST {url}", "POST /v1/agents/Nobody/messages", f"POST {url}", f"POST {url}/"]


async def test_its_errors_are_the_routes_errors(tmp_path: Path) -> None:
    """The same requests through the lean path and through the routes alone (the lean path taken
    out of the app) get the same statuses and bodies."""

    async def answers(app: Starlette) -> list[tuple[int, Any]]:
        found: list[tuple[int, Any]] = []
        async for client in app_client(app):
            sid = (await client.post(FIRST, json={"text": "hi", "id": "a"}, headers=ACME)).json()["session"]
            url = f"/v1/agents/Echo/sessions/{sid}/messages"

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(3):
                    yield b" " * 4_000  # no Content-Length: the limit is checked as the body comes

            requests: list[tuple[str, dict[str, Any]]] = [
                (FIRST, {"json": {"text": "hi", "id": "a"}, "headers": ACME}),
                (url, {"json": {"text": "two", "id": "b"}, "headers": ACME}),
                (url, {"json": {"text": "two", "id": "b"}, "headers": ACME}),  # a retry
                (url, {"json": {"text": "x", "id": "c"}, "headers": {**ACME, "Idempotency-Key": "d"}}),
                (url, {"content": b"{not json", "headers": ACME}),
                (url, {"content": b"", "headers": ACME}),
                (url, {"json": {"txt": "x"}, "headers": ACME}),
                (url, {"json": {"text": "x", "id": "i" * 201}, "headers": ACME}),
                (url, {"json": {"text": "x" * 20_000}, "headers": ACME}),
                (url, {"content": chunks(), "headers": ACME}),
                (url, {"json": {"text": "bad\x00"}, "headers": ACME}),
                (url, {"json": {"text": "x"}, "headers": GLOBEX}),
                ("/v1/agents/Echo/sessions/missing/messages", {"json": {"text": "x"}, "headers": ACME}),
                (FIRST, {"json": ["not", "an", "object"], "headers": {"X-API-Key": "key-acme"}}),
            ]
            for path, request in requests:
                response = await client.post(path, **request)
                found.append((response.status_code, json.loads(UUID.sub("ID", response.text))))
        return found

    lean_runtime, routes_runtime = await _runtime(tmp_path, "lean"), await _runtime(tmp_path, "routes")
    routes_only = create_app(routes_runtime, api_keys=KEYS, max_body=10_000, scheduler=False)
    routes_only.user_middleware = [m for m in routes_only.user_middleware if m.cls is not MessageFastPath]
    lean_answers = await answers(create_app(lean_runtime, api_keys=KEYS, max_body=10_000, scheduler=False))
    assert lean_answers == await answers(routes_only)
    assert [status for status, _ in lean_answers] == [200, 200, 200, 422, 400, 422, 422, 422, 413, 413, 422, 403,
                                                      404, 422]
    await lean_runtime.close()
    await routes_runtime.close()


async def test_a_client_that_leaves_mid_body_is_a_400(tmp_path: Path) -> None:
    runtime = await _runtime(tmp_path, "lean")
    app = create_app(runtime, api_keys={}, scheduler=False)
    reached = _counting_router(app)
    sent: list[Message] = []
    incoming: list[Message] = [{"type": "http.request", "body": b'{"te', "more_body": True},
                               {"type": "http.disconnect"}]

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "method": "POST", "path": FIRST, "raw_path": FIRST.encode(), "root_path": "",
                    "query_string": b"", "headers": [(b"content-type", b"application/json")], "scheme": "http",
                    "server": ("test", 80), "client": ("127.0.0.1", 1), "http_version": "1.1",
                    "asgi": {"version": "3.0"}}
    async with app.router.lifespan_context(app):
        await app(scope, receive, send)
    assert sent[0]["status"] == 400
    assert b'"client-disconnected"' in sent[1]["body"]
    assert reached == []
    await runtime.close()


async def test_under_a_root_path_and_behind_cors(tmp_path: Path) -> None:
    runtime = await _runtime(tmp_path, "lean")
    app = create_app(runtime, api_keys={}, scheduler=False, cors_origins=["https://shop.example"])
    reached = _counting_router(app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, root_path="/api"), base_url="http://test") as client:
        answered = await client.post("/api" + FIRST, json={"text": "hi"}, headers={"Origin": "https://shop.example"})
        assert answered.json()["message"] == "reply 1: hi"
        assert answered.headers["access-control-allow-origin"] == "https://shop.example"
        preflight = await client.options("/api" + FIRST, headers={
            "Origin": "https://shop.example", "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 200
    assert reached == []
    await runtime.close()
