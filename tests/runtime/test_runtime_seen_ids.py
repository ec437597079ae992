"""Seen message ids live in the transcript records, not in the stored document (issue 17): the
document does not grow with them, and a retried message id still gets the first answer, whether
the runtime has the session cached or reads it back from the store."""

from __future__ import annotations

from collections.abc import Callable

from runtime_helpers import SpyStore, counter_agent

from tether import Message
from tether.runtime import Runtime
from tether.runtime.window import SEEN_HORIZON


async def converse(runtime: Runtime, messages: int) -> str:
    session_id = None
    for turn in range(1, messages + 1):
        response = await runtime.run("Counter", Message(f"message {turn}", id=f"m{turn}"), session_id=session_id)
        assert response.success and response.message == f"n={turn}"
        session_id = response.session
    assert session_id is not None
    return session_id


async def test_the_stored_document_keeps_no_message_ids_and_a_retry_gets_the_first_answer(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    session_id = await converse(runtime, 30)
    stored = await spy.inner.load(session_id)
    assert stored is not None and stored.inputs == []  # was the last 50 message ids, in every save
    fresh = make_runtime(counter_agent())  # nothing cached: the ids are read back from the records
    for host in (runtime, fresh):
        again = await host.run("Counter", Message("message 29", id="m29"), session_id=session_id)
        assert again.success and again.message == "n=29"  # the first answer, not a new turn
        assert again.result is not None and "duplicate-input" in again.result.codes()
    after = await spy.inner.load(session_id)
    assert after is not None and after.revision == stored.revision and after.data == {"n": 30}


async def test_a_retry_older_than_the_window_is_still_a_duplicate(
    make_runtime: Callable[..., Runtime], spy: SpyStore
) -> None:
    runtime = make_runtime(counter_agent())
    session_id = await converse(runtime, 45)  # 90 records: message 10 left the 40-record window
    assert SEEN_HORIZON > 2 * (45 - 10)
    for host in (runtime, make_runtime(counter_agent())):
        again = await host.run("Counter", Message("message 10", id="m10"), session_id=session_id)
        assert again.success and again.result is not None and "duplicate-input" in again.result.codes()
    stored = await spy.inner.load(session_id)
    assert stored is not None and stored.data == {"n": 45}  # not counted a second time
    new = await runtime.run("Counter", Message("message 46", id="m46"), session_id=session_id)
    assert new.message == "n=46"
