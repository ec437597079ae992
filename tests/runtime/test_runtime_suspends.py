"""Approvals, signals and hand-offs through the runtime, on every store: a parked run survives a
restart (a second runtime on the same store decides it), a rejection is a decision, a suspend cannot
be swallowed, signals are deduplicated by id and time out through a wake, and a handed-off session
stays quiet until it is released."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from journal_agents import desk_agent, payment_agent, refund_agent
from runtime_helpers import SpyStore

from tether import Message
from tether.runtime import Runtime
from tether.testing import FakeClock


async def test_an_approval_parks_the_run_and_another_worker_decides_it(
        make_runtime: Callable[..., Runtime], spy: SpyStore) -> None:
    refunds: list[int] = []
    first = await make_runtime(refund_agent(refunds)).run("Refunder", Message("refund please", id="m1"))
    assert first.success and first.result is not None and "awaiting-approval" in first.result.codes()
    assert first.result.status == "awaiting_approval" and not first.completed
    assert "swallowed" not in first.message  # the suspend went through the action's `except Exception`
    stored = await spy.load(first.session)
    assert stored is not None and stored.turn is None
    (run,) = stored.runs
    assert run.status == "waiting" and run.waiting is not None and run.waiting.kind == "approval"

    other = make_runtime(refund_agent(refunds))  # a second worker, with nothing in memory
    (pending,) = await other.pending_approvals(first.session)
    assert pending.key == run.waiting.key
    assert pending.request == {"summary": "Refund 30 to the customer?", "payload": {"amount": 30, "order": "A1"}}
    decided = await other.approve(first.session, pending.key, "approved", feedback="ok", decided_by="ann")
    assert decided.success and decided.message == "refund approved by ann: ok"
    assert refunds == [30]
    again = await other.approve(first.session, pending.key, "approved", decided_by="bob")
    assert again.result is not None and again.result.codes() == ["stale-approval"] and refunds == [30]
    entries = {e.kind: e for e in await spy.journal(first.session)}
    assert entries["approval"].status == "finished"
    assert entries["approval"].result == {"decision": "approved", "feedback": "ok", "decided_by": "ann"}


async def test_a_rejection_is_a_decision_the_action_handles(make_runtime: Callable[..., Runtime]) -> None:
    refunds: list[int] = []
    runtime = make_runtime(refund_agent(refunds))
    first = await runtime.run("Refunder", Message("refund please", id="m1"))
    (pending,) = await runtime.pending_approvals(first.session)
    rejected = await runtime.approve(first.session, pending.key, False, feedback="policy", decided_by="ann")
    assert rejected.success and rejected.message == "refund rejected by ann: policy" and refunds == []
    bad = await runtime.approve(first.session, pending.key, "maybe")
    assert not bad.success and bad.code == "invalid-request" and "'maybe'" in bad.message


async def test_a_signal_resumes_the_waiting_action_once_per_id(make_runtime: Callable[..., Runtime],
                                                               spy: SpyStore) -> None:
    runtime = make_runtime(payment_agent())
    first = await runtime.run("Cashier", Message("I will pay", id="m1"))
    assert first.result is not None and "awaiting-signal" in first.result.codes()
    assert [w.key for w in await spy.pending_wakes(first.session)] == [first.result.schedule[0].key]
    unclaimed = await runtime.signal(first.session, "refunded", {"amount": 1}, signal_id="x1")
    assert unclaimed.result is not None and unclaimed.result.codes() == ["signal-unclaimed"]
    paid = await make_runtime(payment_agent()).signal(first.session, "paid", {"amount": 5}, signal_id="s1")
    assert paid.success and paid.message == "payment of 5 received"
    repeated = await runtime.signal(first.session, "paid", {"amount": 5}, signal_id="s1")
    assert repeated.result is not None and repeated.result.codes() == ["duplicate-input"]
    texts = [m.text for m in await spy.transcript(first.session)]
    assert texts[0] == "I will pay" and texts[-1] == "payment of 5 received"
    assert texts.count("payment of 5 received") == 1


async def test_a_signal_timeout_is_a_wake(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                          clock: FakeClock) -> None:
    runtime = make_runtime(payment_agent())
    first = await runtime.run("Cashier", Message("I will pay", id="m1"))
    clock.advance(timedelta(hours=2))
    assert await runtime.fire_due_wakes() == 1
    texts = [m.text for m in await spy.transcript(first.session)]
    assert texts[0] == "I will pay" and texts[-1] == "no payment arrived"
    late = await runtime.signal(first.session, "paid", {"amount": 5}, signal_id="s1")
    assert late.result is not None and late.result.codes() == ["signal-unclaimed"]


async def test_a_handed_off_session_stays_quiet_until_released(make_runtime: Callable[..., Runtime],
                                                               spy: SpyStore) -> None:
    runtime = make_runtime(desk_agent())
    first = await runtime.run("Desk", Message("human", id="m1"))
    assert first.success and first.result is not None and first.result.status == "handoff"
    stored = await spy.load(first.session)
    assert stored is not None and stored.status == "handed_off"
    (escalation,) = [e for e in await spy.journal(first.session) if e.name == "__escalate"]
    assert escalation.status == "finished" and escalation.result["reason"] == "the customer asked for a person"

    quiet = await runtime.run("Desk", Message("hello?", id="m2"), session_id=first.session)
    assert quiet.success and quiet.session == first.session and quiet.message == ""
    assert quiet.result is not None and quiet.result.codes() == ["handed-off"]
    assert [m.text for m in await spy.transcript(first.session)][-1] == "hello?"  # recorded, not answered

    released = await runtime.release(first.session)
    assert released is not None and released.status == "running"
    answered = await runtime.run("Desk", Message("still there?", id="m3"), session_id=first.session)
    assert answered.message == "bot here"
