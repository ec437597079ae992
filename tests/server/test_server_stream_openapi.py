"""SSE replies, the OpenAPI document (it describes every route the app serves), and CORS."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from server_agents import talker_agent
from server_client import ACME, KEYS, app_client
from starlette.routing import Route

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore

ECHO = "/v1/agents/Echo/sessions"


def _frames(text: str) -> list[tuple[str, dict[str, object]]]:
    frames = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        frames.append((fields["event"], json.loads(fields["data"])))
    return frames


async def test_a_message_with_accept_event_stream_streams_the_reply_and_events(client: httpx.AsyncClient) -> None:
    sid = (await client.post(ECHO, headers=ACME)).json()["session"]
    response = await client.post(f"{ECHO}/{sid}/messages", json={"text": "hi"},
                                 headers={**ACME, "Accept": "text/event-stream"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    frames = _frames(response.text)
    kinds = [kind for kind, _ in frames]
    assert kinds[0] == "delta" and frames[0][1] == {"text": "reply 1: hi"}
    assert "event" in kinds and kinds[-1] == "envelope"
    assert frames[-1][1]["message"] == "reply 1: hi" and frames[-1][1]["session"] == sid
    assert all(isinstance(data.get("type"), str) for kind, data in frames if kind == "event")


async def test_the_openapi_document_describes_every_route(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    assert document["openapi"] == "3.1.0"
    described = {(method.upper(), path) for path, ops in document["paths"].items() for method in ops}
    app = client._transport.app  # type: ignore[attr-defined]
    served = {(method, route.path) for route in app.routes if isinstance(route, Route)
              for method in (route.methods or ()) if method != "HEAD"}
    served -= {("GET", "/openapi.json"), ("GET", "/favicon.ico")}  # the document itself, and the browser's icon
    assert described == served
    message = document["paths"]["/v1/agents/{agent}/sessions/{session_id}/messages"]["post"]
    schema_ref = message["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert document["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]["required"] == ["text"]


async def test_cors_is_off_by_default_and_on_for_named_origins(runtime: Runtime, tmp_path: Path) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    async for closed in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        response = await closed.options("/v1/agents", headers=preflight)
        assert "access-control-allow-origin" not in response.headers
    async for opened in app_client(create_app(runtime, api_keys=KEYS, scheduler=False,
                                           cors_origins=["https://app.example"])):
        response = await opened.options("/v1/agents", headers=preflight)
        assert response.headers["access-control-allow-origin"] == "https://app.example"


async def test_a_streamed_reply_arrives_in_token_deltas(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "talk.db")
    runtime = Runtime(talker_agent("Hello there, my good friend!"), store=store)
    async for talk in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        sid = (await talk.post("/v1/agents/Talker/sessions", headers=ACME)).json()["session"]
        response = await talk.post(f"/v1/agents/Talker/sessions/{sid}/messages", json={"text": "hi", "id": "m1"},
                                   headers={**ACME, "Accept": "text/event-stream"})
        frames = _frames(response.text)
        deltas = [str(data["text"]) for kind, data in frames if kind == "delta"]
        assert len(deltas) > 3 and "".join(deltas) == "Hello there, my good friend!"
        assert frames[-1] == ("envelope", {"success": True, "completed": False, "session": sid, "code": None,
                                           "message": "Hello there, my good friend!", "content_type": "text/plain"})
        retried = _frames((await talk.post(f"/v1/agents/Talker/sessions/{sid}/messages",
                                           json={"text": "hi", "id": "m1"},
                                           headers={**ACME, "Accept": "text/event-stream"})).text)
        assert [kind for kind, _ in retried if kind == "delta"] == []  # nothing ran again: no model call
        assert retried[-1][1]["message"] == "Hello there, my good friend!"
    await runtime.close()
