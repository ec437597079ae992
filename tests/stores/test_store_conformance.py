"""The 8-point store conformance suite, run against every backend."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from store_backends import Backend

from tether.engine.core.session import SESSION_SCHEMA_VERSION, Session
from tether.errors import SessionConflict, SessionFlowInvariant, SessionFlowMismatch, StoreError
from tether.stores import Store
from tether.testing import FakeClock

NewSession = Callable[..., Session]


# 1
async def test_create_stores_revision_zero_and_load_returns_it(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    draft = new_session(revision=7, data={"name": "Ada"})
    created = await store.create(draft)
    assert created.revision == 0
    assert created.saved_at == clock.now()
    loaded = await store.load(draft.id)
    assert loaded is not None
    assert loaded.revision == 0
    assert loaded == created
    assert await store.load("no-such-session") is None


async def test_create_with_an_existing_id_conflicts(store: Store, new_session: NewSession) -> None:
    draft = new_session()
    await store.create(draft)
    with pytest.raises(SessionConflict) as caught:
        await store.create(draft)
    assert caught.value.code == "SESSION_CONFLICT"


# 2
async def test_save_increments_the_revision(store: Store, new_session: NewSession, clock: FakeClock) -> None:
    doc = await store.create(new_session())
    clock.advance("5m")
    doc.data["step"] = 1
    saved = await store.save(doc, doc.revision)
    assert saved.revision == 1
    assert saved.saved_at == clock.now()
    saved.data["step"] = 2
    again = await store.save(saved, saved.revision)
    assert again.revision == 2
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 2 and loaded.data == {"step": 2}


# 3
async def test_iso_looking_strings_round_trip_as_strings(store: Store, new_session: NewSession) -> None:
    data = {
        "when": "2026-01-05T09:00:00Z",
        "date": "2026-01-05",
        "nested": {"list": ["2026-01-05T09:00:00+00:00", 1, None, True]},
        "time": "09:00:00",
    }
    doc = await store.create(new_session(data=data))
    saved = await store.save(doc, 0)
    loaded = await store.load(doc.id)
    assert loaded is not None
    assert loaded.data == data == saved.data
    assert isinstance(loaded.data["when"], str)
    assert isinstance(loaded.data["nested"]["list"][0], str)


# 4
async def test_stale_save_and_stale_delete_conflict(store: Store, new_session: NewSession) -> None:
    doc = await store.create(new_session())
    await store.save(doc, 0)
    with pytest.raises(SessionConflict) as caught:
        await store.save(doc, 0)
    assert caught.value.code == "SESSION_CONFLICT"
    assert caught.value.session_id == doc.id
    assert (caught.value.expected, caught.value.actual) == (0, 1)
    with pytest.raises(SessionConflict) as caught_delete:
        await store.delete(doc.id, expected_revision=0)
    assert caught_delete.value.code == "SESSION_CONFLICT"
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 1
    with pytest.raises(SessionConflict):
        await store.save(new_session(), 0)  # never created: a missing row is a conflict too


# 5
async def test_delete_then_load_returns_none(store: Store, new_session: NewSession) -> None:
    first = await store.create(new_session())
    second = await store.create(new_session())
    await store.delete(first.id, expected_revision=0)
    await store.delete(second.id)
    assert await store.load(first.id) is None
    assert await store.load(second.id) is None
    await store.delete(second.id)  # missing + unconditional: no-op
    with pytest.raises(SessionConflict):
        await store.delete(second.id, expected_revision=0)


# 6
async def test_concurrent_saves_from_one_revision_have_exactly_one_winner(
    store: Store, new_session: NewSession
) -> None:
    doc = await store.create(new_session())
    attempts = []
    for i in range(4):
        copy = doc.model_copy(deep=True)
        copy.data["writer"] = i
        attempts.append(store.save(copy, 0))
    results = await asyncio.gather(*attempts, return_exceptions=True)
    winners = [r for r in results if isinstance(r, Session)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1
    assert len(losers) == 3 and all(isinstance(e, SessionConflict) for e in losers)
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == winners[0].data


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
async def test_concurrent_saves_from_two_store_instances(backend: Backend, new_session: NewSession) -> None:
    one, two = await backend.make(), await backend.make()
    doc = await one.create(new_session())
    results = await asyncio.gather(
        one.save(doc.model_copy(update={"data": {"by": "one"}}), 0),
        two.save(doc.model_copy(update={"data": {"by": "two"}}), 0),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["Session", "SessionConflict"]
    winner = next(r for r in results if isinstance(r, Session))
    for reader in (one, two):
        loaded = await reader.load(doc.id)
        assert loaded is not None and loaded.revision == 1 and loaded.data == winner.data


# 7
async def test_load_applies_no_policy(store: Store, new_session: NewSession, clock: FakeClock) -> None:
    created_at = clock.now()
    completed = await store.create(new_session(status="completed"))
    aborted = await store.create(new_session(status="aborted"))
    old = await store.create(new_session(schema_version=SESSION_SCHEMA_VERSION - 1))
    clock.advance("400d")
    for doc, status in ((completed, "completed"), (aborted, "aborted"), (old, "running")):
        loaded = await store.load(doc.id)
        assert loaded is not None
        assert loaded.status == status
        assert loaded.saved_at == created_at
    loaded_old = await store.load(old.id)
    assert loaded_old is not None and loaded_old.schema_version == SESSION_SCHEMA_VERSION - 1


# 8
async def test_malformed_document_is_rejected_on_create_and_save(
    store: Store, new_session: NewSession
) -> None:
    bad = Session.model_construct(id="bad-1", agent="  ", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(SessionFlowInvariant) as caught:
        await store.create(bad)
    assert caught.value.code == "SESSION_FLOW_INVARIANT"
    assert "bad-1" in str(caught.value)
    assert await store.load("bad-1") is None

    doc = await store.create(new_session(data={"ok": True}))
    broken = doc.model_copy(update={"agent": ""})
    with pytest.raises(SessionFlowInvariant):
        await store.save(broken, 0)
    missing_field = Session.model_construct(id=doc.id, agent="support")  # no created_at
    with pytest.raises(SessionFlowInvariant):
        await store.save(missing_field, 0)
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 0 and loaded.data == {"ok": True}


async def test_malformed_stored_row_is_rejected_on_load(backend: Backend, new_session: NewSession) -> None:
    store = await backend.make()
    doc = await store.create(new_session())
    await backend.corrupt(doc.id, doc.model_dump_json().replace('"agent":"support"', '"agent":""'))
    with pytest.raises(SessionFlowInvariant) as caught:
        await store.load(doc.id)
    assert caught.value.code == "SESSION_FLOW_INVARIANT"
    assert caught.value.session_id == doc.id
    assert doc.id in str(caught.value) and "agent" in str(caught.value)
    await backend.corrupt(doc.id, '{"id": 42}')
    with pytest.raises(SessionFlowInvariant):
        await store.load(doc.id)


# beyond the eight points
async def test_saving_under_another_agent_is_a_mismatch(store: Store, new_session: NewSession) -> None:
    doc = await store.create(new_session(agent="support"))
    with pytest.raises(SessionFlowMismatch) as caught:
        await store.save(doc.model_copy(update={"agent": "sales"}), 0)
    assert caught.value.code == "SESSION_FLOW_MISMATCH"
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.agent == "support" and loaded.revision == 0


async def test_returned_and_passed_objects_never_alias_the_stored_document(
    store: Store, new_session: NewSession
) -> None:
    draft = new_session(data={"items": [1]})
    created = await store.create(draft)
    draft.data["items"].append("draft")
    created.data["items"].append("created")
    loaded = await store.load(draft.id)
    assert loaded is not None and loaded.data == {"items": [1]}
    loaded.data["items"].append("loaded")
    saved = await store.save(loaded, 0)
    saved.data["items"].append("saved")
    again = await store.load(draft.id)
    assert again is not None and again.data == {"items": [1, "loaded"]}


async def test_a_closed_store_refuses_work(backend: Backend, new_session: NewSession) -> None:
    store = await backend.make()
    await store.create(new_session())
    await store.close()
    with pytest.raises(StoreError) as caught:
        await store.load("anything")
    assert caught.value.code == "SESSION_STORE_ERROR"


async def test_every_load_and_save_returns_a_new_object_the_caller_owns(store: Store, new_session: NewSession) -> None:
    """The runtime attaches the window to what ``load`` and ``save`` return, in place: a store must
    never hand out an object it keeps, or the one it was given."""
    draft = new_session(data={"name": "Ada"})
    created = await store.create(draft)
    assert created is not draft and created.data is not draft.data
    first, second = await store.load(draft.id), await store.load(draft.id)
    assert first is not None and second is not None and first is not second
    first.data["name"] = "changed"
    first.messages = []
    assert second.data == {"name": "Ada"}
    saved = await store.save(second, second.revision)
    assert saved is not second and saved.data is not second.data
    saved.data["name"] = "changed after the save"
    loaded = await store.load(draft.id)
    assert loaded is not None and loaded.data == {"name": "Ada"} and loaded.revision == 1
