"""The lifecycle calls beside a request (``tether.runtime.lifecycle``): ``complete`` and ``release``
retry a save another writer beat, up to ``max_replays`` times, then raise ``SessionConflict``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from runtime_helpers import SpyStore, counter_agent, msg

from tether.engine.core.session import Session
from tether.errors import SessionConflict
from tether.runtime import Runtime


def other_writer(spy: SpyStore, times: int) -> Callable[[Session, int], Awaitable[None]]:
    """A ``before_save`` hook: the first ``times`` saves lose to another writer's save."""
    left = [times]

    async def interfere(session: Session, expected: int) -> None:
        if left[0] > 0:
            left[0] -= 1
            doc = await spy.inner.load(session.id)
            assert doc is not None
            await spy.inner.save(doc, doc.revision)

    return interfere


async def test_complete_retries_a_lost_save(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent(), max_replays=1)
    first = await runtime.run("Counter", msg())
    spy.before_save = other_writer(spy, times=1)
    completed = await runtime.complete(first.session)
    assert completed is not None and completed.status == "completed"
    assert completed.revision == 3  # the run 0-1, the other writer 2, the retried save 3


async def test_complete_gives_up_after_max_replays(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent(), max_replays=1)
    first = await runtime.run("Counter", msg())
    spy.before_save = other_writer(spy, times=2)
    with pytest.raises(SessionConflict) as raised:
        await runtime.end_session(first.session)
    assert (raised.value.session_id, raised.value.operation) == (first.session, "complete")
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "running" and stored.revision == 3


async def test_release_retries_then_gives_up(make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    runtime = make_runtime(counter_agent(), max_replays=1)
    first = await runtime.run("Counter", msg())
    assert await runtime.release(first.session) == await spy.load(first.session)  # running: nothing to release
    doc = await spy.inner.load(first.session)
    assert doc is not None
    await spy.inner.save(doc.model_copy(update={"status": "handed_off"}), doc.revision)

    spy.before_save = other_writer(spy, times=2)
    with pytest.raises(SessionConflict) as raised:
        await runtime.release(first.session)
    assert raised.value.operation == "release"
    spy.before_save = other_writer(spy, times=1)
    released = await runtime.release(first.session)
    assert released is not None and released.status == "running"
