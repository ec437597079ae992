"""The restore hook and session schema migrations."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from runtime_helpers import SpyStore, counter_agent, msg
from store_backends import Backend

from tether.engine.core.session import SESSION_SCHEMA_VERSION, Session, TranscriptMessage
from tether.errors import SessionVersionUnsupported
from tether.runtime import MigrationRegistry, Runtime, default_restore, is_session_current, session_idle
from tether.testing import FakeClock


async def stored_session(spy: SpyStore, clock: FakeClock, **fields: Any) -> Session:
    """A running Counter session written straight to the store."""
    return await spy.inner.create(Session(id="old-1", agent="Counter", created_at=clock.now(), **fields))


async def test_a_document_of_a_version_nothing_upgrades_is_refused_never_replaced(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    old = await stored_session(spy, clock, schema_version=0, data={"n": 41})  # a version nothing upgrades
    runtime = make_runtime(counter_agent())
    for _ in range(2):
        response = await runtime.run("Counter", msg(), session_id=old.id)
        assert not response.success and response.code == "SESSION_VERSION_UNSUPPORTED" and response.session == old.id
        assert response.message == (
            "Session 'old-1' has schema version 0, older than this tether reads (5), and no migration upgrades it: "
            "register one (Runtime(migrations=...)) or an on_restore hook that decides; the document is kept as "
            "it is.")
    assert await spy.inner.load(old.id) == old  # kept, untouched
    assert [s.id for s in await spy.list()] == [old.id]  # and no new session took its place


async def test_a_hook_of_its_own_may_still_start_over(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    old = await stored_session(spy, clock, schema_version=0, data={"n": 41})
    runtime = make_runtime(counter_agent(), on_restore=lambda doc: doc if is_session_current(doc) else None)
    response = await runtime.run("Counter", msg(), session_id=old.id)
    assert response.success and response.session != old.id and response.message == "n=1"
    assert await spy.inner.load(old.id) == old


async def test_a_version_1_document_is_upgraded_and_continued_with_its_inline_window(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    said = TranscriptMessage(seq=1, role="user", text="an earlier question", at=clock.now())
    old = await stored_session(spy, clock, schema_version=1, data={"n": 41}, messages=[said], message_seq=1)
    response = await make_runtime(counter_agent()).run("Counter", msg(), session_id=old.id)
    assert response.success and response.session == old.id and response.message == "n=42"
    assert response.result is not None and response.result.session is not None
    assert response.result.session.messages[0] == said  # the inline window was read as it is
    stored = await spy.inner.load(old.id)
    assert stored is not None and stored.schema_version == SESSION_SCHEMA_VERSION == 5
    assert stored.messages == [] and stored.window_from == 1  # from now on the window is the records

async def test_a_version_2_document_without_clarifying_is_upgraded_and_continued(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock, backend: Backend
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    current = await spy.inner.load(first.session)
    assert current is not None
    written_by_v2 = json.loads(current.model_dump_json(exclude_none=True))
    written_by_v2["schema_version"] = 2
    del written_by_v2["clarifying"]  # what a version 2 tether wrote: no such field
    await backend.corrupt(first.session, json.dumps(written_by_v2))
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert response.success and response.session == first.session and response.message == "n=2"
    stored = await spy.inner.load(first.session)
    assert stored is not None and stored.schema_version == SESSION_SCHEMA_VERSION and stored.clarifying == []


async def test_idle_expiry_override_with_session_idle(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    def expire_after_30_minutes(doc: Session) -> Session | None:
        restored = default_restore(doc)
        if restored is not None and session_idle(restored, clock.now()) >= timedelta(minutes=30):
            return None
        return restored

    runtime = make_runtime(counter_agent(), on_restore=expire_after_30_minutes)
    first = await runtime.run("Counter", msg())
    clock.advance("29m")
    kept = await runtime.run("Counter", msg(), session_id=first.session)
    assert kept.session == first.session and kept.message == "n=2"
    clock.advance("30m")
    expired = await runtime.run("Counter", msg(), session_id=first.session)
    assert expired.session != first.session and expired.message == "n=1"
    old = await spy.load(first.session)
    assert old is not None and old.status == "running" and old.data == {"n": 2}  # kept


async def test_returned_document_is_saved_at_once_before_the_turn(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    seen: list[int] = []

    async def mark(doc: Session) -> Session:
        seen.append(doc.revision)
        doc.metadata["restored"] = doc.metadata.get("restored", 0) + 1
        return doc

    runtime = make_runtime(counter_agent(), on_restore=mark)
    first = await runtime.run("Counter", msg())
    assert seen == []  # never for a new session
    spy.saves.clear()
    await runtime.run("Counter", msg(), session_id=first.session)
    assert seen == [1]
    (hook_doc, hook_expected, hook_records), (checkpoint_doc, checkpoint_expected, _), (turn_doc, turn_expected, _) = \
        spy.saves
    assert (hook_expected, hook_records) == (1, None) and hook_doc.metadata["restored"] == 1
    assert hook_doc.data == {"n": 1}  # saved before the turn ran
    assert checkpoint_expected == 2 and checkpoint_doc.data == {"n": 2}
    assert turn_expected == 3 and turn_doc.data == {"n": 2}
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 4 and stored.metadata["restored"] == 1


async def test_unchanged_document_is_saved_too(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent(), on_restore=lambda doc: doc)
    first = await runtime.run("Counter", msg())
    spy.saves.clear()
    await runtime.run("Counter", msg(), session_id=first.session)
    assert [expected for _, expected, _ in spy.saves] == [1, 2, 3]  # the hook's save, the checkpoint, the final save


async def test_without_a_hook_nothing_is_saved_before_the_turn(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    first = await runtime.run("Counter", msg())
    spy.saves.clear()
    second = await runtime.run("Counter", msg(), session_id=first.session)
    assert second.message == "n=2"
    # only the turn's writes: the checkpoint at work -> say (with records) and the final save
    assert [(expected, records is not None and not records.is_empty()) for _, expected, records in spy.saves] == [
        (1, True), (2, True)]


async def test_none_starts_a_new_session_and_keeps_the_old_one(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent(), on_restore=lambda doc: None)
    first = await runtime.run("Counter", msg())
    before = await spy.load(first.session)
    second = await runtime.run("Counter", msg(), session_id=first.session)
    assert second.success and second.session != first.session and second.message == "n=1"
    assert await spy.load(first.session) == before


async def test_hook_that_changes_the_agent_is_an_invariant_failure(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent(), on_restore=lambda doc: doc.model_copy(update={"agent": "Other"}))
    first = await runtime.run("Counter", msg())
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert not response.success and response.code == "SESSION_FLOW_INVARIANT"
    stored = await spy.load(first.session)
    assert stored is not None and stored.revision == 1 and stored.status == "running"


async def test_hook_error_fails_the_request_and_keeps_the_session(make_runtime: Callable[..., Runtime],
                                                                 spy: SpyStore) -> None:
    broken = [True]

    def hook(doc: Session) -> Session:
        if broken[0]:
            raise RuntimeError("hook failed")
        return doc

    runtime = make_runtime(counter_agent(), on_restore=hook)
    first = await runtime.run("Counter", msg())
    before = await spy.load(first.session)
    response = await runtime.run("Counter", msg(), session_id=first.session)
    assert not response.success and response.message == "RuntimeError: hook failed"
    assert response.code == "turn-failed" and response.session == first.session
    assert await spy.load(first.session) == before  # not aborted: nothing written
    broken[0] = False
    fixed = await runtime.run("Counter", msg(), session_id=first.session)
    assert fixed.success and fixed.session == first.session and fixed.message == "n=2"


def test_session_idle_and_current() -> None:
    clock = FakeClock()
    doc = Session(id="s", agent="a", created_at=clock.now())
    assert session_idle(doc, clock.advance("5m")) == timedelta(minutes=5)  # no save yet: since creation
    saved = doc.model_copy(update={"saved_at": clock.now()})
    assert session_idle(saved, clock.advance("1h")) == timedelta(hours=1)
    assert session_idle(saved, saved.saved_at - timedelta(seconds=5)) == timedelta(0)  # type: ignore[operator]
    assert is_session_current(doc) and default_restore(doc) is doc
    with pytest.raises(SessionVersionUnsupported, match="older than this tether reads"):
        default_restore(doc.model_copy(update={"schema_version": 0}))


def v0_to_v1(doc: dict[str, Any]) -> dict[str, Any]:
    data = dict(doc.get("data", {}))
    if "count" in data:
        data["n"] = data.pop("count")
    return {**doc, "data": data}


def test_migrations_chain_stamp_and_are_idempotent() -> None:
    migrations = MigrationRegistry()
    migrations.register(-1, lambda doc: {**doc, "metadata": {"from": -1}})
    migrations.register(0)(v0_to_v1)
    raw = {"schema_version": -1, "data": {"count": 3}}
    once = migrations.apply(raw)
    assert once == {"schema_version": 1, "data": {"n": 3}, "metadata": {"from": -1}}
    assert migrations.apply(once) == once
    assert raw == {"schema_version": -1, "data": {"count": 3}}  # not mutated
    assert migrations.versions == [-1, 0] and len(migrations) == 2
    with pytest.raises(ValueError, match="already registered"):
        migrations.register(0, v0_to_v1)
    with pytest.raises(ValueError, match="move forward"):
        migrations.register(5, v0_to_v1, to_version=5)


async def test_migrations_run_on_load_before_the_hook(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    old = await stored_session(spy, clock, schema_version=0, data={"count": 41})
    migrations = MigrationRegistry()
    migrations.register(0, v0_to_v1)
    response = await make_runtime(counter_agent(), migrations=migrations).run("Counter", msg(), session_id=old.id)
    assert response.success and response.session == old.id and response.message == "n=42"
    stored = await spy.load(old.id)
    assert stored is not None and stored.schema_version == SESSION_SCHEMA_VERSION and stored.data == {"n": 42}
    assert stored.revision == 3  # the migrated document was saved at once, then the turn's checkpoint and save


async def test_migration_producing_an_invalid_document_is_an_invariant_failure(
    make_runtime: Callable[..., Runtime], spy: SpyStore, clock: FakeClock
) -> None:
    old = await stored_session(spy, clock, schema_version=0)
    migrations = MigrationRegistry()
    migrations.register(0, lambda doc: {**doc, "unknown_field": True})
    response = await make_runtime(counter_agent(), migrations=migrations).run("Counter", msg(), session_id=old.id)
    assert not response.success and response.code == "SESSION_FLOW_INVARIANT"
    assert await spy.inner.load(old.id) == old
