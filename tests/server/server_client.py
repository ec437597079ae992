"""Helpers of the server tests: two tenants' keys and an httpx client over an app's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette

KEYS = {"key-acme": "acme", "key-globex": "globex"}
ACME = {"Authorization": "Bearer key-acme"}
GLOBEX = {"Authorization": "Bearer key-globex"}


async def app_client(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` (no socket) with the app's lifespan running."""
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


async def served(app: Starlette) -> AsyncIterator[str]:
    """``app`` on a real uvicorn server in this event loop, on a free 127.0.0.1 port; yields its
    base URL and shuts the server down (lifespan included) afterwards."""
    import asyncio

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning",
                                           timeout_graceful_shutdown=5))
    task = asyncio.ensure_future(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


class Frames:
    """Reads server-sent event frames (``id``, ``event``, ``data`` parsed as JSON; comments as
    ``(None, None, ":" + text)``) from an open streaming response."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self) -> tuple[int | None, str | None, object]:
        import asyncio
        import json

        fields: dict[str, str] = {}
        async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
            async for line in self._lines:
                if not line:
                    if fields:
                        break
                    continue
                if line.startswith(":"):
                    return None, None, line
                name, _, value = line.partition(": ")
                fields[name] = value
        if not fields:
            raise EOFError("the stream ended")
        seq = int(fields["id"]) if "id" in fields else None
        return seq, fields.get("event"), json.loads(fields["data"])

    async def rest(self) -> list[str]:
        """The lines left until the server ends the stream (comments and blanks dropped)."""
        import asyncio

        async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
            return [line async for line in self._lines if line and not line.startswith(":")]
