"""The runtime's window cache (issue 17): the next request of a session takes the context window
the runtime wrote last instead of reading it back, and only while nobody else wrote since."""

from __future__ import annotations

from collections.abc import Callable

from runtime_helpers import SpyStore, counter_agent, msg

from tether.runtime import Runtime
from tether.runtime.window import WindowCache, attach_window


def transcript_reads(spy: SpyStore) -> int:
    return sum(1 for call in spy.calls if call[0] == "transcript")


async def test_the_window_a_request_sees_is_the_stored_one_without_reading_it_back(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    session_id = None
    for turn in range(30):  # 60 messages: the 40-message window fills and slides
        response = await runtime.run("Counter", msg(f"message {turn}"), session_id=session_id)
        assert response.success and response.result is not None and response.result.session is not None
        session_id = response.session
        stored = await spy.inner.load(session_id)
        assert stored is not None and stored.window_from is not None
        read_back = await attach_window(spy.inner, stored)  # what a runtime without the cache would see
        assert response.result.session.messages == read_back.messages
        assert response.result.session.inputs == read_back.inputs and len(read_back.inputs) == turn + 1
    assert transcript_reads(spy) == 0
    assert stored.window_from > 1  # the window did slide


async def test_another_writer_makes_the_cached_window_miss(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    mine, theirs = make_runtime(counter_agent()), make_runtime(counter_agent())
    first = await mine.run("Counter", msg("one"))
    await theirs.run("Counter", msg("two"), session_id=first.session)  # saved behind mine's back
    spy.calls.clear()
    third = await mine.run("Counter", msg("three"), session_id=first.session)
    assert transcript_reads(spy) == 1  # mine's entry is for an older revision: read back
    assert third.success and third.message == "n=3"
    assert third.result is not None and third.result.session is not None
    assert [m.text for m in third.result.session.messages] == ["one", "n=1", "two", "n=2", "three", "n=3"]


async def test_a_deleted_session_is_forgotten_and_the_cache_is_bounded(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    runtime.windows = WindowCache(capacity=2)
    ids = [(await runtime.run("Counter", msg())).session for _ in range(3)]
    assert len(runtime.windows) == 2  # the least recently written session fell out
    spy.calls.clear()
    assert (await runtime.run("Counter", msg(), session_id=ids[0])).message == "n=2"
    assert transcript_reads(spy) == 1
    await runtime.delete(ids[0])
    assert len(runtime.windows) == 1
