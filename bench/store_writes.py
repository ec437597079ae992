"""What a booking turn writes: commits, bytes, document size, disk and memory per session.

Runs the four-message booking cycle of ``bench/booking.py`` through ``Runtime`` and wraps the
store's ``create``/``save`` to see every write. Reported, with the goal of each figure:

* commits per 4-turn booking (the final saves, the cross-node checkpoints of seed 004 and the
  journal's started/result writes of the one tool call; nothing else), and how many of them wait
  for the disk (all but the checkpoints at moves, ``Store.save_checkpoint``);
* bytes written per turn (the stored document + the stored records of every write) at turns
  1-4 and at the last four turns, and their ratio (goal: <= 1.2);
* the document each save writes at steady state (goal: <= 4 KB), beside the same document with
  its 40-message context window inline (the other design: the runtime reads the window back from
  the transcript records), and a turn's append-only records minus the message text (goal: <= 1 KB),
  beside the same records stored whole (a row per event, whole journal and message bodies);
* SQLite bytes on disk per paused session (sessions stopped mid-booking, after ``VACUUM``;
  goal: <= 4 KB) and ``MemoryStore`` memory per idle session (``tracemalloc``; goal: <= 6 KB).

    python bench/store_writes.py [--turns 200] [--sessions 300]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import statistics
import sys
import tempfile
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from booking import booking_agent, booking_message
from pydantic_core import to_json

from tether.engine.core.session import Session
from tether.runtime import Runtime
from tether.stores import MemoryStore, SQLiteStore, Store, TurnRecords
from tether.stores.base import flushes, message_rows
from tether.stores.record_forms import event_row, journal_body
from tether.testing import FakeClock


@dataclass
class Turn:
    writes: int = 0
    unflushed: int = 0  # of the writes, checkpoints committed without a flush of their own
    doc_bytes: list[int] = field(default_factory=list)
    record_bytes: int = 0
    text_bytes: int = 0
    whole_bytes: int = 0  # the same records in the earlier form: a row per event, whole bodies

    @property
    def total(self) -> int:
        return sum(self.doc_bytes) + self.record_bytes


@dataclass
class Meter:
    turns: list[Turn] = field(default_factory=list)

    inline_bytes: int = 0  # the last document written, had its context window been kept inline

    async def add(self, store: MemoryStore, session_id: str, records: TurnRecords | None) -> None:
        """Count what ``store`` wrote: its stored document and the records as the stores encode them."""
        turn = self.turns[-1]
        turn.writes += 1
        text = store._docs[session_id]
        turn.doc_bytes.append(len(text.encode()))
        doc = Session.model_validate_json(text)
        window_from = getattr(doc, "window_from", None)  # None: the window is inline (or a tether before it)
        if window_from is not None:  # the other design: the window inside the document
            window = await store.transcript(session_id, after_seq=window_from - 1)
            doc = doc.model_copy(update={"messages": window, "window_from": None})
        self.inline_bytes = len(doc.model_dump_json(exclude_none=True).encode())
        if records is not None:
            turn.record_bytes += sum(len(body.encode()) for _, body in message_rows(session_id, records))
            events = event_row(records)
            turn.record_bytes += len(events.body.encode()) if events is not None else 0
            turn.record_bytes += sum(len(journal_body(session_id, e).encode()) for e in records.journal)
            turn.text_bytes += sum(len(m.text.encode()) for m in records.messages)
            turn.whole_bytes += sum(len(m.model_dump_json(exclude_none=True).encode()) for m in records.messages)
            turn.whole_bytes += sum(len(to_json(e)) for e in records.events)
            turn.whole_bytes += sum(len(e.model_dump_json(exclude_none=True).encode()) for e in records.journal)


def metered(store: MemoryStore, meter: Meter) -> MemoryStore:
    create: Callable[..., Awaitable[Session]] = store.create
    save: Callable[..., Awaitable[Session]] = store.save

    async def counted_create(session: Session, records: TurnRecords | None = None) -> Session:
        stored = await create(session, records)
        await meter.add(store, stored.id, records)
        return stored

    async def counted_save(session: Session, expected: int, records: TurnRecords | None = None) -> Session:
        stored = await save(session, expected, records)
        await meter.add(store, stored.id, records)
        return stored

    async def counted_checkpoint(session: Session, expected: int, records: TurnRecords | None = None) -> Session:
        if not flushes(records):  # an effect's started and result records are flushed checkpoints
            meter.turns[-1].unflushed += 1
        return await counted_save(session, expected, records)  # MemoryStore's checkpoint is its save

    store.create = counted_create  # type: ignore[method-assign]
    store.save = counted_save  # type: ignore[method-assign,assignment]
    store.save_checkpoint = counted_checkpoint  # type: ignore[method-assign]
    return store


async def conversation(turns: int) -> Meter:
    meter = Meter()
    clock = FakeClock()
    runtime = Runtime(booking_agent(), store=metered(MemoryStore(), meter), clock=clock)
    session_id = None
    for turn in range(1, turns + 1):
        clock.advance("5s")
        meter.turns.append(Turn())
        response = await runtime.run("Booker", booking_message(turn), session_id=session_id)
        assert response.success, response.message
        session_id = response.session
    await runtime.close()
    return meter


async def paused_sessions(store: Store, sessions: int, turns: int = 2) -> None:
    """``sessions`` conversations stopped mid-booking (a run asking, after ``turns`` messages)."""
    clock = FakeClock()
    runtime = Runtime(booking_agent(), store=store, clock=clock)
    for c in range(sessions):
        session_id = None
        for turn in range(1, turns + 1):
            clock.advance("5s")
            response = await runtime.run("Booker", booking_message(turn, c), session_id=session_id)
            assert response.success, response.message
            session_id = response.session


def db_bytes(path: Path) -> int:
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    (pages,), (size,) = conn.execute("PRAGMA page_count").fetchone(), conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    return int(pages) * int(size)


async def disk_per_session(sessions: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        empty, full = Path(tmp) / "empty.db", Path(tmp) / "full.db"
        for path, count in ((empty, 0), (full, sessions)):
            store = SQLiteStore(path)
            await paused_sessions(store, count) if count else await store.list()
            await store.close()
        return (db_bytes(full) - db_bytes(empty)) / sessions


async def memory_per_session(sessions: int) -> float:
    store = MemoryStore()
    await paused_sessions(store, 1)  # imports and caches settle first
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    await paused_sessions(store, sessions)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return grown / sessions


async def main(turns: int, sessions: int) -> None:
    meter = await conversation(turns)
    t = meter.turns
    cycles = [t[i:i + 4] for i in range(0, len(t) - 3, 4)]
    commits = [sum(x.writes for x in cycle) for cycle in cycles]
    flushed = [sum(x.writes - x.unflushed for x in cycle) for cycle in cycles]
    first, last = sum(x.total for x in t[:4]) / 4, sum(x.total for x in t[-4:]) / 4
    steady_doc = max(size for x in t[-4:] for size in x.doc_bytes)
    busiest = max(t[-4:], key=lambda x: x.record_bytes - x.text_bytes)
    records_minus_text = busiest.record_bytes - busiest.text_bytes
    rows = [
        ("commits per 4-turn booking", f"{commits[0]} first, {commits[-1]} last",
         f"per turn: {[x.writes for x in t[-4:]]}; flushed: {flushed[-1]} (the checkpoints at moves "
         f"are not: see docs/durability.md)"),
        ("bytes written per turn, turns 1-4", f"{first:,.0f} B", ""),
        (f"bytes written per turn, turns {turns - 3}-{turns}", f"{last:,.0f} B", f"{last / first:.2f}x (goal <= 1.2)"),
        ("document per save at steady state", f"{steady_doc:,} B", "goal <= 4,096"),
        ("  the same, with the window inline", f"{meter.inline_bytes:,} B", "(the window read from records: above)"),
        ("a turn's records minus message text", f"{records_minus_text:,} B", "goal <= 1,024 (the busiest turn)"),
        ("  the same, stored whole", f"{busiest.whole_bytes - busiest.text_bytes:,} B",
         "(a row per event, whole journal and message bodies)"),
        ("writes per turn (median)", f"{statistics.median(x.writes for x in t)}", ""),
    ]
    rows.append(("SQLite disk per paused session", f"{await disk_per_session(sessions):,.0f} B", "goal <= 4,096"))
    rows.append(("MemoryStore memory per idle session", f"{await memory_per_session(sessions):,.0f} B",
                 "goal <= 6,144"))
    print(f"booking conversation, {turns} turns; paused sessions: {sessions} stopped after 2 messages")
    for name, value, note in rows:
        print(f"{name:<40} {value:>22}  {note}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.sessions))
