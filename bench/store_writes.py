"""Turn write cost vs conversation length, per store backend.

Each simulated turn loads the session, appends a user and an assistant message (the document keeps
only a bounded window of 20, the store appends the full transcript as records), writes one event
and one journal entry, and saves with compare-and-swap. If the write cost does not grow with the
conversation, the first and last blocks of turns take about the same time.

    python bench/store_writes.py [--turns 1000] [--postgres postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from tether.engine.session import Session, TranscriptMessage
from tether.stores import JournalEntry, MemoryStore, PostgresStore, SQLiteStore, Store, TurnRecords

WINDOW = 20


async def run(store: Store, turns: int) -> list[float]:
    now = datetime.now(UTC)
    doc = await store.create(Session(id=str(uuid.uuid4()), agent="bench", created_at=now))
    timings = []
    for turn in range(turns):
        started = time.perf_counter()
        loaded = await store.load(doc.id)
        assert loaded is not None
        seq = loaded.message_seq
        new = [
            TranscriptMessage(seq=seq + 1, role="user", text=f"question {turn} " * 10, at=now),
            TranscriptMessage(seq=seq + 2, role="assistant", text=f"answer {turn} " * 30, at=now, kind="ai"),
        ]
        loaded.messages = (loaded.messages + new)[-WINDOW:]
        loaded.message_seq = seq + 2
        loaded.data["turns"] = turn + 1
        records = TurnRecords(
            messages=new,
            events=[{"type": "turn.finished", "at": now, "turn": turn}],
            journal=[JournalEntry(run_id="r", key=f"r:tool:{turn}", kind="tool", status="finished", at=now)],
        )
        doc = await store.save(loaded, loaded.revision, records)
        timings.append(time.perf_counter() - started)
    assert len(await store.transcript(doc.id)) == 2 * turns
    return timings


def report(name: str, timings: list[float]) -> None:
    block = max(1, len(timings) // 10)
    first = statistics.mean(timings[:block]) * 1000
    last = statistics.mean(timings[-block:]) * 1000
    print(f"{name:9} turns={len(timings):5}  first {block}: {first:6.2f} ms/turn", end="")
    print(f"  last {block}: {last:6.2f} ms/turn")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--postgres", default=None, help="PostgreSQL URL (a temporary schema is used)")
    args = parser.parse_args()

    memory = MemoryStore()
    report("memory", await run(memory, args.turns))
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "bench.db")
        try:
            report("sqlite", await run(sqlite, args.turns))
        finally:
            await sqlite.close()
    if args.postgres:
        schema = f"tether_bench_{uuid.uuid4().hex[:8]}"
        pg = await PostgresStore.open(args.postgres, schema=schema)
        try:
            report("postgres", await run(pg, args.turns))
        finally:
            await pg.close()
            import psycopg

            async with await psycopg.AsyncConnection.connect(args.postgres, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


if __name__ == "__main__":
    asyncio.run(main())
