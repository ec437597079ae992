"""``/readyz`` answers within its 2 seconds when PostgreSQL stops answering mid-query (through a TCP
proxy that stops forwarding): the probe is cancelled, not waited for, since psycopg's cancellation
of a query the server never answers takes ten seconds more. Real PostgreSQL; skipped without one."""

from __future__ import annotations

import asyncio
import time
import uuid

import psycopg
import pytest
from pg_proxy import pg_proxy
from server_agents import echo_agent
from server_client import ACME, KEYS, app_client
from store_backends import require_postgres

from tether.server import create_app
from tether.stores import PostgresStore
from tether.testing import FakeClock

pytestmark = pytest.mark.postgres


async def test_readyz_answers_within_two_seconds_while_the_database_hangs(clock: FakeClock) -> None:
    url = require_postgres()
    schema = f"tether_test_{uuid.uuid4().hex[:12]}"
    try:
        async with pg_proxy(url) as proxy:
            store = PostgresStore(proxy.url, schema=schema, clock=clock)
            app = create_app([echo_agent()], store=store, api_keys=KEYS, scheduler=False)
            async for client in app_client(app):
                for _ in range(3):  # a pooled connection answered: the next probe runs on it
                    assert (await client.get("/readyz")).status_code == 200
                proxy.mode = "hang"
                for _ in range(2):  # the second finds the first probe still being cancelled
                    started = time.monotonic()
                    ready = await client.get("/readyz")
                    assert time.monotonic() - started < 3
                    assert ready.status_code == 503
                    assert ready.json()["message"] == "store unreachable: no answer within 2s"
                proxy.mode = "up"
                deadline = time.monotonic() + 20
                while (await client.get("/readyz")).status_code != 200:
                    assert time.monotonic() < deadline, "not ready 20 s after the database answered again"
                    await asyncio.sleep(0.1)
                created = await client.post("/v1/agents/Echo/sessions", headers=ACME)
                assert created.status_code == 201
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
