"""Runtime turn latency and bytes written per turn over one long conversation, per store.

One conversation of ``--turns`` messages through ``Runtime.run`` with an agent whose flow answers
every message with an engine-rendered reply that stays (no model call). Reported per store:

* the median latency of a whole request (lock, load, turn, CAS save) over all turns, over the
  first 50 and over the last 50 (the echo turn never moves to another node, so it makes no
  checkpoint save, and with no restore hook there is no restore save: one write per request);
* the bytes written at turn 1 and at the last turn: the session JSON plus the records JSON of every
  store write of that request (measured by wrapping the store's ``create``/``save``);
* for SQLite, the growth of the database file plus its WAL at those turns, and the final sizes.

With ``--agent relay`` every message instead runs a two-node turn (an action, then the reply):
one move to another node, so one checkpoint save plus the final save per request.

    python bench/runtime_turns.py [--turns 500] [--agent echo|relay]
    TETHER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/runtime_turns.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether import Agent, Flow, Message, action, end, on_message, reply, stay
from tether.engine.session import Session
from tether.runtime import Runtime
from tether.stores import MemoryStore, PostgresStore, SQLiteStore, Store, TurnRecords
from tether.testing import FakeClock


def echo_agent() -> Agent:
    echo = reply("echo", response="Noted, thank you. Anything else I can help you with today?", next=stay)
    return Agent("Echo", flows=[Flow("echo", start=echo, nodes=[echo], on=[on_message()])])


def relay_agent() -> Agent:
    @action("note")
    async def note(state: dict[str, Any], ctx: Any) -> None:
        ctx.set(count=int(ctx.data.get("count", 0)) + 1)

    answer = reply("answer", response="Noted, thank you. Anything else I can help you with today?", next=end("done"))
    return Agent("Echo", flows=[Flow("relay", start=note, nodes=[note, answer], on=[on_message(repeat="always")])])


AGENTS = {"echo": echo_agent, "relay": relay_agent}


@dataclass
class Meter:
    """Bytes handed to the store's writes (session JSON + records JSON)."""

    written: int = 0
    writes: int = 0
    per_turn: list[int] = field(default_factory=list)

    def add(self, session: Session, records: TurnRecords | None) -> None:
        self.writes += 1
        self.written += len(session.model_dump_json()) + (len(records.model_dump_json()) if records else 0)


def metered(store: Store, meter: Meter) -> Store:
    """Wrap ``store.create``/``store.save`` in place to count the bytes they are given."""
    create: Callable[..., Awaitable[Session]] = store.create
    save: Callable[..., Awaitable[Session]] = store.save

    async def counted_create(session: Session, records: TurnRecords | None = None) -> Session:
        meter.add(session, records)
        return await create(session, records)

    async def counted_save(session: Session, expected: int, records: TurnRecords | None = None) -> Session:
        meter.add(session, records)
        return await save(session, expected, records)

    store.create = counted_create  # type: ignore[method-assign]
    store.save = counted_save  # type: ignore[method-assign,assignment]
    return store


def disk_size(path: Path | None) -> int:
    if path is None:
        return 0
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


async def conversation(store: Store, turns: int, db: Path | None, agent: str = "echo") -> dict[str, Any]:
    meter = Meter()
    clock = FakeClock()
    runtime = Runtime(AGENTS[agent](), store=metered(store, meter), clock=clock)
    latencies: list[float] = []
    disk: list[int] = []
    session_id: str | None = None
    try:
        for turn in range(1, turns + 1):
            clock.advance("1s")
            before_bytes, before_disk = meter.written, disk_size(db)
            started = time.perf_counter()
            response = await runtime.run("Echo", Message(f"message number {turn}", id=f"m{turn}"),
                                         session_id=session_id)
            latencies.append(time.perf_counter() - started)
            assert response.success, response.message
            session_id = response.session
            meter.per_turn.append(meter.written - before_bytes)
            disk.append(disk_size(db) - before_disk)
        doc = await runtime.store.load(session_id or "")
        assert doc is not None
    finally:
        await runtime.close()
    return {
        "median_ms": statistics.median(latencies) * 1000,
        "first50_ms": statistics.median(latencies[:50]) * 1000,
        "last50_ms": statistics.median(latencies[-50:]) * 1000,
        "bytes_first": meter.per_turn[0],
        "bytes_last": meter.per_turn[-1],
        "writes": meter.writes,
        "doc_bytes": len(doc.model_dump_json()),
        "revision": doc.revision,
        "disk_first": disk[0] if db else None,
        "disk_last": disk[-1] if db else None,
        "disk_avg_last50": statistics.mean(disk[-50:]) if db else None,
        "disk_total": disk_size(db) if db else None,
    }


async def main(turns: int, agent: str = "echo") -> None:
    results: dict[str, dict[str, Any]] = {}
    results["memory"] = await conversation(MemoryStore(), turns, None, agent)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        results["sqlite"] = await conversation(SQLiteStore(db), turns, db, agent)
    url = os.environ.get("TETHER_TEST_POSTGRES_URL")
    if url:
        schema = f"tether_bench_{uuid.uuid4().hex[:8]}"
        try:
            results["postgres"] = await conversation(PostgresStore(url, schema=schema), turns, None, agent)
        finally:
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        print("postgres: skipped (TETHER_TEST_POSTGRES_URL is not set)")
    writes = "one write: no restore save, no checkpoint" if agent == "echo" else "a checkpoint + the final save"
    print(f"{turns} turns of one conversation ({agent}); bytes = session JSON + records JSON per request "
          f"({writes}); disk = sqlite db+wal growth")
    head = (f"{'store':<9} {'median ms':>9} {'first50':>8} {'last50':>8} {'bytes t1':>9} {f'bytes t{turns}':>10} "
            f"{'doc bytes':>9} {'rev':>5} {'disk t1':>8} {f'disk t{turns}':>9} {'disk avg50':>10} {'db+wal':>9}")
    print(head)
    print("-" * len(head))
    for name, r in results.items():
        def num(value: Any, width: int) -> str:
            return f"{'-':>{width}}" if value is None else f"{value:>{width},.0f}"

        print(f"{name:<9} {r['median_ms']:>9.2f} {r['first50_ms']:>8.2f} {r['last50_ms']:>8.2f} "
              f"{r['bytes_first']:>9,} {r['bytes_last']:>10,} {r['doc_bytes']:>9,} {r['revision']:>5} "
              f"{num(r['disk_first'], 8)} {num(r['disk_last'], 9)} {num(r['disk_avg_last50'], 10)} "
              f"{num(r['disk_total'], 9)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--agent", choices=sorted(AGENTS), default="echo")
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.agent))
