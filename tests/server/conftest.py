"""Fixtures for the server tests: an app over a real SQLite store, driven through httpx's ASGI
transport (no socket), with two tenants' keys."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stores"))  # store_backends (PostgreSQL cases)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))  # model_server (a fake provider)

from server_agents import echo_agent, refund_agent
from server_client import KEYS, app_client

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore
from tether.testing import FakeClock


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """schemathesis makes one test per API operation, each named ``test[GET /path]``, but under
    pytest 9 they all share the bare function's node id; pytest-xdist schedules by node id and would
    run only one of them. Each gets the node id its name says."""
    for item in items:
        label = getattr(item, "operation_label", None)
        if label and type(item).__name__ == "SchemathesisFunction" and not item.nodeid.endswith("]"):
            item._id = item.parent.id.child(item.name)  # type: ignore[attr-defined,union-attr]


@pytest.fixture
def refunds() -> list[int]:
    return []


@pytest.fixture
async def runtime(tmp_path: Path, refunds: list[int]) -> AsyncIterator[Runtime]:
    clock = FakeClock("2026-01-05T09:00:00Z")
    runtime = Runtime([echo_agent(), refund_agent(refunds)], store=SQLiteStore(tmp_path / "t.db", clock=clock),
                      clock=clock)
    try:
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app with the two tenants' keys (no default auth header)."""
    async for c in app_client(create_app(runtime, api_keys=KEYS, max_body=10_000)):
        yield c


@pytest.fixture
async def open_client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app with no keys (open)."""
    async for c in app_client(create_app(runtime, api_keys={})):
        yield c
