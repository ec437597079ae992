"""PostgreSQL outages as a worker meets them, through a TCP proxy (``pg_proxy``) the test turns off:
a database that cannot be reached is ``SESSION_STORE_ERROR`` that says so (never a busy session),
the pools reconnect about a second after it answers again, every connection finds a dead peer
on its own (TCP keepalives and ``tcp_user_timeout``), and a URL that cannot work fails at once
with PostgreSQL's reason. Real PostgreSQL; skipped without one."""

from __future__ import annotations

import asyncio
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from pg_proxy import PgProxy, pg_proxy
from store_backends import require_postgres

from tether.engine.core.session import Session
from tether.errors import SessionLeaseTimeout, StoreError
from tether.stores import PostgresStore
from tether.stores._postgres_lease import PostgresLease
from tether.testing import FakeClock

pytestmark = pytest.mark.postgres

NewSession = Callable[..., Session]
MakeStore = Callable[..., PostgresStore]


@pytest.fixture
async def proxied(clock: FakeClock) -> AsyncIterator[tuple[PgProxy, MakeStore]]:
    """A proxy to the test server, and a maker of stores on one new schema through it."""
    url = require_postgres()
    schema = f"tether_test_{uuid.uuid4().hex[:12]}"
    stores: list[PostgresStore] = []
    try:
        async with pg_proxy(url) as proxy:

            def make(**options: Any) -> PostgresStore:
                stores.append(PostgresStore(proxy.url, schema=schema, clock=clock, **options))
                return stores[-1]

            try:
                yield proxy, make
            finally:
                proxy.mode = "up"
                for store in stores:
                    await store.close()
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _database(url: str, name: str) -> str:
    """``url`` naming the database ``name``."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def test_a_database_that_cannot_be_reached_is_a_store_error_not_a_busy_session(
        proxied: tuple[PgProxy, MakeStore], new_session: NewSession) -> None:
    proxy, make = proxied
    store, other = make(connect_timeout=1.0), make()
    created = await store.create(new_session())
    async with store.lease_and_load(created.id):  # the lease pool has a connection now
        pass
    proxy.mode = "refuse"
    proxy.cut()
    await asyncio.sleep(0.2)  # the resets have arrived: the pools' connections are dead, and say so
    for attempt in ("lease", "load"):
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            if attempt == "lease":
                async with store.lease_and_load(created.id, timeout=8):
                    pytest.fail("leased a session in a database that cannot be reached")
            else:
                await store.load(created.id)
        waited = time.monotonic() - started
        assert type(caught.value) is StoreError, caught.value  # SESSION_STORE_ERROR, not SESSION_LEASE_TIMEOUT
        assert caught.value.operation == attempt and caught.value.session_id == created.id
        assert re.search(rf"store {attempt} failed: cannot reach the database \(no connection for \d+s\): ",
                         str(caught.value)), caught.value  # 1 s on a quiet machine
        assert waited < 4  # the store's connect wait (1 s), not the lease timeout (8 s)
    proxy.mode = "up"
    async with other.lease(created.id):  # a lease another connection holds is still a busy session
        with pytest.raises(SessionLeaseTimeout):
            async with store.lease_and_load(created.id, timeout=0.5):
                pytest.fail("leased a session another holder has")


@pytest.mark.slow
async def test_both_pools_reconnect_soon_after_the_database_comes_back(
        proxied: tuple[PgProxy, MakeStore], new_session: NewSession) -> None:
    proxy, make = proxied
    store = make(connect_timeout=3.0)  # a load after the outage waits up to 3 s for its pool's next try
    created = await store.create(new_session())
    async with store.lease_and_load(created.id):
        pass
    proxy.mode = "refuse"
    proxy.cut()
    down = time.monotonic()
    while time.monotonic() - down < 8:  # traffic goes on during the outage, and fails
        with pytest.raises(StoreError):
            async with store.lease_and_load(created.id, timeout=1):
                pass
        with pytest.raises(StoreError):
            await store.load(created.id)
    proxy.mode = "up"  # (psycopg's pool alone would try next at about 15 s: 1, 2, 4, 8 s apart)
    back = time.monotonic()

    async def lease() -> Session | None:
        async with store.lease_and_load(created.id, timeout=30) as held:
            return await held.load()

    assert await asyncio.gather(lease(), store.load(created.id)) == [created, created]  # a request's two pools
    # about a second on a quiet machine; psycopg's own backoff would take 7 s or more here. The bound is
    # loose so a loaded CI machine does not fail it: it tells the two apart, it does not time the store
    assert time.monotonic() - back < 6


async def test_every_connection_finds_a_dead_peer_unless_the_url_says_otherwise(
        proxied: tuple[PgProxy, MakeStore], new_session: NewSession) -> None:
    proxy, make = proxied
    store = make()
    created = await store.create(new_session())
    async with store._connection("probe") as conn:
        main = conn.info.get_parameters()
    async with store.lease_and_load(created.id) as held:
        assert isinstance(held.backend, PostgresLease)
        leased = held.backend.conn.info.get_parameters()
    for params in (main, leased):
        assert {name: params.get(name) for name in ("keepalives", "keepalives_idle", "keepalives_interval",
                                                    "keepalives_count", "tcp_user_timeout", "connect_timeout")} \
            == {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
                "tcp_user_timeout": "10000", "connect_timeout": "5"}
    own = PostgresStore(proxy.url + "?keepalives_idle=30&tcp_user_timeout=20000", schema=store.schema)
    try:
        async with own._connection("probe") as conn:
            params = conn.info.get_parameters()
    finally:
        await own.close()
    assert (params["keepalives_idle"], params["tcp_user_timeout"], params["keepalives_count"]) == ("30", "20000", "3")


async def test_a_database_that_does_not_exist_fails_at_once_with_the_servers_reason() -> None:
    missing = f"tether_missing_{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await PostgresStore.open(_database(require_postgres(), missing))
    assert time.monotonic() - started < 3  # no retry: it cannot mend
    message = str(caught.value)
    assert message.startswith("store open failed: cannot connect to the database: connection to server at ")
    assert message.endswith(f'failed: FATAL: database "{missing}" does not exist'), message
    assert caught.value.code == "SESSION_STORE_ERROR" and "\n" not in message


async def test_a_refused_connection_is_retried_for_the_connect_wait_then_named() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await PostgresStore.open(f"postgresql://postgres@127.0.0.1:{port}/tether", connect_timeout=1.5)
    assert 1.0 < time.monotonic() - started < 4
    assert str(caught.value).startswith(
        f'store open failed: cannot connect to the database (tried for 1.5s): connection to server at "127.0.0.1", '
        f"port {port} failed: Connection refused"), caught.value


async def test_a_database_that_never_answers_fails_the_first_call_after_the_connect_wait(
        proxied: tuple[PgProxy, MakeStore]) -> None:
    proxy, make = proxied
    proxy.mode = "hang"  # connections are accepted, and nothing ever comes back
    store = make(connect_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await store.list(limit=1)
    assert time.monotonic() - started < 3
    assert str(caught.value) == "store open failed: cannot connect to the database (tried for 1s): " \
                                "the server did not answer"
