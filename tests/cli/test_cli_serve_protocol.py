"""``tether serve`` without the ``fast`` extra: uvicorn's h11 protocol on a transport that writes
what one step of the event loop wrote in one call, so an answer's head and body go out in one
``send`` (they were two); bytes keep their order and a close writes what is kept first."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from tether.cli._protocol import CoalescingH11Protocol, CoalescingTransport, http_protocol, http_stack


class Recording(asyncio.Transport):
    """A transport that records each ``write`` call (and its close)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def test_the_writes_of_one_step_go_out_in_one_call_in_order() -> None:
    raw = Recording()
    transport = CoalescingTransport(raw, asyncio.get_running_loop())
    transport.write(b"head ")
    transport.write(b"")  # nothing: nothing kept
    transport.write(bytearray(b"body"))
    assert raw.writes == []  # kept until the end of this step of the loop
    await asyncio.sleep(0)
    assert raw.writes == [b"head body"]
    transport.write(b"next")
    await asyncio.sleep(0)
    assert raw.writes == [b"head body", b"next"]  # one write alone is written as it is
    transport.write(b"last words")
    transport.close()  # what is kept is written before the close
    assert raw.writes[-1] == b"last words" and raw.closed
    await asyncio.sleep(0)
    assert raw.writes[-1] == b"last words" and len(raw.writes) == 3  # not twice
    assert transport.get_extra_info("peername") == ("127.0.0.1", 5000)  # the rest: the transport's own
    assert transport.is_closing()


async def test_an_answer_is_one_write_with_its_head_and_body() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        await receive()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"11")]})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    config = uvicorn.Config(app, http=CoalescingH11Protocol, lifespan="off", log_level="warning", access_log=False)
    config.load()
    protocol = CoalescingH11Protocol(config, ServerState(), {})
    raw = Recording()
    protocol.connection_made(raw)  # type: ignore[arg-type]
    for request in (1, 2):  # keep-alive: two requests on the connection, one write each
        protocol.data_received(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}")
        for _ in range(20):
            await asyncio.sleep(0)
            if len(raw.writes) == request:
                break
        assert len(raw.writes) == request
        answer = raw.writes[-1]
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b'\r\n\r\n{"ok":true}')
    protocol.connection_lost(None)


def test_serve_runs_the_coalescing_protocol_without_the_fast_extra() -> None:
    if importlib.util.find_spec("httptools") is not None:
        assert http_protocol() == "auto"  # uvicorn picks httptools'
    else:
        assert http_protocol() is CoalescingH11Protocol


def test_the_start_up_lines_say_what_serves_http_and_how_to_serve_it_faster(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without(*names: str) -> Any:
        return lambda name, *args: None if name in names else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without("httptools", "uvloop"))
    assert http_protocol() is CoalescingH11Protocol
    assert http_stack() == ("HTTP on h11 and asyncio (pip install 'tether[fast]' for httptools and uvloop: "
                            "less CPU per turn)")
    if real("httptools") is None:
        return  # what follows needs the fast extra's parser to be installed
    monkeypatch.setattr(importlib.util, "find_spec", without("uvloop"))  # Windows: httptools without uvloop
    assert http_protocol() == "auto" and http_stack() == "HTTP on httptools and asyncio"
    monkeypatch.setattr(importlib.util, "find_spec", real)
    assert http_stack() == ("HTTP on httptools and uvloop" if real("uvloop") else "HTTP on httptools and asyncio")


@pytest.mark.parametrize("payload", [b"x" * 70_000])
async def test_a_large_answer_is_written_whole(payload: bytes) -> None:
    raw = Recording()
    transport = CoalescingTransport(raw, asyncio.get_running_loop())
    transport.writelines([b"head\r\n\r\n", payload])
    await asyncio.sleep(0)
    assert raw.writes == [b"head\r\n\r\n" + payload]
