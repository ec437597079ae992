"""Conversation keys: a key names one session; a second session on the same key makes it
ambiguous for good; a session's keys go with it when it is deleted or pruned."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from tether.engine.core.session import Session
from tether.stores import Store
from tether.stores.conversation_keys import AMBIGUOUS
from tether.testing import FakeClock


async def test_a_key_names_its_session_until_another_session_writes_it(
        store: Store, new_session: Callable[..., Session]) -> None:
    first, second = await store.create(new_session()), await store.create(new_session())
    assert await store.find_conversation("k1") is None
    await store.put_conversation("k1", first.id)
    await store.put_conversation("k1", first.id)  # the same session again: still its key
    assert await store.find_conversation("k1") == first.id
    await store.put_conversation("k2", second.id)
    assert await store.find_conversation("k2") == second.id
    await store.put_conversation("k1", second.id)
    assert await store.find_conversation("k1") == AMBIGUOUS
    await store.put_conversation("k1", first.id)  # ambiguous stays ambiguous
    assert await store.find_conversation("k1") == AMBIGUOUS


async def test_concurrent_writers_of_one_key_leave_it_ambiguous(
        store: Store, new_session: Callable[..., Session]) -> None:
    sessions = [await store.create(new_session()) for _ in range(8)]
    await asyncio.gather(*(store.put_conversation("shared", s.id) for s in sessions))
    assert await store.find_conversation("shared") == AMBIGUOUS


async def test_a_sessions_keys_go_with_it(store: Store, new_session: Callable[..., Session],
                                          clock: FakeClock) -> None:
    kept, deleted = await store.create(new_session()), await store.create(new_session())
    ended = await store.create(new_session(status="completed"))
    await store.put_conversation("kept", kept.id)
    await store.put_conversation("deleted", deleted.id)
    await store.put_conversation("ended", ended.id)
    await store.delete(deleted.id)
    clock.advance(timedelta(days=2))
    assert await store.prune(older_than=clock.now() - timedelta(days=1)) == 1
    assert await store.find_conversation("deleted") is None
    assert await store.find_conversation("ended") is None
    assert await store.find_conversation("kept") == kept.id
