"""A tiny scripted HTTP server on 127.0.0.1 speaking the OpenAI and Anthropic wire formats.

Each request pops the next scripted :class:`Reply` (JSON or SSE, any status, optional delay) and is
recorded (path, headers, JSON body) so tests can assert on what the real SDKs sent. With a
``responder``, a request that finds no scripted reply is answered by ``responder(recorded)``
instead (``bench/tokens.py`` answers a whole conversation that way).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[tuple[str | None, Any]] | None = None
    delay: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeProvider:
    def __init__(self, responder: Callable[[Recorded], Reply] | None = None) -> None:
        self.replies: deque[Reply] = deque()
        self.responder = responder
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                recorded = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with provider._lock:
                    provider.requests.append(recorded)
                    reply = provider.replies.popleft() if provider.replies else None
                if reply is None and provider.responder is not None:
                    reply = provider.responder(recorded)
                if reply is None:
                    reply = Reply(599, {"error": {"message": "no scripted reply left", "type": "test"}})
                if reply.delay:
                    time.sleep(reply.delay)
                with contextlib.suppress(OSError):
                    provider._write(self, reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def reset(self) -> None:
        self.replies.clear()
        self.requests.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def _write(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.sse is not None:
            handler.send_response(reply.status)
            handler.send_header("content-type", "text/event-stream")
            handler.send_header("connection", "close")
            for k, v in reply.headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            for event, data in reply.sse:
                chunk = ""
                if event:
                    chunk += f"event: {event}\n"
                chunk += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                handler.wfile.write(chunk.encode())
                handler.wfile.flush()
            handler.close_connection = True
            return
        payload = json.dumps(reply.body).encode() if not isinstance(reply.body, bytes) else reply.body
        handler.send_response(reply.status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        for k, v in reply.headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)


# --------------------------------------------------------------------------- OpenAI wire


def chat_completion(
    content: str | None = "Hello!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "gpt-4o-mini",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def openai_chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": choices,
        "usage": usage,
    }


def openai_error(message: str, type_: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


# --------------------------------------------------------------------------- Anthropic wire


def anthropic_message(
    content: list[dict[str, Any]],
    *,
    stop: str = "end_turn",
    usage: dict[str, Any] | None = None,
    model: str = "claude-haiku-4-5",
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


def anthropic_error(message: str, type_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}}


def anthropic_sse(events: list[dict[str, Any]]) -> list[tuple[str | None, Any]]:
    return [(e["type"], e) for e in events]
