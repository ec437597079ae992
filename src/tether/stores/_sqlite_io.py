"""Row-level helpers of ``SQLiteStore``: time encoding, record inserts, wake rows."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Any

from tether.stores.base import duplicate_message, message_rows, utc
from tether.stores.record_forms import event_row, journal_body
from tether.stores.records import TurnRecords, Wake
from tether.stores.run_queue import sqlite_queue

__all__ = ["from_us", "insert_records", "to_us", "wake_from_row"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def to_us(at: datetime) -> int:
    """Integer microseconds since the Unix epoch (exact, sortable)."""
    return (utc(at) - _EPOCH) // _US


def from_us(us: int) -> datetime:
    """The aware UTC datetime of ``to_us``."""
    return _EPOCH + timedelta(microseconds=us)


def wake_from_row(row: Any) -> Wake:
    """A ``Wake`` from ``(session_id, key, at, leased_until, worker)``."""
    return Wake(
        session_id=row[0],
        key=row[1],
        at=from_us(row[2]),
        leased_until=None if row[3] is None else from_us(row[3]),
        worker=row[4],
    )


def insert_records(conn: sqlite3.Connection, session_id: str, records: TurnRecords | None) -> None:
    """Append ``records`` inside the caller's write transaction."""
    if records is None or records.is_empty():
        return
    messages = message_rows(session_id, records)
    try:
        conn.executemany(
            "INSERT INTO tether_messages (session_id, seq, body) VALUES (?, ?, ?)",
            [(session_id, seq, body) for seq, body in messages],
        )
    except sqlite3.IntegrityError:
        seqs = [seq for seq, _ in messages]
        marks = ",".join("?" * len(seqs))
        row = conn.execute(
            f"SELECT MIN(seq) FROM tether_messages WHERE session_id = ? AND seq IN ({marks})",
            (session_id, *seqs),
        ).fetchone()
        raise duplicate_message(session_id, row[0]) from None
    events = event_row(records)
    if events is not None:  # one row for the write's events, numbered by its last event
        conn.execute(
            "INSERT INTO tether_events (session_id, seq, type, at, body) VALUES (?, "
            "(SELECT COALESCE(MAX(seq), 0) FROM tether_events WHERE session_id = ?) + ?, ?, ?, ?)",
            (session_id, session_id, events.size, events.type, to_us(events.at), events.body),
        )
    conn.executemany(
        "INSERT INTO tether_journal (session_id, key, run_id, body) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id, key) DO UPDATE SET run_id = excluded.run_id, body = excluded.body "
        "WHERE json_extract(tether_journal.body, '$.status') = 'running'",  # a final entry never changes
        [(session_id, e.key, e.run_id, journal_body(session_id, e)) for e in records.journal],
    )
    conn.executemany(
        "INSERT INTO tether_parts (session_id, path, name, body) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id, path, name) DO UPDATE SET body = excluded.body",
        [(session_id, path, name, body) for path, name, body in records.part_rows()],
    )
    conn.executemany(
        "DELETE FROM tether_wakes WHERE session_id = ? AND key = ?",
        [(session_id, key) for key in records.cancel_wakes],
    )
    for wake in records.wakes:
        if wake.replaces is not None and wake.replaces != wake.key:
            conn.execute(
                "DELETE FROM tether_wakes WHERE session_id = ? AND key = ?", (session_id, wake.replaces)
            )
        conn.execute(
            "INSERT INTO tether_wakes (session_id, key, at, leased_until, worker) "
            "VALUES (?, ?, ?, NULL, '') ON CONFLICT (session_id, key) "
            "DO UPDATE SET at = excluded.at, leased_until = NULL, worker = ''",
            (session_id, wake.key, to_us(wake.at)),
        )
    if records.queue is not None:
        sqlite_queue(conn, session_id, records.queue, to_us(records.queue.at))
