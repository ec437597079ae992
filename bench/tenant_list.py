"""The tenant filter of ``Store.list`` and ``Store.handoffs`` at many sessions.

Fills a fresh SQLite file (and, with ``--postgres URL``, a throwaway PostgreSQL schema) with
``--sessions`` session documents spread over ``--tenants`` tenants (bulk rows written straight
into the store's tables, each a real document with ``metadata.config.tenant``; one session in
``--handed-off`` is handed off, with its ``handoff`` event), then times, as the median of
``--repeat`` calls:

* ``list(tenant="rare", limit=100)``: a tenant with 10 old sessions among them all;
* ``list(tenant=T, limit=100)``: one tenant's newest sessions;
* ``list(tenant=T, status="handed_off", limit=100)``: the tenant's waiting sessions (what
  ``GET /v1/handoffs`` asks the store for).

    python bench/tenant_list.py [--sessions 20000] [--tenants 10] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tether.engine.core.session import Session
from tether.stores import SQLiteStore, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _rows(sessions: int, tenants: int, every: int) -> list[tuple[str, str, str, datetime, str, bool]]:
    rows = []
    for index in range(sessions):
        tenant = "rare" if index % 2000 == 0 else f"t{index % tenants}"  # 10 old sessions in 20k
        status = "handed_off" if index % every == 0 else "running"
        at = T0 + timedelta(seconds=index)
        doc = Session(id=str(uuid.uuid4()), agent="support", status=status, created_at=at, saved_at=at,
                      metadata={"config": {"tenant": tenant}}, data={"order": {"id": index, "note": "x" * 200}})
        rows.append((doc.id, tenant, status, at, doc.model_dump_json(exclude_none=True), status == "handed_off"))
    return rows


def _us(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000)


def fill_sqlite(path: Path, rows: list[tuple[str, str, str, datetime, str, bool]]) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    with conn:
        conn.executemany("INSERT INTO tether_sessions (id, agent, status, revision, created_at, saved_at, doc) "
                         "VALUES (?, 'support', ?, 0, ?, ?, ?)",
                         [(i, s, _us(at), _us(at), doc) for i, _, s, at, doc, _ in rows])
        conn.executemany("INSERT INTO tether_events (session_id, seq, type, at, body) VALUES (?, 1, 'handoff', ?, ?)",
                         [(i, _us(at), json.dumps({"type": "handoff", "reason": "asked"}))
                          for i, _, _, at, _, handed in rows if handed])
    conn.execute("ANALYZE")
    conn.close()


async def fill_postgres(store: Any, rows: list[tuple[str, str, str, datetime, str, bool]]) -> None:
    async with store._pool.connection() as conn:
        s = store._s
        async with conn.cursor() as cur:
            await cur.executemany(
                f"INSERT INTO {s}.tether_sessions (id, agent, status, revision, created_at, saved_at, doc) "
                "VALUES (%s, 'support', %s, 0, %s, %s, %s)", [(i, st, at, at, doc) for i, _, st, at, doc, _ in rows])
            await cur.executemany(
                f"INSERT INTO {s}.tether_events (session_id, seq, type, at, body) VALUES (%s, 1, 'handoff', %s, %s)",
                [(i, at, json.dumps({"type": "handoff", "reason": "asked"})) for i, _, _, at, _, h in rows if h])
        await conn.execute(f"ANALYZE {s}.tether_sessions")
        await conn.execute(f"ANALYZE {s}.tether_events")


async def median_ms(call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    await call()  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure(name: str, store: Store, tenant: str, repeat: int) -> None:
    rare = await median_ms(lambda: store.list(tenant="rare", limit=100), repeat)
    print(f"{name}: list(tenant=rare) {rare:.2f} ms · ", end="")
    listed = await median_ms(lambda: store.list(tenant=tenant, limit=100), repeat)
    handed = await median_ms(lambda: store.list(tenant=tenant, status="handed_off", limit=100), repeat)
    print(f"list(tenant) {listed:.2f} ms · list(tenant, handed_off) {handed:.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--handed-off", type=int, default=50, help="one session in N is handed off")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--postgres", default=None)
    args = parser.parse_args()
    rows = _rows(args.sessions, args.tenants, args.handed_off)
    print(f"{args.sessions} sessions, {args.tenants} tenants, 1 in {args.handed_off} handed off")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        store = await SQLiteStore.open(path)
        fill_sqlite(path, rows)
        await measure("sqlite", store, "t3", args.repeat)
        await store.close()
    if args.postgres:
        from tether.stores import PostgresStore

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        pg = await PostgresStore.open(args.postgres, schema=schema)
        try:
            await fill_postgres(pg, rows)
            await measure("postgres", pg, "t3", args.repeat)
        finally:
            async with pg._pool.connection() as conn:
                await conn.execute(f"DROP SCHEMA {pg._s} CASCADE")
            await pg.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
