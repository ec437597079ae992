"""Storage backends for the store tests: memory, sqlite (tmp_path) and postgres.

PostgreSQL tests read ``TETHER_TEST_POSTGRES_URL`` and skip, saying why, when it is unset or the
server is unreachable. Each PostgreSQL backend gets its own schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from tether.stores import MemoryStore, PostgresStore, SQLiteStore, Store
from tether.testing import FakeClock

PG_ENV = "TETHER_TEST_POSTGRES_URL"


@functools.cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL tests cannot run, or None when they can."""
    url = os.environ.get(PG_ENV)
    if not url:
        return f"{PG_ENV} is not set; PostgreSQL store tests need a server"
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"PostgreSQL at {PG_ENV} is unreachable: {type(exc).__name__}: {exc}"
    return None


def require_postgres() -> str:
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    return os.environ[PG_ENV]


class Backend:
    """One storage location; ``make`` opens another store instance on it."""

    name: str
    target: str = ""
    schema: str = ""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.stores: list[Store] = []

    async def make(self, clock: FakeClock | None = None) -> Store:
        store = self._new(clock or self.clock)
        self.stores.append(store)
        return store

    def _new(self, clock: FakeClock) -> Store:
        raise NotImplementedError

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        """Overwrite the stored document of ``session_id`` behind the store's back."""
        raise NotImplementedError

    async def aclose(self) -> None:
        for store in self.stores:
            await store.close()


class MemoryBackend(Backend):
    name = "memory"
    shared: MemoryStore | None = None

    def _new(self, clock: FakeClock) -> Store:
        if self.shared is None:
            self.shared = MemoryStore(clock=clock)
        return self.shared

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        assert self.shared is not None
        self.shared._docs[session_id] = doc_json

    async def aclose(self) -> None:
        if self.shared is not None:
            await self.shared.close()


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, clock: FakeClock, tmp_path: Path) -> None:
        super().__init__(clock)
        self.target = str(tmp_path / "nested" / "tether.db")

    def _new(self, clock: FakeClock) -> Store:
        return SQLiteStore(self.target, clock=clock)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        conn = sqlite3.connect(self.target, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        self.execute("UPDATE tether_sessions SET doc = ? WHERE id = ?", (doc_json, session_id))


class PostgresBackend(Backend):
    name = "postgres"

    def __init__(self, clock: FakeClock, url: str) -> None:
        super().__init__(clock)
        self.target = url
        self.schema = f"tether_test_{uuid.uuid4().hex[:12]}"

    def _new(self, clock: FakeClock) -> Store:
        return PostgresStore(self.target, schema=self.schema, clock=clock, pool_size=4)

    async def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.target, autocommit=True) as conn:
            await conn.execute(sql, params)

    async def corrupt(self, session_id: str, doc_json: str) -> None:
        await self.execute(
            f'UPDATE "{self.schema}".tether_sessions SET doc = %s::json WHERE id = %s', (doc_json, session_id)
        )

    async def aclose(self) -> None:
        await super().aclose()
        await self.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]
DURABLE = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


async def open_backend(name: str, clock: FakeClock, tmp_path: Path) -> Backend:
    if name == "memory":
        return MemoryBackend(clock)
    if name == "sqlite":
        return SQLiteBackend(clock, tmp_path)
    return PostgresBackend(clock, require_postgres())


async def run_in_lockstep(procs: list[asyncio.subprocess.Process], timeout: float = 120) -> list[dict[str, Any]]:
    """Wait until every worker printed ``ready``, release them together (a line on stdin), and
    return the JSON object each printed last. Kills what is still running on the way out."""
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            if line.strip() != b"ready":
                _, err = await proc.communicate()
                pytest.fail(f"worker did not start: {line!r} {err.decode()[-2000:]}")
        outputs = await asyncio.wait_for(asyncio.gather(*(p.communicate(b"go\n") for p in procs)), timeout)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results
