"""Seed 004's cross-node checkpoints: a multi-node turn saves at every move to another node.

``relay_agent`` answers a message in three nodes (prep -> hold -> done): two moves, so two
checkpoint writes and the final save per turn. Every record is written exactly once (the stores
reject a duplicate message ``seq``), a conflict at a checkpoint goes through the conflict policy,
and a checkpoint already committed stays committed (at-least-once under replay).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from journal_agents import charging_agent
from runtime_helpers import SpyStore, msg, relay_agent, silence_agent, waiting_agent

from tether import Message
from tether.engine.core.session import Session
from tether.runtime import Runtime
from tether.runtime.window import attach_window
from tether.stores import SQLiteStore
from tether.testing import FakeClock


async def test_a_multi_node_turn_writes_at_every_move_and_every_record_once(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("a", id="a"))
    assert first.success and first.message == "prepped=1 held=1"
    # new session: the first checkpoint (prep -> hold) creates it, the second (hold -> done) saves it,
    # the final save writes the reply
    assert spy.writes() == [("create", first.session), ("save", first.session), ("save", first.session)]
    assert [expected for _, expected, _ in spy.saves] == [0, 1]
    assert first.result is not None and first.result.session is not None
    assert first.result.session.revision == 2  # create 0, then one revision per save

    spy.calls.clear()
    spy.saves.clear()
    second = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert second.success and second.message == "prepped=2 held=2"
    assert spy.writes() == [("save", first.session)] * 3  # no restore save: two checkpoints, the final save
    assert [expected for _, expected, _ in spy.saves] == [2, 3, 4]  # each save from the revision before it
    checkpoint_1, checkpoint_2, final = (records for _, _, records in spy.saves)
    assert checkpoint_1 is not None and checkpoint_2 is not None and final is not None
    assert [m.text for m in checkpoint_1.messages] == ["b"]  # the input, written by the first checkpoint
    assert checkpoint_2.messages == [] and [m.text for m in final.messages] == ["prepped=2 held=2"]
    assert not checkpoint_1.wakes and not checkpoint_2.wakes
    # the checkpoints hold the session as it was at each move
    (doc_1, _, _), (doc_2, _, _), (doc_3, _, _) = spy.saves
    assert [r.node for r in doc_1.runs] == ["hold"] and doc_1.data == {"prepped": 2, "held": 1}
    assert [r.node for r in doc_2.runs] == ["done"] and doc_2.data == {"prepped": 2, "held": 2}
    assert doc_3.runs == []

    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 5  # six writes in all: create at 0, five saves
    # the turn hands back the stored document with its window (the store keeps it as transcript records)
    assert second.result is not None and second.result.session == await attach_window(spy, stored)
    transcript = await spy.transcript(first.session)
    assert [(m.seq, m.text) for m in transcript] == [(1, "a"), (2, "prepped=1 held=1"), (3, "b"),
                                                     (4, "prepped=2 held=2")]
    events = await spy.events(first.session)
    expected = [e.as_dict() for e in first.result.events] + [e.as_dict() for e in second.result.events]
    assert [(e.type, e.data.get("node")) for e in events] == [(e["type"], e.get("node")) for e in expected]
    assert [e.seq for e in events] == list(range(1, len(expected) + 1))  # none lost, none twice


async def test_a_move_is_saved_as_a_checkpoint_and_the_turn_flushes_with_its_final_save(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("a", id="a"))
    spy.saves.clear()
    spy.unflushed.clear()
    second = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert second.success
    # the two moves are checkpoints (no flush of their own); the final save is flushed, and with it both
    assert [expected for _, expected, _ in spy.saves] == [2, 3, 4] and spy.unflushed == [2, 3]
    stored = await spy.inner.load(first.session)
    assert stored is not None and stored.revision == 5 and stored.turn is None


async def test_a_write_that_carries_an_effect_is_flushed(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    calls: list[str] = []
    runtime = make_runtime(charging_agent(calls, [False], "retry"))
    first = await runtime.run("Payer", Message("pay", id="m1"))
    assert first.success and len(calls) == 1
    # the started record creates the session (a create is always flushed), the result is a save
    assert spy.writes()[0] == ("create", first.session)
    journaled = [expected for _, expected, records in spy.saves if records is not None and records.journal]
    assert journaled == [0]  # the result: durable before the action goes on
    assert spy.unflushed == [1]  # only the move charge -> done, which carries no journal entry


async def test_a_turn_that_never_moves_writes_once(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(silence_agent())  # one reply node that stays: no move, no checkpoint
    first = await runtime.run("Nudger", msg())
    assert spy.writes() == [("create", first.session)]
    spy.calls.clear()
    second = await runtime.run("Nudger", msg(), session_id=first.session)
    assert second.message == "Got it." and spy.writes() == [("save", first.session)]
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 1


async def test_wakes_are_written_by_the_final_save(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(waiting_agent())
    response = await runtime.run("Waiter", "ping me later")  # first -> pause: a checkpoint, then the final save
    assert spy.writes() == [("create", response.session), ("save", response.session)]
    ((_, _, final),) = spy.saves
    assert final is not None and [w.key for w in final.wakes] == [w.key for w in await spy.pending_wakes()]


async def test_a_conflict_at_a_checkpoint_is_replayed(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("a", id="a"))
    interfered: list[int] = []

    async def other_writer(session: Session, expected: int) -> None:
        if not interfered and expected == 2:  # the second request's first checkpoint
            doc = await spy.inner.load(session.id)
            assert doc is not None
            doc.metadata["other"] = "writer"
            interfered.append((await spy.inner.save(doc, doc.revision)).revision)

    spy.before_save = other_writer
    second = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert interfered == [3]
    assert second.success and second.message == "prepped=2 held=2"  # the replay ran the input afresh
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 6  # other writer 3; replay: checkpoints 4, 5, final 6
    assert stored.metadata == {"other": "writer"} and stored.data == {"prepped": 2, "held": 2}
    assert [m.text for m in await spy.transcript(first.session)] == ["a", "prepped=1 held=1", "b", "prepped=2 held=2"]


async def test_a_conflict_at_a_checkpoint_is_rejected_under_reject(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(relay_agent(), conflict_policy="reject")
    first = await runtime.run("Relay", Message("a", id="a"))
    before = len(await spy.events(first.session))

    async def other_writer(session: Session, expected: int) -> None:
        if expected == 3:  # the second checkpoint: the first one is committed already
            doc = await spy.inner.load(session.id)
            assert doc is not None
            await spy.inner.save(doc, doc.revision)

    spy.before_save = other_writer
    response = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert not response.success and response.code == "SESSION_CONFLICT" and response.session == first.session
    stored = await spy.load(first.session)
    # the first checkpoint (3) stays committed, then the other writer (4); nothing of ours after it
    assert stored is not None and stored.revision == 4 and stored.data == {"prepped": 2, "held": 1}
    assert [r.node for r in stored.runs] == ["hold"]
    assert [m.text for m in await spy.transcript(first.session)] == ["a", "prepped=1 held=1", "b"]
    assert len(await spy.events(first.session)) > before


async def test_a_replay_after_a_committed_checkpoint_continues_its_own_turn(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    """The failed attempt's first checkpoint committed the input; the replay finds the turn unfinished
    with its own message id, continues it from the checkpoint (prep does not run again, the input is
    not ingested twice) and the caller gets that message's reply."""
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("a", id="a"))
    interfered: list[int] = []

    async def other_writer(session: Session, expected: int) -> None:
        if not interfered and expected == 3:
            doc = await spy.inner.load(session.id)
            assert doc is not None
            interfered.append((await spy.inner.save(doc, doc.revision)).revision)

    spy.before_save = other_writer
    second = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert interfered == [4]
    assert second.success and second.message == "prepped=2 held=2" and second.result is not None
    assert "duplicate-input" not in second.result.codes() and "turn-continued" in second.result.codes()
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 6 and stored.runs == [] and stored.turn is None
    third = await runtime.run("Relay", Message("c", id="c"), session_id=first.session)
    assert third.message == "prepped=3 held=3"
    assert [m.text for m in await spy.transcript(first.session)] == [
        "a", "prepped=1 held=1", "b", "prepped=2 held=2", "c", "prepped=3 held=3"]


