"""Flow drift: a run parked on an older definition of its flow continues at its node on the new
one when the node still exists with the same kind (``flow-drift-continued``, naming both digests);
the flow's ``on_drift`` (error by default, ``restart``, a migration function) applies only when
it cannot: the node is gone or its kind changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_helpers import SpyStore

from tether import (
    Agent,
    Field,
    Flow,
    FlowDefinitionError,
    Message,
    Verify,
    action,
    collect,
    end,
    goto,
    on_message,
    reply,
    stay,
    tool,
)
from tether.flow.flow import OnDrift
from tether.runtime import Runtime


def asker(version: str, on_drift: OnDrift = "error", *, ask: str = "ask", kind: str = "reply") -> Agent:
    """One flow: ``greet`` says hello and moves to ``ask`` (named ``ask``), which asks (and stays)
    with ``version``; ``kind="collect"`` makes that node a collect."""
    if kind == "collect":
        asking: Any = collect(ask, fields=["size"], ask=f"{version}: what size?")
    else:
        asking = reply(ask, response=f"{version}: what size?", next=lambda turn, state: stay)  # opaque: any node
    greet = reply("greet", response="hello", next=asking)
    other = reply("other", response=f"{version}: migrated", next=stay)
    return Agent("Shop", fields={"size": Field("string")},
                 flows=[Flow("order", start=greet, nodes=[greet, asking, other], on=[on_message()], on_drift=on_drift)])


async def _parked(make_runtime: Callable[..., Runtime]) -> str:
    first = await make_runtime(asker("v1")).run("Shop", Message("hi", id="m1"))
    assert first.message == "hello\n\nv1: what size?"
    return first.session


async def test_a_reworded_question_continues_on_the_new_definition(make_runtime: Callable[..., Runtime],
                                                                   spy: SpyStore) -> None:
    session_id = await _parked(make_runtime)
    before = await spy.load(session_id)
    assert before is not None
    pinned, current = before.runs[0].digest, asker("v2").flows[0].digest
    assert pinned != current
    response = await make_runtime(asker("v2")).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert response.success and response.message == "v2: what size?", response  # the new wording; was flow-drift
    assert response.result is not None
    continued = [o for o in response.result.outcomes if o.code == "flow-drift-continued"]
    assert len(continued) == 1 and continued[0].node_id == "ask"
    assert continued[0].detail == f"{pinned} -> {current}"
    after = await spy.load(session_id)
    assert after is not None and after.runs[0].digest == current  # pinned to the new definition now
    logged = [e.data for e in await spy.events(session_id) if e.type == "flow-drift"]  # the session's event log
    assert [(e["code"], e["node"], e["pinned"], e["current"]) for e in logged] == [
        ("flow-drift-continued", "ask", pinned, current)]
    again = await make_runtime(asker("v2")).run("Shop", Message("small", id="m3"), session_id=session_id)
    assert again.result is not None and "flow-drift-continued" not in again.result.codes()


async def test_a_removed_node_is_an_error_naming_both_digests_and_why(make_runtime: Callable[..., Runtime],
                                                                      spy: SpyStore) -> None:
    session_id = await _parked(make_runtime)
    before = await spy.load(session_id)
    assert before is not None
    pinned = before.runs[0].digest
    current = asker("v2", ask="ask_size").flows[0].digest
    response = await make_runtime(asker("v2", ask="ask_size")).run("Shop", Message("large", id="m2"),
                                                                   session_id=session_id)
    assert not response.success and response.code == "flow-drift"
    assert "'order'" in response.message and pinned in response.message and current in response.message
    assert "node 'ask' is gone" in response.message
    after = await spy.load(session_id)
    assert after is not None and after.revision == before.revision and after.status == "running"  # nothing saved


async def test_a_node_whose_kind_changed_meets_the_policy(make_runtime: Callable[..., Runtime]) -> None:
    session_id = await _parked(make_runtime)
    response = await make_runtime(asker("v2", kind="collect")).run("Shop", Message("large", id="m2"),
                                                                   session_id=session_id)
    assert not response.success and response.code == "flow-drift"
    assert "node 'ask' was a reply node and is now a collect node" in response.message


async def test_a_flow_that_restarts_on_drift_starts_the_run_over(make_runtime: Callable[..., Runtime]) -> None:
    session_id = await _parked(make_runtime)
    response = await make_runtime(asker("v2", "restart", ask="ask_size")).run("Shop", Message("large", id="m2"),
                                                                              session_id=session_id)
    assert response.success and response.message == "hello\n\nv2: what size?"
    assert response.result is not None and "flow-drift-restarted" in response.result.codes()


async def test_a_restart_policy_does_not_restart_a_run_that_can_continue(make_runtime: Callable[..., Runtime]) -> None:
    session_id = await _parked(make_runtime)
    response = await make_runtime(asker("v2", "restart")).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert response.success and response.message == "v2: what size?"  # no "hello": it did not start over
    assert response.result is not None and response.result.codes().count("flow-drift-continued") == 1
    assert "flow-drift-restarted" not in response.result.codes()


async def test_a_migration_function_says_where_the_run_goes_on(make_runtime: Callable[..., Runtime],
                                                               spy: SpyStore) -> None:
    session_id = await _parked(make_runtime)
    seen: list[Any] = []

    def migrate(node: str | None, state: dict[str, Any]) -> str:
        seen.append(node)
        return "other"

    new = asker("v2", migrate, ask="ask_size")
    response = await make_runtime(new).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert response.success and response.message == "v2: migrated" and seen == ["ask"]
    assert response.result is not None and "flow-drift-migrated" in response.result.codes()
    stored = await spy.load(session_id)
    assert stored is not None and stored.runs[0].digest == new.flows[0].digest


def test_an_unknown_drift_policy_fails_when_the_flow_is_defined() -> None:
    with pytest.raises(FlowDefinitionError, match="invalid-on-drift"):
        Flow("f", nodes=[reply("r", response="x")], on_drift="ignore")  # type: ignore[arg-type]


def booker(calls: list[str], *, uses: str = "book_shipment", done: str = "booked",
           on_drift: OnDrift = "error") -> Agent:
    """``book`` calls the tool ``uses`` names and is held by its verify until its second dispatch,
    so a run stands at the unfinished action with the call recorded; ``done`` says ``done``."""

    @tool
    def book_shipment(address: str) -> str:
        """Book a shipment."""
        calls.append("book_shipment")
        return f"trk_{len(calls)}"

    @tool
    def book_parcel(address: str) -> str:
        """Book a parcel."""
        calls.append("book_parcel")
        return f"prc_{len(calls)}"

    @action("book", uses=[uses], verify=Verify(check=lambda state, data: state.get("tries", 0) >= 2))
    async def book(state: dict[str, Any], ctx: Any) -> Any:
        ctx.set(tracking=await ctx.tool(uses, address="1 Main St"), tries=int(ctx.data.get("tries", 0)) + 1)
        return goto("done")

    said = reply("done", response=done + " ${tracking}", next=end("booked"))
    return Agent("Shippy", tools=[book_shipment, book_parcel],
                 flows=[Flow("ship", nodes=[book, said], on=[on_message(repeat="always")], on_drift=on_drift)])


async def test_an_unfinished_action_continues_on_a_new_definition_with_its_journal(
        make_runtime: Callable[..., Runtime]) -> None:
    calls: list[str] = []
    held = await make_runtime(booker(calls)).run("Shippy", Message("book it", id="m1"))
    assert held.success and calls == ["book_shipment"]  # the verify holds the run at book, the call recorded
    done = await make_runtime(booker(calls, done="shipped")).run("Shippy", Message("again", id="m2"),
                                                                 session_id=held.session)
    assert done.success and done.message == "shipped trk_1", done  # the new wording, the recorded result
    assert calls == ["book_shipment"]  # replayed from the journal: the tool did not run again
    assert done.result is not None and "flow-drift-continued" in done.result.codes()


async def test_an_unfinished_action_whose_journal_no_longer_matches_meets_the_policy(
        make_runtime: Callable[..., Runtime]) -> None:
    calls: list[str] = []
    held = await make_runtime(booker(calls)).run("Shippy", Message("book it", id="m1"))
    refused = await make_runtime(booker(calls, uses="book_parcel")).run("Shippy", Message("again", id="m2"),
                                                                        session_id=held.session)
    assert not refused.success and refused.code == "flow-drift", refused
    assert "recorded a call of tool 'book_shipment'" in refused.message and calls == ["book_shipment"]
    restarted = await make_runtime(booker(calls, uses="book_parcel", on_drift="restart")).run(
        "Shippy", Message("again", id="m3"), session_id=held.session)
    assert restarted.result is not None and "flow-drift-restarted" in restarted.result.codes(), restarted
    assert calls == ["book_shipment", "book_parcel"]  # started over: the new action ran its own call
