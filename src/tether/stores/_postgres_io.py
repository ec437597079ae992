"""Row-level helpers of ``PostgresStore``: record inserts and wake rows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tether.stores._postgres_pipeline import create_in_one_round_trip, save_in_one_round_trip, stored_duplicate
from tether.stores.base import message_rows, utc
from tether.stores.record_forms import event_row, journal_body
from tether.stores.records import TurnRecords, Wake

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Conn = AsyncConnection[tuple[Any, ...]]

__all__ = ["create_in_one_round_trip", "one_statement_save", "save_in_one_round_trip", "save_in_one_statement",
           "wake_from_row"]


def wake_from_row(row: Any) -> Wake:
    """A ``Wake`` from ``(session_id, key, at, leased_until, worker)``."""
    return Wake(
        session_id=row[0],
        key=row[1],
        at=utc(row[2]),
        leased_until=None if row[3] is None else utc(row[3]),
        worker=row[4],
    )


def one_statement_save(records: TurnRecords | None) -> bool:
    """True when a save with ``records`` fits in one statement: the document, transcript messages,
    events and journal entries. Wakes (a delete and an upsert may touch one row), document
    parts and the run queue take the transaction."""
    return records is None or not (records.wakes or records.cancel_wakes or records.parts or records.queue)


async def save_in_one_statement(conn: Conn, s: str, session: tuple[Any, ...], expected: int,
                                records: TurnRecords | None, release: str | None = None, *,
                                flush: bool = True) -> bool:
    """The compare-and-swap and the records in one autocommit statement (one round trip instead of
    ``BEGIN``, one per table and ``COMMIT``); True when the swap matched. Journal entries of one
    key are folded into the last (a final entry written after its started one in the same write).

    ``session`` is ``(id, agent, status, revision, saved_at, doc json)``. The inserts only happen
    when the update matched (``WHERE EXISTS (SELECT 1 FROM swapped)``), and a transcript ``seq``
    already stored fails the whole statement (a unique violation: nothing is written), which is
    reported as the duplicate message it is.

    With ``release`` (the advisory lock key the connection holds) the same round trip commits the
    save and then unlocks, only when the swap matched: the statement notes its outcome in a
    session setting, an explicit ``COMMIT`` ends its implicit transaction (the save is durable
    before anyone can take the lock), and the unlock reads the setting. A failed statement skips
    the rest of the query: the lock stays held. The values are bound client-side (the simple
    protocol runs several statements; never prepared).

    Without ``flush`` (a checkpoint, see ``Store.save_checkpoint``) the statement sets
    ``synchronous_commit`` off for its own implicit transaction: it commits without waiting for
    the WAL flush.
    """
    session_id, agent, status, revision, saved_at, text = session
    messages = message_rows(session_id, records) if records is not None else []
    events = event_row(records) if records is not None else None
    sql = (f"WITH swapped AS (UPDATE {s}.tether_sessions SET status = %(status)s, revision = %(revision)s, "
           "saved_at = %(saved_at)s, doc = %(doc)s::json "
           "WHERE id = %(id)s AND revision = %(expected)s AND agent = %(agent)s RETURNING id)")
    params: dict[str, Any] = {"status": status, "revision": revision, "saved_at": saved_at, "doc": text,
                              "id": session_id, "expected": expected, "agent": agent}
    # the rows travel as one JSON array each (the bodies are JSON already): no array literal to escape
    if messages:
        sql += (f", said AS (INSERT INTO {s}.tether_messages (session_id, seq, body) "
                "SELECT %(id)s, m.seq, m.body FROM json_to_recordset(%(said)s::json) AS m(seq bigint, body json) "
                "WHERE EXISTS (SELECT 1 FROM swapped))")
        params["said"] = "[" + ",".join(f'{{"seq":{seq},"body":{body}}}' for seq, body in messages) + "]"
    if events is not None:
        sql += (f", told AS (INSERT INTO {s}.tether_events (session_id, seq, type, at, body) "
                f"SELECT %(id)s, (SELECT COALESCE(max(seq), 0) FROM {s}.tether_events WHERE session_id = %(id)s) "
                "+ %(told_count)s, %(told_type)s, %(told_at)s, %(told)s::json WHERE EXISTS (SELECT 1 FROM swapped))")
        params.update(told_count=events.size, told_type=events.type, told_at=events.at, told=events.body)
    if records is not None and records.journal:
        entries: dict[str, str] = {}
        for e in records.journal:  # the first write of a key fixes its place, the last its body
            entries[e.key] = f'{{"key":{json.dumps(e.key)},"run_id":{json.dumps(e.run_id)},' \
                             f'"body":{journal_body(session_id, e)}'
        sql += (f", jotted AS (INSERT INTO {s}.tether_journal AS j (session_id, key, run_id, body) "
                "SELECT %(id)s, r.key, r.run_id, r.body FROM json_to_recordset(%(jot)s::json) "
                "AS r(n int, key text, run_id text, body json) WHERE EXISTS (SELECT 1 FROM swapped) ORDER BY r.n "
                "ON CONFLICT (session_id, key) DO UPDATE SET run_id = EXCLUDED.run_id, body = EXCLUDED.body "
                "WHERE (j.body->>'status') = 'running')")  # a final entry never changes
        params["jot"] = "[" + ",".join(f'{entry},"n":{n}}}' for n, entry in enumerate(entries.values())) + "]"
    import psycopg

    try:
        if release is None:
            unflushed = "" if flush else ", set_config('synchronous_commit', 'off', true)"
            cur = await conn.execute(sql + f" SELECT count(*){unflushed} FROM swapped", params)
        else:
            params["lock"] = release
            cur = psycopg.AsyncClientCursor(conn)
            await cur.execute(
                sql + " SELECT n, set_config('tether.swapped', n::text, false) "
                "FROM (SELECT count(*) AS n FROM swapped) c; "
                "COMMIT; SELECT pg_advisory_unlock(hashtextextended(%(lock)s, 0)) "
                "WHERE current_setting('tether.swapped') = '1'", params, prepare=False)
    except psycopg.errors.UniqueViolation as exc:
        if not messages or exc.diag.table_name != "tether_messages":
            raise
        raise await stored_duplicate(conn, s, session_id, [seq for seq, _ in messages]) from None
    row = await cur.fetchone()
    return row is not None and row[0] == 1
