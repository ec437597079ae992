"""Append-only records: transcript messages, events and the effect journal, written with the document."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, StoreError
from tether.stores import JournalEntry, Store, TurnRecords, WakeRequest
from tether.testing import FakeClock

NewSession = Callable[..., Session]


def message(seq: int, clock: FakeClock, text: str | None = None) -> TranscriptMessage:
    role = "user" if seq % 2 else "assistant"
    return TranscriptMessage(
        seq=seq,
        role=role,
        text=text or f"message {seq}",
        at=clock.now(),
        kind="user" if role == "user" else "ai",
    )


async def test_records_written_with_create_and_save_are_readable_in_order(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(
        new_session(),
        TurnRecords(
            messages=[message(1, clock), message(2, clock)],
            events=[{"type": "session.started", "at": clock.now(), "by": "test"}],
        ),
    )
    clock.advance("1m")
    await store.save(
        doc,
        0,
        TurnRecords(
            messages=[message(4, clock), message(3, clock, "2026-01-05T09:00:00Z")],
            events=[
                {"type": "turn", "at": "2026-01-05T09:01:00Z", "n": 1},
                {"type": "turn", "at": clock.now(), "n": 2},
            ],
        ),
    )
    transcript = await store.transcript(doc.id)
    assert [m.seq for m in transcript] == [1, 2, 3, 4]
    assert transcript[2].text == "2026-01-05T09:00:00Z"
    assert transcript[0].text == "message 1" and transcript[0].role == "user"
    assert [m.seq for m in await store.transcript(doc.id, after_seq=1, limit=2)] == [2, 3]
    assert [m.seq for m in await store.transcript(doc.id, after_seq=3)] == [4]

    events = await store.events(doc.id)
    assert [(e.seq, e.type) for e in events] == [(1, "session.started"), (2, "turn"), (3, "turn")]
    assert events[0].data["by"] == "test"
    assert events[1].at == datetime(2026, 1, 5, 9, 1, tzinfo=UTC)
    assert events[1].data == {"type": "turn", "at": "2026-01-05T09:01:00Z", "n": 1}
    assert events[2].at == clock.now()
    assert [e.seq for e in await store.events(doc.id, after=2)] == [3]
    assert await store.transcript("unknown") == [] and await store.events("unknown") == []


async def test_a_failed_save_writes_no_records(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session())
    await store.save(doc, 0)
    doomed = TurnRecords(
        messages=[message(1, clock)],
        events=[{"type": "lost", "at": clock.now()}],
        journal=[JournalEntry(run_id="r1", key="k1", kind="tool", at=clock.now())],
        wakes=[WakeRequest(key="w", at=clock.now())],
    )
    with pytest.raises(SessionConflict):
        await store.save(doc, 0, doomed)
    assert await store.transcript(doc.id) == []
    assert await store.events(doc.id) == []
    assert await store.journal(doc.id) == []
    assert await store.pending_wakes(doc.id) == []
    with pytest.raises(SessionConflict):
        await store.create(doc, doomed)
    assert await store.transcript(doc.id) == []


async def test_a_duplicate_message_seq_fails_the_whole_write(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session(), TurnRecords(messages=[message(1, clock)]))
    with pytest.raises(StoreError) as caught:
        await store.save(
            doc.model_copy(update={"data": {"x": 1}}),
            0,
            TurnRecords(
                messages=[message(2, clock), message(1, clock, "again")],
                events=[{"type": "t", "at": clock.now()}],
            ),
        )
    assert "seq 1" in str(caught.value)
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 0 and loaded.data == {}
    assert [m.text for m in await store.transcript(doc.id)] == ["message 1"]
    assert await store.events(doc.id) == []
    with pytest.raises(StoreError):
        await store.save(doc, 0, TurnRecords(messages=[message(5, clock), message(5, clock)]))


async def test_journal_intent_then_finalize_updates_in_place(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session())
    doc = await store.save(
        doc,
        doc.revision,
        TurnRecords(
            journal=[
                JournalEntry(run_id="r1", key="r1:charge:1", kind="http", at=clock.now()),
                JournalEntry(run_id="r1", key="r1:email:1", kind="tool", at=clock.now()),
            ]
        ),
    )
    clock.advance("2s")
    doc = await store.save(
        doc,
        doc.revision,
        TurnRecords(
            journal=[
                JournalEntry(
                    run_id="r1",
                    key="r1:charge:1",
                    kind="http",
                    status="finished",
                    result={"id": "ch_1", "when": "2026-01-05T09:00:02Z", "amount": [12, 50]},
                    at=clock.now(),
                ),
                JournalEntry(
                    run_id="r2",
                    key="r2:lookup:1",
                    kind="tool",
                    status="error",
                    error="timeout",
                    at=clock.now(),
                ),
            ]
        ),
    )
    entries = await store.journal(doc.id)
    assert [(e.key, e.status) for e in entries] == [
        ("r1:charge:1", "finished"),
        ("r1:email:1", "running"),
        ("r2:lookup:1", "error"),
    ]
    assert entries[0].result == {"id": "ch_1", "when": "2026-01-05T09:00:02Z", "amount": [12, 50]}
    assert entries[0].at == clock.now()
    assert entries[2].error == "timeout"
    assert [e.key for e in await store.journal(doc.id, run_id="r2")] == ["r2:lookup:1"]
    assert await store.journal(doc.id, run_id="nope") == []


async def test_a_final_journal_entry_is_never_replaced(store: Store, new_session: NewSession, clock: FakeClock) -> None:
    doc = await store.create(new_session())
    started = JournalEntry(run_id="r1", key="r1:pay:1:0", kind="tool", name="charge", at=clock.now())
    finished = started.model_copy(update={"status": "finished", "result": {"value": "ch_1"}})
    doc = await store.save(doc, doc.revision, TurnRecords(journal=[started]))
    doc = await store.save(doc, doc.revision, TurnRecords(journal=[finished]))
    retried = started.model_copy(update={"attempt": 2})  # a started record written again after the result
    doc = await store.save(doc, doc.revision, TurnRecords(journal=[retried]))
    (entry,) = await store.journal(doc.id)
    assert (entry.status, entry.result, entry.attempt) == ("finished", {"value": "ch_1"}, 1)


async def test_records_are_per_session(store: Store, new_session: NewSession, clock: FakeClock) -> None:
    one = await store.create(
        new_session(), TurnRecords(messages=[message(1, clock)], events=[{"type": "a", "at": clock.now()}])
    )
    two = await store.create(
        new_session(),
        TurnRecords(messages=[message(1, clock, "other")], events=[{"type": "b", "at": clock.now()}]),
    )
    assert [m.text for m in await store.transcript(two.id)] == ["other"]
    assert [(e.seq, e.type) for e in await store.events(one.id)] == [(1, "a")]
    assert [(e.seq, e.type) for e in await store.events(two.id)] == [(1, "b")]


async def test_delete_removes_records_and_wakes(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(
        new_session(),
        TurnRecords(
            messages=[message(1, clock)],
            events=[{"type": "x", "at": clock.now()}],
            journal=[JournalEntry(run_id="r", key="k", kind="tool", at=clock.now())],
            wakes=[WakeRequest(key="w", at=clock.now())],
        ),
    )
    keep = await store.create(new_session(), TurnRecords(messages=[message(1, clock)]))
    await store.delete(doc.id, expected_revision=0)
    assert await store.transcript(doc.id) == []
    assert await store.events(doc.id) == []
    assert await store.journal(doc.id) == []
    assert await store.pending_wakes() == []
    assert len(await store.transcript(keep.id)) == 1
    # a re-created session with the same id starts with empty records
    await store.create(doc.model_copy(update={"revision": 0}), TurnRecords(messages=[message(1, clock)]))
    assert len(await store.transcript(doc.id)) == 1


def test_events_need_a_type_and_an_at() -> None:
    with pytest.raises(ValueError, match="type"):
        TurnRecords(events=[{"at": "2026-01-05T09:00:00Z"}])
    with pytest.raises(ValueError, match="at"):
        TurnRecords(events=[{"type": "x"}])
    with pytest.raises(ValueError, match="ISO"):
        TurnRecords(events=[{"type": "x", "at": "yesterday"}])


async def test_an_event_that_is_not_json_fails_the_write(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    doc = await store.create(new_session())
    with pytest.raises(StoreError, match="JSON"):
        await store.save(doc, 0, TurnRecords(events=[{"type": "x", "at": clock.now(), "bad": object()}]))
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 0
