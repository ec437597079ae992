"""A store outage fails a turn, never a session: a failing save (the first checkpoint, or the
final save) answers ``SESSION_STORE_ERROR`` with nothing more of the turn saved, the session keeps
its status, and the retry of the same message id, once the store is back, continues the same
session (on every backend, through a store double that fails chosen writes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime_helpers import SpyStore, relay_agent

from tether import Agent, Flow, Message, action, end, on_message, reply, tool
from tether.runtime import Runtime
from tether.stores import SQLiteStore, _sqlite_lease


async def test_a_failing_first_checkpoint_saves_nothing_and_the_retry_continues(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("hi", id="m1"))
    assert first.success and first.message == "prepped=1 held=1"
    before = await spy.load(first.session)
    spy.fail_writes(1)  # the checkpoint of the move prep -> hold
    failed = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
    assert (failed.success, failed.code, failed.session) == (False, "SESSION_STORE_ERROR", first.session)
    assert failed.message == "store down (write 1)"
    assert await spy.load(first.session) == before  # nothing of the turn saved, still running
    retried = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
    assert retried.success and retried.session == first.session and retried.message == "prepped=2 held=2"
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "running" and stored.turn is None
    assert [m.text for m in await spy.transcript(first.session)] == ["hi", "prepped=1 held=1", "again",
                                                                     "prepped=2 held=2"]


async def test_a_failing_final_save_keeps_the_checkpoints_and_the_retry_finishes_the_turn(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(relay_agent())
    first = await runtime.run("Relay", Message("hi", id="m1"))
    spy.fail_writes(3)  # two checkpoints (prep -> hold -> done), then the final save
    failed = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
    assert (failed.success, failed.code, failed.session) == (False, "SESSION_STORE_ERROR", first.session)
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "running" and stored.error == []
    assert stored.turn is not None  # the checkpoints' open-turn mark: the turn is unfinished, not lost
    retried = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
    assert retried.success and retried.session == first.session
    assert retried.message == "prepped=2 held=2"  # continued from the checkpoint: nothing ran twice
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "running" and stored.turn is None
    assert [m.text for m in await spy.transcript(first.session)] == ["hi", "prepped=1 held=1", "again",
                                                                     "prepped=2 held=2"]
    after = await runtime.run("Relay", Message("more", id="m3"), session_id=first.session)
    assert after.success and after.message == "prepped=3 held=3"


async def test_a_new_session_whose_first_write_fails_is_not_created(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(relay_agent())
    spy.fail_writes(1)  # the create
    failed = await runtime.run("Relay", Message("hi", id="m1"))
    assert (failed.success, failed.code, failed.session) == (False, "SESSION_STORE_ERROR", "")
    assert await spy.list() == []
    retried = await runtime.run("Relay", Message("hi", id="m1"))
    assert retried.success and retried.message == "prepped=1 held=1"


async def test_a_new_session_whose_last_save_fails_is_continued_by_the_retry(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(relay_agent())
    spy.fail_writes(3)  # create (the first checkpoint), the second checkpoint, then the final save
    failed = await runtime.run("Relay", Message("hi", id="m1"))
    assert not failed.success and failed.code == "SESSION_STORE_ERROR" and failed.session
    stored = await spy.load(failed.session)
    assert stored is not None and stored.status == "running" and stored.turn is not None
    retried = await runtime.run("Relay", Message("hi", id="m1"), session_id=failed.session)
    assert retried.success and retried.session == failed.session and retried.message == "prepped=1 held=1"
    assert [m.text for m in await spy.transcript(failed.session)] == ["hi", "prepped=1 held=1"]


def _careless_agent(calls: list[str]) -> Agent:
    """An action that catches every exception around its tool call (as careless code does)."""

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        calls.append(f"charge {amount}")
        return "ok"

    @action("pay", uses=["charge"])
    async def pay(state: dict[str, Any], ctx: Any) -> None:
        try:
            await ctx.tool("charge", amount=5)
        except Exception:
            ctx.set(swallowed=True)

    flow = Flow("pay", nodes=[pay, reply("paid", response="Paid.", next=end("paid"))],
                on=[on_message(repeat="always")])
    return Agent("Payer", flows=[flow], tools=[charge], idle="silent")


async def test_author_code_cannot_swallow_a_failed_save(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    calls: list[str] = []
    runtime = make_runtime(_careless_agent(calls))
    first = await runtime.run("Payer", Message("hi", id="m1"))
    assert first.success and first.message == "Paid." and calls == ["charge 5"]
    spy.fail_writes(1)  # the journal's started record of the charge, written before the tool runs
    failed = await runtime.run("Payer", Message("pay", id="m2"), session_id=first.session)
    assert (failed.success, failed.code) == (False, "SESSION_STORE_ERROR")
    assert calls == ["charge 5"]  # the effect did not run with its started record unsaved
    stored = await spy.load(first.session)
    assert stored is not None and "swallowed" not in stored.data and stored.status == "running"
    retried = await runtime.run("Payer", Message("pay", id="m2"), session_id=first.session)
    assert retried.success and retried.message == "Paid." and calls == ["charge 5", "charge 5"]


async def test_a_sqlite_lease_file_that_cannot_be_opened_fails_the_turn_and_the_retry_continues(
        tmp_path: Path) -> None:
    """The session lease's file (``<database>-lease``) unusable: the turn answers
    ``SESSION_STORE_ERROR`` (the runtime never raises), nothing of it is saved, and the same message
    again, once the file can be opened, continues the same session."""
    store = SQLiteStore(tmp_path / "t.db")
    runtime = Runtime(relay_agent(), store=store)
    first = await runtime.run("Relay", Message("hi", id="m1"))
    assert first.success
    blocker = tmp_path / "t.db-lease"
    blocker.unlink(missing_ok=True)  # (a first message creates its session without a lease)
    blocker.mkdir()  # a directory where the lease file should be: opening it fails
    store._lease_file = None  # the next lease opens the file again
    lease_files = dict(_sqlite_lease._files)
    _sqlite_lease._files.clear()
    try:
        failed = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
        assert (failed.success, failed.code, failed.session) == (False, "SESSION_STORE_ERROR", first.session)
        assert "lease file" in failed.message and "t.db-lease" in failed.message
        assert [m.text for m in await store.transcript(first.session)] == ["hi", "prepped=1 held=1"]
        blocker.rmdir()
        retried = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
        assert retried.success and retried.session == first.session and retried.message == "prepped=2 held=2"
    finally:
        _sqlite_lease._files.update(lease_files)
        await runtime.close()


async def test_a_closed_sqlite_store_fails_the_turn_instead_of_raising(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    runtime = Runtime(relay_agent(), store=store)
    first = await runtime.run("Relay", Message("hi", id="m1"))
    await store.close()
    failed = await runtime.run("Relay", Message("again", id="m2"), session_id=first.session)
    assert (failed.success, failed.code) == (False, "SESSION_STORE_ERROR")
    assert failed.message == "store is closed"
