"""What the OpenAI-endpoint tests share: the app served on a real socket over a test's ``runtime``
fixture (a SQLite store each file builds with its own agents), and an ``openai`` client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from server_client import KEYS, served

from tether.runtime import Runtime
from tether.server import create_app

__all__ = ["base", "openai_client"]


@pytest.fixture
async def base(runtime: Runtime) -> AsyncIterator[str]:
    """The served app's base URL (keys: ``server_client.KEYS``; no wake scheduler)."""
    async for url in served(create_app(runtime, api_keys=KEYS, scheduler=False)):
        yield url


def openai_client(base: str, **options: Any) -> openai.AsyncOpenAI:
    """An ``openai`` client for tenant acme at ``base`` (no retries unless ``options`` say so)."""
    return openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="key-acme", **{"max_retries": 0, **options})
