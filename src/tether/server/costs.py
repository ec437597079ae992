"""``GET /v1/costs``: what the caller's tenant spent, with the prices and budgets in force."""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tether.runtime.costs import session_cost
from tether.runtime.runtime import Runtime

__all__ = ["TENANT_SCAN", "tenant_costs"]

TENANT_SCAN = 1000
"""How many of the tenant's latest sessions ``GET /v1/costs`` adds up."""


def tenant_costs(runtime: Runtime) -> Any:
    """The handler of ``GET /v1/costs``, bound to ``runtime``."""

    async def handler(request: Request) -> Response:
        tenant: str = request.state.tenant
        store = runtime.store
        totals = {"tokens_in": 0, "tokens_out": 0, "calls": 0}
        dollars = 0.0
        summaries = await store.list(tenant=tenant, limit=TENANT_SCAN)
        for summary in summaries:
            doc = await store.load(summary.id)
            if doc is None:
                continue
            cost = session_cost(doc)
            for name in totals:
                totals[name] += cost[name]
            dollars += cost["estimated_cost"]
        ledger = runtime.costs
        await ledger.seed(store, tenant, runtime.clock.now(), always=True)
        return JSONResponse({"tenant": tenant, "sessions": len(summaries), **totals, "estimated_cost": dollars,
                             "currency": "USD", "today": ledger.tenant_spent(tenant, runtime.clock.now()),
                             "prices": ledger.prices.as_dict(), "budgets": dataclasses.asdict(ledger.budgets)})

    return handler
