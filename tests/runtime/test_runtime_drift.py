"""Flow drift: resuming a run whose flow changed under it is an error naming the flow and both
digests (nothing saved), unless the flow declares ``on_drift="restart"`` or a migration function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_helpers import SpyStore

from tether import Agent, Flow, FlowDefinitionError, Message, on_message, reply, stay
from tether.flow.flow import OnDrift
from tether.runtime import Runtime


def asker(version: str, on_drift: OnDrift = "error") -> Agent:
    """One flow: ``greet`` says hello and moves to ``ask``, which asks (and stays) with ``version``."""
    ask = reply("ask", response=f"{version}: what size?", next=lambda turn, state: stay)  # opaque: any node reachable
    greet = reply("greet", response="hello", next=ask)
    other = reply("other", response=f"{version}: migrated", next=stay)
    return Agent("Shop", flows=[Flow("order", start=greet, nodes=[greet, ask, other], on=[on_message()],
                                     on_drift=on_drift)])


async def _parked(make_runtime: Callable[..., Runtime]) -> str:
    first = await make_runtime(asker("v1")).run("Shop", Message("hi", id="m1"))
    assert first.message == "hello\n\nv1: what size?"
    return first.session


async def test_resuming_a_run_whose_flow_changed_is_an_error(make_runtime: Callable[..., Runtime],
                                                             spy: SpyStore) -> None:
    session_id = await _parked(make_runtime)
    before = await spy.load(session_id)
    assert before is not None
    pinned = before.runs[0].digest
    current = asker("v2").flows[0].digest
    response = await make_runtime(asker("v2")).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert not response.success and response.code == "flow-drift"
    assert "'order'" in response.message and pinned in response.message and current in response.message
    after = await spy.load(session_id)
    assert after is not None and after.revision == before.revision and after.status == "running"  # nothing saved


async def test_a_flow_that_restarts_on_drift_starts_the_run_over(make_runtime: Callable[..., Runtime]) -> None:
    session_id = await _parked(make_runtime)
    response = await make_runtime(asker("v2", "restart")).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert response.success and response.message == "hello\n\nv2: what size?"
    assert response.result is not None and "flow-drift-restarted" in response.result.codes()


async def test_a_migration_function_says_where_the_run_goes_on(make_runtime: Callable[..., Runtime],
                                                               spy: SpyStore) -> None:
    session_id = await _parked(make_runtime)
    seen: list[Any] = []

    def migrate(node: str | None, state: dict[str, Any]) -> str:
        seen.append(node)
        return "other"

    response = await make_runtime(asker("v2", migrate)).run("Shop", Message("large", id="m2"), session_id=session_id)
    assert response.success and response.message == "v2: migrated" and seen == ["ask"]
    stored = await spy.load(session_id)
    assert stored is not None and stored.runs[0].digest == asker("v2").flows[0].digest


def test_an_unknown_drift_policy_fails_when_the_flow_is_defined() -> None:
    with pytest.raises(FlowDefinitionError, match="invalid-on-drift"):
        Flow("f", nodes=[reply("r", response="x")], on_drift="ignore")  # type: ignore[arg-type]
