"""The effect journal through the runtime, on every store: a re-dispatch returns recorded results,
an effect in doubt follows its tool's policy, and the journal is written with the session."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from journal_agents import Crash, booking_agent, charging_agent
from runtime_helpers import SpyStore

from tether import Message
from tether.flow.tools import InDoubtPolicy
from tether.runtime import Runtime


async def test_a_redispatched_action_gets_its_recorded_results(make_runtime: Callable[..., Runtime],
                                                               spy: SpyStore) -> None:
    calls: list[str] = []
    runtime = make_runtime(booking_agent(calls))
    first = await runtime.run("Shippy", Message("book it", id="m1"))
    assert first.success and first.result is not None and "verify-blocked" in first.result.codes()
    second = await runtime.run("Shippy", Message("again", id="m2"), session_id=first.session)
    assert second.message == "booked trk_1"
    assert len(calls) == 1  # the re-dispatch (same visit of book) did not run the tool again
    stored = await spy.load(first.session)
    assert stored is not None
    one, two = stored.data["stamps"]
    assert one == two  # ctx.uuid() and ctx.now() returned their journaled values
    assert stored.data["dedupe"] and stored.data["key"] == calls[0]  # ctx.dedupe_key, ctx.idempotency_key
    entries = await spy.journal(first.session)
    assert [(e.kind, e.name, e.status) for e in entries] == [
        ("tool", "book_shipment", "finished"), ("uuid", "uuid", "finished"), ("now", "now", "finished")]
    assert entries[0].request == {"address": "1 Main St"} and entries[0].result["value"] == {"id": "trk_1"}
    assert entries[0].key.endswith(":book:1:0") and entries[0].idempotency_key == f"{first.session}:{entries[0].key}"


async def test_the_started_record_is_written_before_the_tool_runs(make_runtime: Callable[..., Runtime],
                                                                  spy: SpyStore) -> None:
    calls: list[str] = []
    crash = [True]
    runtime = make_runtime(charging_agent(calls, crash, "retry"))
    with pytest.raises(Crash):
        await runtime.run("Payer", Message("pay", id="m1"))
    (session_id,) = [s.id for s in await spy.list()]
    stored = await spy.load(session_id)
    assert stored is not None and stored.turn is not None and stored.turn.input["id"] == "m1"
    (entry,) = await spy.journal(session_id)
    assert (entry.name, entry.status, entry.idempotency_key) == ("charge", "running", calls[0])


@pytest.mark.parametrize("policy", ["retry", "fail", "ask"])
async def test_an_effect_in_doubt_follows_its_policy(make_runtime: Callable[..., Runtime], spy: SpyStore,
                                                     policy: InDoubtPolicy) -> None:
    calls: list[str] = []
    crash = [True]
    with pytest.raises(Crash):  # the worker "dies" inside the tool: started record written, no result
        await make_runtime(charging_agent(calls, crash, policy)).run("Payer", Message("pay", id="m1"))
    (session_id,) = [s.id for s in await spy.list()]
    crash[0] = False
    runtime = make_runtime(charging_agent(calls, crash, policy))  # a restarted worker
    retried = await runtime.run("Payer", Message("pay", id="m1"), session_id=session_id)
    assert retried.success
    if policy == "retry":  # run again with the same idempotency key
        assert retried.message == "charged ch_30" and len(calls) == 2 and calls[0] == calls[1]
    elif policy == "fail":  # not run again: the effect fails, the node's on_fail answers
        assert retried.message == "could not charge" and len(calls) == 1
        (entry,) = await spy.journal(session_id)
        assert entry.status == "error" and "in doubt" in (entry.error or "")
    else:  # a human is asked; approving retries with the same key
        assert retried.result is not None and "awaiting-approval" in retried.result.codes() and len(calls) == 1
        (pending,) = await runtime.pending_approvals(session_id)
        assert pending.key.endswith(":in-doubt") and pending.request["payload"]["idempotency_key"] == calls[0]
        decided = await runtime.approve(session_id, pending.key, "approved", decided_by="ops")
        assert decided.message == "charged ch_30" and calls == [calls[0], calls[0]]
    again = await runtime.run("Payer", Message("pay", id="m1"), session_id=session_id)
    assert again.result is not None and again.result.codes() == ["duplicate-input"]


async def test_rejecting_an_in_doubt_retry_fails_the_effect(make_runtime: Callable[..., Runtime],
                                                            spy: SpyStore) -> None:
    calls: list[str] = []
    crash = [True]
    with pytest.raises(Crash):
        await make_runtime(charging_agent(calls, crash, "ask")).run("Payer", Message("pay", id="m1"))
    (session_id,) = [s.id for s in await spy.list()]
    crash[0] = False
    runtime = make_runtime(charging_agent(calls, crash, "ask"))
    await runtime.run("Payer", Message("pay", id="m1"), session_id=session_id)
    (pending,) = await runtime.pending_approvals(session_id)
    rejected = await runtime.approve(session_id, pending.key, False, feedback="charged by hand")
    assert rejected.message == "could not charge" and len(calls) == 1


async def test_a_new_message_completes_the_unfinished_turn_first(make_runtime: Callable[..., Runtime],
                                                                 spy: SpyStore) -> None:
    calls: list[str] = []
    crash = [True]
    with pytest.raises(Crash):
        await make_runtime(charging_agent(calls, crash, "retry")).run("Payer", Message("pay", id="m1"))
    (session_id,) = [s.id for s in await spy.list()]
    crash[0] = False
    runtime = make_runtime(charging_agent(calls, crash, "retry"))
    following = await runtime.run("Payer", Message("pay again", id="m2"), session_id=session_id)
    assert following.message == "charged ch_30" and following.result is not None
    assert "turn-continued" not in following.result.codes()  # m1's reply went to m1's turn, not to m2
    texts = [m.text for m in await spy.transcript(session_id)]
    assert texts == ["pay", "charged ch_30", "pay again", "charged ch_30"]
    assert len(calls) == 3 and calls[0] == calls[1] != calls[2]  # m1 retried with its key, m2 with its own


async def test_effects_in_another_order_on_a_redispatch_are_refused(make_runtime: Callable[..., Runtime],
                                                                    spy: SpyStore) -> None:
    from tether import Agent, Flow, Verify, action, end, goto, on_message, reply, tool

    order = [["first", "second"]]

    @tool
    def first() -> str:
        """One."""
        return "1"

    @tool
    def second() -> str:
        """Two."""
        return "2"

    @action("work", on_fail="oops", verify=Verify(check=lambda state, data: state.get("tries", 0) >= 2))
    async def work(state: dict[str, object], ctx: object) -> object:
        for name in order[0]:
            await ctx.tool(name)  # type: ignore[attr-defined]
        ctx.set(tries=int(ctx.data.get("tries", 0)) + 1)  # type: ignore[attr-defined]
        return goto("done")

    done = reply("done", response="done", next=end("done"))
    oops = reply("oops", response="the journal did not match", next=end("failed"))
    agent = Agent("Worker", flows=[Flow("w", start=work, nodes=[work, done, oops], on=[on_message(repeat="always")])],
                  tools=[first, second])
    runtime = make_runtime(agent)
    blocked = await runtime.run("Worker", Message("go", id="m1"))
    order[0] = ["second", "first"]
    refused = await runtime.run("Worker", Message("again", id="m2"), session_id=blocked.session)
    assert refused.result is not None  # (its verify then holds the run: on_fail is a goto out of the node too)
    (failed,) = [o for o in refused.result.outcomes if o.code == "action-failed"]
    assert "recorded as tool 'first' but is now tool 'second'" in (failed.detail or "")


async def test_a_model_call_inside_an_action_is_journaled(make_runtime: Callable[..., Runtime],
                                                          spy: SpyStore) -> None:
    from pydantic import BaseModel

    from tether import Agent, Flow, Verify, action, end, goto, on_message, reply
    from tether.testing import ScriptedModel

    class Label(BaseModel):
        label: str

    @action("classify", verify=Verify(check=lambda state, data: state.get("tries", 0) >= 2))
    async def classify(state: dict[str, object], ctx: object) -> object:
        found = await ctx.model("Classify the message.", prompt=ctx.message, schema=Label)  # type: ignore[attr-defined]
        ctx.set(label=found.label, tries=int(ctx.data.get("tries", 0)) + 1)  # type: ignore[attr-defined]
        return goto("done")

    done = reply("done", response=lambda state: f"label {state['label']}", next=end("done"))
    model = ScriptedModel(subprompt=[{"label": "billing"}])  # one reply: a second call would fail the test
    agent = Agent("Sorter", flows=[Flow("s", start=classify, nodes=[classify, done], on=[on_message(repeat="always")])],
                  model=model)
    runtime = make_runtime(agent)
    first = await runtime.run("Sorter", Message("my invoice is wrong", id="m1"))
    assert first.result is not None and first.result.llm_calls == 1
    second = await runtime.run("Sorter", Message("hello?", id="m2"), session_id=first.session)
    assert second.message == "label billing" and second.result is not None and second.result.llm_calls == 0
    (entry,) = await spy.journal(first.session)
    assert (entry.kind, entry.status, entry.result) == ("model", "finished", {"value": {"label": "billing"}})
    assert entry.request["prompt"] == "my invoice is wrong"
    assert model.unused() == {}
