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
