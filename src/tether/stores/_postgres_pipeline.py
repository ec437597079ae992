"""A ``PostgresStore`` save that needs a transaction, and a session's creation, each sent as one
pipeline: one round trip.

A save whose records hold wakes, document parts or a run queue change cannot be one statement (a wake's delete and
upsert may touch one row, which one statement's parts cannot see of each other), so it is a
transaction: ``BEGIN``, the compare-and-swap, one statement per kind of record, ``COMMIT``. Sent
one at a time that is a round trip per statement; here they go out together in psycopg's pipeline
mode, as one implicit transaction (every statement before the pipeline's one ``Sync``: PostgreSQL
commits them together, or rolls them all back when one fails), and the client waits once.

Nothing may be read back between the statements, so every check is made by the server and fails
the transaction, which rolls back everything the pipeline sent: the compare-and-swap divides by
the number of rows it updated (a stale revision, a missing row or another agent is a division by
zero: the caller asks the row why), and a transcript message whose ``seq`` is stored already is a
unique violation (reported as the duplicate it is), as in ``save_in_one_statement``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tether.stores.base import duplicate_message, message_rows, utc
from tether.stores.record_forms import event_row, journal_body
from tether.stores.records import TurnRecords
from tether.stores.run_queue import postgres_queue

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Conn = AsyncConnection[tuple[Any, ...]]

__all__ = ["create_in_one_round_trip", "save_in_one_round_trip", "stored_duplicate"]


async def save_in_one_round_trip(conn: Conn, s: str, session: tuple[Any, ...], expected: int,
                                 records: TurnRecords | None, *, flush: bool = True) -> bool:
    """The compare-and-swap and ``records`` in one transaction sent as one pipeline (``s``: the
    quoted schema name; ``session``: ``(id, agent, status, revision, saved_at, doc json)``). True
    when the swap matched and everything committed; False when the swap matched no row (nothing
    written). Without ``flush`` the transaction commits with ``synchronous_commit`` off."""
    session_id, agent, status, revision, saved_at, text = session
    return await _in_one_round_trip(
        conn, s, session_id,
        f"WITH swapped AS (UPDATE {s}.tether_sessions SET status = %s, revision = %s, saved_at = %s, "
        "doc = %s::json WHERE id = %s AND revision = %s AND agent = %s RETURNING 1) "
        "SELECT 1 / count(*) FROM swapped",  # no row swapped: division by zero, all rolled back
        (status, revision, saved_at, text, session_id, expected, agent), records, flush=flush)


async def create_in_one_round_trip(conn: Conn, s: str, session: tuple[Any, ...], records: TurnRecords | None) -> bool:
    """The new session's row and ``records`` in one transaction sent as one pipeline (``session``:
    ``(id, agent, status, created_at, saved_at, doc json)``). True when it was created; False when
    a session with its id exists (nothing written)."""
    session_id, agent, status, created_at, saved_at, text = session
    return await _in_one_round_trip(
        conn, s, session_id,
        f"WITH created AS (INSERT INTO {s}.tether_sessions (id, agent, status, revision, created_at, saved_at, doc) "
        "VALUES (%s, %s, %s, 0, %s, %s, %s::json) ON CONFLICT (id) DO NOTHING RETURNING 1) "
        "SELECT 1 / count(*) FROM created",  # the id exists: division by zero, all rolled back
        (session_id, agent, status, created_at, saved_at, text), records)


async def _in_one_round_trip(conn: Conn, s: str, session_id: str, head: str, params: tuple[Any, ...],
                             records: TurnRecords | None, *, flush: bool = True) -> bool:
    """``head`` (a statement that divides by zero when it wrote no session row) and the statements
    of ``records``, one pipeline; False when ``head`` wrote nothing (and nothing was written)."""
    import psycopg

    messages = message_rows(session_id, records) if records is not None else []
    try:
        # no BEGIN: the statements before the pipeline's one sync are one implicit transaction
        # (psycopg's transaction block would wait for its BEGIN and its COMMIT on their own)
        async with conn.pipeline():
            if not flush:
                await conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
            await conn.execute(head, params)
            if records is not None:
                await _queue_records(conn, s, session_id, records, messages)
    except psycopg.errors.DivisionByZero:
        return False
    except psycopg.errors.UniqueViolation as exc:
        if not messages or exc.diag.table_name != "tether_messages":
            raise
        raise await stored_duplicate(conn, s, session_id, [seq for seq, _ in messages]) from None
    return True


async def _queue_records(conn: Conn, s: str, session_id: str, records: TurnRecords,
                         messages: list[tuple[int, str]]) -> None:
    """Send the statements that append ``records``, reading nothing back."""
    if messages:
        await conn.execute(
            f"INSERT INTO {s}.tether_messages (session_id, seq, body) "
            "SELECT %s, m.seq, m.body::json FROM unnest(%s::bigint[], %s::text[]) AS m(seq, body)",
            (session_id, [seq for seq, _ in messages], [body for _, body in messages]))
    events = event_row(records)
    if events is not None:  # one row, numbered by the write's last event
        await conn.execute(
            f"INSERT INTO {s}.tether_events (session_id, seq, type, at, body) "
            f"SELECT %s, (SELECT COALESCE(max(seq), 0) FROM {s}.tether_events WHERE session_id = %s) + %s, "
            "%s, %s, %s::json",
            (session_id, session_id, events.size, events.type, events.at, events.body))
    for e in records.journal:
        await conn.execute(
            f"INSERT INTO {s}.tether_journal AS j (session_id, key, run_id, body) VALUES (%s, %s, %s, %s::json) "
            "ON CONFLICT (session_id, key) DO UPDATE SET run_id = EXCLUDED.run_id, body = EXCLUDED.body "
            "WHERE (j.body->>'status') = 'running'",  # a final entry never changes
            (session_id, e.key, e.run_id, journal_body(session_id, e)))
    for path, name, body in records.part_rows():
        await conn.execute(
            f"INSERT INTO {s}.tether_parts (session_id, path, name, body) VALUES (%s, %s, %s, %s::json) "
            "ON CONFLICT (session_id, path, name) DO UPDATE SET body = EXCLUDED.body",
            (session_id, path, name, body))
    if records.cancel_wakes:
        await conn.execute(f"DELETE FROM {s}.tether_wakes WHERE session_id = %s AND key = ANY(%s)",
                           (session_id, records.cancel_wakes))
    for wake in records.wakes:
        if wake.replaces is not None and wake.replaces != wake.key:
            await conn.execute(f"DELETE FROM {s}.tether_wakes WHERE session_id = %s AND key = %s",
                               (session_id, wake.replaces))
        await conn.execute(
            f"INSERT INTO {s}.tether_wakes (session_id, key, at, leased_until, worker) "
            "VALUES (%s, %s, %s, NULL, '') ON CONFLICT (session_id, key) "
            "DO UPDATE SET at = EXCLUDED.at, leased_until = NULL, worker = ''",
            (session_id, wake.key, utc(wake.at)))
    if records.queue is not None:
        await postgres_queue(conn, s, session_id, records.queue)


async def stored_duplicate(conn: Conn, s: str, session_id: str, seqs: list[int]) -> Exception:
    """The error of a save whose messages hit the ``(session_id, seq)`` key: ``duplicate_message``
    naming the first of ``seqs`` already stored."""
    cur = await conn.execute(f"SELECT min(seq) FROM {s}.tether_messages WHERE session_id = %s AND seq = ANY(%s)",
                             (session_id, seqs))
    row = await cur.fetchone()
    return duplicate_message(session_id, row[0] if row and row[0] is not None else min(seqs))