async def test_a_replay_continues_the_session_its_checkpoint_created(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(relay_agent())
    created: list[str] = []

    async def other_writer(session: Session, expected: int) -> None:
        if not created and expected == 0:  # the save after the checkpoint that created the session
            doc = await spy.inner.load(session.id)
            assert doc is not None
            await spy.inner.save(doc, doc.revision)
            created.append(session.id)

    spy.before_save = other_writer
    response = await runtime.run("Relay", "hi")  # no message id: the replay knows the turn by its own mark
    assert response.success and [response.session] == created  # not a second new session
    assert [c for c in spy.calls if c[0] == "create"] == [("create", response.session)]
    assert response.message == "prepped=1 held=1"
    assert [m.text for m in await spy.transcript(response.session)] == ["hi", "prepped=1 held=1"]


async def test_a_turn_parses_its_document_once_on_load_and_once_on_its_final_save(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two checkpoints and a final save: the checkpoints are checked without a parse
    runtime = Runtime(relay_agent(), store=SQLiteStore(tmp_path / "t.db", clock=clock), clock=clock)
    first = await runtime.run("Relay", Message("a", id="a"))
    parses: list[str] = []
    validate = Session.model_validate_json

    def counted(text: str | bytes, **kwargs: Any) -> Session:
        parses.append("parse")
        return validate(text, **kwargs)

    monkeypatch.setattr(Session, "model_validate_json", counted)
    second = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert second.success and second.message == "prepped=2 held=2"
    assert len(parses) == 2  # the load, the final save
    stored = await runtime.store.load(first.session)
    assert stored is not None and stored.revision == 5  # create at 0, two checkpoints a turn, two final saves
    await runtime.close()


async def test_the_transactions_of_a_lone_turn_on_sqlite(tmp_path: Path, clock: FakeClock) -> None:
    # counted on the connection (every COMMIT, and whether it waited for the disk): the lease is an
    # OS lock and the load a read, so a turn that does not move commits its final save alone; a turn
    # that moves adds one checkpoint per move (seed 004: saved before the next node runs); only the
    # final save waits for the disk
    store = await SQLiteStore.open(tmp_path / "t.db", clock=clock)
    runtime = Runtime([relay_agent(), silence_agent()], store=store, clock=clock)
    first = await runtime.run("Relay", Message("a", id="a"))
    commits: list[bool] = []  # True: flushed
    flushed = [True]

    def trace(statement: str) -> None:
        text = statement.strip().upper()
        if text.startswith("PRAGMA SYNCHRONOUS"):
            flushed[0] = text.endswith("FULL")
        elif text.startswith("COMMIT"):
            commits.append(flushed[0])

    conn = store._connection("test")
    conn.set_trace_callback(trace)
    moving = await runtime.run("Relay", Message("b", id="b"), session_id=first.session)
    assert moving.success
    assert commits == [False, False, True]  # two checkpoints (two moves), the final save
    quiet = await runtime.run("Nudger", Message("hi", id="h1"))  # a new session: one write creates it
    commits.clear()
    still = await runtime.run("Nudger", Message("hi again", id="h2"), session_id=quiet.session)
    assert still.success and still.message == "Got it."
    assert commits == [True]  # no move: the final save
    await runtime.close()
