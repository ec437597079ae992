"""``Store.lease_and_load`` and ``Store.save_and_release``: the request's first and last store calls
folded into the lease's take and release, with the same guarantees as ``lease``, ``load`` and
``save`` made one after another."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack

import pytest
from store_backends import Backend

from tether.engine.core.session import Session, TranscriptMessage
from tether.errors import SessionConflict, SessionLeaseTimeout
from tether.stores import Store, TurnRecords
from tether.testing import FakeClock

NewSession = Callable[..., Session]


async def _is_free(store: Store, session_id: str) -> bool:
    """True when another holder can take the lease of ``session_id`` at once."""
    try:
        async with store.lease(session_id, timeout=0.2):
            return True
    except SessionLeaseTimeout:
        return False


async def test_the_first_load_is_the_document_read_with_the_take(backend: Backend, new_session: NewSession) -> None:
    store, other = await backend.make(), await backend.make()
    created = await store.create(new_session(data={"step": 1}))
    async with store.lease_and_load(created.id, timeout=5) as held:
        assert held.session_id == created.id and not held.released
        assert not await _is_free(other, created.id)  # the take happened
        first = await held.load()
        assert first == created
        saved = await store.save(first, first.revision)
        again = await held.load()  # every later load reads again
        assert again is not None and again.revision == saved.revision == 1
    assert await _is_free(other, created.id)


async def test_a_missing_session_loads_none_under_its_lease(backend: Backend) -> None:
    store = await backend.make()
    async with store.lease_and_load("nobody", timeout=5) as held:
        assert await held.load() is None
    assert await _is_free(await backend.make(), "nobody")


async def test_a_held_lease_times_out_lease_and_load(backend: Backend, new_session: NewSession) -> None:
    store, other = await backend.make(), await backend.make()
    created = await store.create(new_session())
    async with store.lease(created.id):
        with pytest.raises(SessionLeaseTimeout) as caught:
            async with other.lease_and_load(created.id, timeout=0.2):
                pytest.fail("entered a lease another holder has")
    assert caught.value.session_id == created.id


async def test_save_and_release_saves_with_its_records_and_frees_the_session(
        backend: Backend, new_session: NewSession, clock: FakeClock) -> None:
    store, other = await backend.make(), await backend.make()
    created = await store.create(new_session())
    message = TranscriptMessage(seq=1, role="user", text="hi", at=clock.now(), input_id="m1")
    async with store.lease_and_load(created.id, timeout=5) as held:
        doc = await held.load()
        assert doc is not None
        doc.data["step"] = 2
        saved = await store.save_and_release(doc, doc.revision, TurnRecords(messages=[message]), held)
        assert saved.revision == 1 and held.released
        assert await _is_free(other, created.id)  # released with the save, before the body ends
    loaded = await other.load(created.id)
    assert loaded is not None and loaded.revision == 1 and loaded.data == {"step": 2}
    assert [m.text for m in await other.transcript(created.id)] == ["hi"]
    assert await _is_free(other, created.id)


async def test_a_stale_save_and_release_writes_nothing_and_keeps_the_lease(
        backend: Backend, new_session: NewSession, clock: FakeClock) -> None:
    store, other = await backend.make(), await backend.make()
    created = await store.create(new_session())
    message = TranscriptMessage(seq=1, role="user", text="hi", at=clock.now(), input_id="m1")
    async with store.lease_and_load(created.id, timeout=5) as held:
        doc = await held.load()
        assert doc is not None
        await store.save(doc, doc.revision)  # another write moved the revision on
        with pytest.raises(SessionConflict):
            await store.save_and_release(doc, doc.revision, TurnRecords(messages=[message]), held)
        assert not held.released
        assert not await _is_free(other, created.id)  # still ours
    assert await other.transcript(created.id) == []
    loaded = await other.load(created.id)
    assert loaded is not None and loaded.revision == 1
    assert await _is_free(other, created.id)  # leaving released it


async def test_an_early_release_frees_the_session_once(backend: Backend, new_session: NewSession) -> None:
    store, other, third = await backend.make(), await backend.make(), await backend.make()
    created = await store.create(new_session())
    async with AsyncExitStack() as stack:
        async with store.lease_and_load(created.id, timeout=5) as held:
            await held.release()
            await held.release()
            assert held.released
            await stack.enter_async_context(other.lease(created.id, timeout=5))  # another holder now
        assert not await _is_free(third, created.id)  # leaving did not free the other holder's lease
    assert await _is_free(third, created.id)
