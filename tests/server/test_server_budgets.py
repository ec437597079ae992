"""What sessions cost and the budgets checked before every model call, against a fake
OpenAI-compatible server that counts what it received: a call past a budget is not made, the turn
degrades to the agent's fixed line and says why in a ``budget-exceeded`` event."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from model_server import FakeProvider, Reply, chat_completion
from server_agents import helper_agent
from server_client import ACME, GLOBEX, KEYS, app_client

from tether.flow.agent_def import DEFAULT_FAILURE_REPLY
from tether.models import resolve_model
from tether.runtime import Runtime
from tether.runtime.costs import Budgets, PriceTable
from tether.server import create_app
from tether.stores import SQLiteStore

MODEL = "openai-compatible:fake"
PRICES = PriceTable({MODEL: (1.0, 2.0)})  # $1 per million tokens in, $2 out
USAGE = {"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000}
CALL_COST = (900 * 1.0 + 100 * 2.0) / 1e6
HELPER = "/v1/agents/Helper/sessions"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    said = json.dumps({"message": "Returns are free within 30 days."})
    provider = FakeProvider(lambda recorded: Reply(body=chat_completion(said, usage=USAGE)))
    try:
        yield provider
    finally:
        provider.close()


@pytest.fixture
async def model(fake: FakeProvider) -> AsyncIterator[Any]:
    """The model the agent is served by: an OpenAI-compatible client of the fake server."""
    resolved = resolve_model(MODEL, base_url=f"{fake.url}/v1")
    try:
        yield resolved
    finally:
        await resolved.aclose()  # type: ignore[attr-defined]


def _runtime(tmp_path: Path, model: Any, budgets: Budgets) -> Runtime:
    agent = helper_agent().with_model(model)
    return Runtime([agent], store=SQLiteStore(tmp_path / "b.db"), prices=PRICES, budgets=budgets)


@pytest.fixture
async def budgeted(tmp_path: Path, model: Any) -> AsyncIterator[httpx.AsyncClient]:
    runtime = _runtime(tmp_path, model, Budgets(max_tokens_per_session=1000, max_cost_per_tenant_per_day=CALL_COST * 2))
    try:
        async for client in app_client(create_app(runtime, api_keys=KEYS)):
            yield client
    finally:
        await runtime.close()


async def _say(client: httpx.AsyncClient, sid: str, text: str, headers: dict[str, str] = ACME) -> dict:
    answer = await client.post(f"{HELPER}/{sid}/messages", json={"text": text}, headers=headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_a_session_capped_at_n_tokens_makes_no_call_past_n(budgeted: httpx.AsyncClient,
                                                                  fake: FakeProvider) -> None:
    sid = (await budgeted.post(HELPER, headers=ACME)).json()["session"]
    assert (await _say(budgeted, sid, "what's your return policy?"))["message"] == "Returns are free within 30 days."
    assert len(fake.requests) == 1  # 1,000 tokens spent: the cap
    degraded = await _say(budgeted, sid, "and for shoes?")
    assert degraded["success"] and degraded["message"] == DEFAULT_FAILURE_REPLY
    assert len(fake.requests) == 1  # the call past the cap was not made
    events = (await budgeted.get(f"{HELPER}/{sid}/events", headers=ACME)).json()["events"]
    refused = [e["data"] for e in events if e["type"] == "budget-exceeded"]
    assert len(refused) == 1 and refused[0]["model"] == MODEL
    assert "max_tokens_per_session=1000" in refused[0]["reason"]
    state = (await budgeted.get(f"{HELPER}/{sid}", headers=ACME)).json()
    assert state["cost"]["tokens_in"] == 900 and state["cost"]["tokens_out"] == 100 and state["cost"]["calls"] == 1
    assert state["cost"]["estimated_cost"] == pytest.approx(CALL_COST) and state["cost"]["currency"] == "USD"
    assert state["usage"]["prompt_tokens"] == 900  # the engine's own count agrees


async def test_a_tenant_capped_per_day_makes_no_call_past_the_cap_in_any_session(
        budgeted: httpx.AsyncClient, fake: FakeProvider) -> None:
    for _ in range(2):  # each session spends one call: two calls are the tenant's day
        sid = (await budgeted.post(HELPER, headers=ACME)).json()["session"]
        await _say(budgeted, sid, "hello")
    assert len(fake.requests) == 2
    third = (await budgeted.post(HELPER, headers=ACME)).json()["session"]
    assert (await _say(budgeted, third, "hello"))["message"] == DEFAULT_FAILURE_REPLY
    assert len(fake.requests) == 2
    other = (await budgeted.post(HELPER, headers=GLOBEX)).json()["session"]  # another tenant's day is its own
    assert (await _say(budgeted, other, "hello", GLOBEX))["message"] == "Returns are free within 30 days."
    assert len(fake.requests) == 3
    costs = (await budgeted.get("/v1/costs", headers=ACME)).json()
    assert costs["tenant"] == "acme" and costs["sessions"] == 3 and costs["calls"] == 2
    assert costs["tokens_in"] == 1800 and costs["estimated_cost"] == pytest.approx(2 * CALL_COST)
    assert costs["today"] == pytest.approx(2 * CALL_COST)
    assert costs["budgets"]["max_tokens_per_session"] == 1000 and costs["prices"][MODEL] == {"input": 1.0,
                                                                                             "output": 2.0}


async def test_a_session_cost_cap_is_checked_before_the_call(tmp_path: Path, fake: FakeProvider, model: Any) -> None:
    runtime = _runtime(tmp_path, model, Budgets(max_cost_per_session=CALL_COST))
    try:
        first = await runtime.run("Helper", "hi")
        assert first.message == "Returns are free within 30 days."
        second = await runtime.run("Helper", "again", session_id=first.session)
        assert second.message == DEFAULT_FAILURE_REPLY and len(fake.requests) == 1
        assert second.result is not None
        assert [e.type for e in second.result.events].count("budget-exceeded") == 1
    finally:
        await runtime.close()


async def test_a_tenants_spend_of_the_day_survives_a_restart(tmp_path: Path, fake: FakeProvider, model: Any) -> None:
    budgets = Budgets(max_cost_per_tenant_per_day=CALL_COST)
    runtime = _runtime(tmp_path, model, budgets)
    try:
        await runtime.run("Helper", "hi", config={"tenant": "acme"})
    finally:
        await runtime.close()
    again = _runtime(tmp_path, model, budgets)  # a new process reads the day's spend from the store
    try:
        refused = await again.run("Helper", "hi", config={"tenant": "acme"})
        assert refused.message == DEFAULT_FAILURE_REPLY and len(fake.requests) == 1
    finally:
        await again.close()


def test_prices_and_budgets_from_the_environment() -> None:
    table = PriceTable.from_env({"TETHER_PRICES": "openai:gpt-4o-mini=0.15/0.6, openai-compatible:fake=1/2"})
    assert table.as_dict()["openai:gpt-4o-mini"] == {"input": 0.15, "output": 0.6}
    with pytest.raises(ValueError, match="TETHER_PRICES entry 1"):
        PriceTable.from_env({"TETHER_PRICES": "gpt=1"})
    budgets = Budgets.from_env({"TETHER_MAX_TOKENS_PER_SESSION": "5000", "TETHER_MAX_COST_PER_SESSION": "0.5"})
    assert budgets == Budgets(max_tokens_per_session=5000, max_cost_per_session=0.5)
    with pytest.raises(ValueError, match="TETHER_MAX_COST_PER_TENANT_PER_DAY"):
        Budgets.from_env({"TETHER_MAX_COST_PER_TENANT_PER_DAY": "lots"})
    with pytest.raises(ValueError, match="non-negative"):
        Budgets(max_tokens_per_session=-1)


async def test_model_calls_tokens_and_turn_durations_are_opentelemetry_metrics(
        tmp_path: Path, model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from tether import metrics

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(metrics, "_meter_provider", lambda: provider)  # this test's provider, not the global one
    runtime = _runtime(tmp_path, model, Budgets())
    try:
        first = await runtime.run("Helper", "hi")
        await runtime.run("Helper", "again", session_id=first.session)
    finally:
        await runtime.close()
    data = reader.get_metrics_data()
    assert data is not None
    points = {metric.name: list(metric.data.data_points) for resource in data.resource_metrics
              for scope in resource.scope_metrics for metric in scope.metrics}
    assert [(dict(p.attributes), p.value) for p in points["tether.model.calls"]] == [({"tether.model": MODEL}, 2)]
    tokens = {dict(p.attributes)["tether.token.type"]: p.value for p in points["tether.model.tokens"]}
    assert tokens == {"input": 1800, "output": 200}
    (turns,) = points["tether.turn.duration"]
    assert dict(turns.attributes) == {"tether.agent": "Helper", "tether.success": True} and turns.count == 2
    provider.shutdown()


async def test_a_new_day_starts_the_tenants_spend_again(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from tether.runtime.costs import CostLedger

    ledger = CostLedger(PRICES, Budgets(max_cost_per_tenant_per_day=1.0))
    today = datetime(2026, 1, 5, 23, 59, tzinfo=UTC)
    ledger.add("acme", today, 0.75)
    assert ledger.tenant_spent("acme", today) == 0.75
    tomorrow = today + timedelta(minutes=2)
    ledger.add("acme", tomorrow, 0.25)
    assert ledger.tenant_spent("acme", tomorrow) == 0.25
    assert ledger.tenant_spent("acme", today) == 0.0  # yesterday's tally is gone from memory
