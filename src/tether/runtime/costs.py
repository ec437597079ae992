"""What sessions cost, and the spending limits checked before every model call.

Every model call of a turn is tallied on its session, in ``metadata["cost"]`` (saved with the
turn): tokens in and out, calls, and an estimated cost in US dollars from the operator's
:class:`PriceTable` (per model; a model with no price adds tokens and calls, and no cost), with
the cost spent per UTC day. :class:`Budgets` are checked before each call: a call is not made
when the session's tokens so far plus the call's estimated input (about four characters a token)
would pass ``max_tokens_per_session``, or the cost so far plus the call's estimated input cost
would pass ``max_cost_per_session`` or the tenant's ``max_cost_per_tenant_per_day``. The engine
then records a ``budget-exceeded`` event and the step degrades (the customer hears the agent's
fixed line); see :class:`tether.engine.core.ports.CallBudget`.

A tenant's spend of the day is read from the store the first time a process needs it that day
(the day's cost of the tenant's sessions saved that day), then counted in the process: several
workers on one store each add their own calls to what they read, so the tenant cap holds within
what the other workers spent since.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tether.engine.core.session import Session
from tether.metrics import count_model_call
from tether.models.types import ModelRequest, Usage
from tether.stores import Store
from tether.stores.records import session_tenant

__all__ = ["COST_KEY", "Budgets", "CostLedger", "PriceTable", "SessionBudget", "session_cost"]

COST_KEY = "cost"
"""The key of ``Session.metadata`` that holds what the session spent."""

PRICES_ENV = "TETHER_PRICES"
_CHARS_PER_TOKEN = 4
_TENANT_SCAN = 1000
"""How many of a tenant's latest sessions are read for its spend of the day."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens in (prompt) and out (completion)."""

    input: float
    output: float


class PriceTable:
    """Prices per model selection (``openai:gpt-4o-mini``), in US dollars per million tokens.

    Built from ``{model: (input, output)}`` (or ``{model: {"input": .., "output": ..}}``), or from
    ``TETHER_PRICES`` (``model=input/output,model=input/output``)."""

    def __init__(self, prices: Mapping[str, Any] | None = None) -> None:
        self._prices: dict[str, Price] = {}
        for model, price in (prices or {}).items():
            if isinstance(price, Mapping):
                value = Price(float(price["input"]), float(price["output"]))
            else:
                given, taken = price
                value = Price(float(given), float(taken))
            if value.input < 0 or value.output < 0 or not math.isfinite(value.input + value.output):
                raise ValueError(f"the price of {model!r} must be two non-negative numbers")
            self._prices[model] = value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PriceTable:
        """The table in ``TETHER_PRICES``; ``ValueError`` names a malformed entry."""
        text = (environ if environ is not None else os.environ).get(PRICES_ENV, "").strip()
        prices: dict[str, tuple[str, str]] = {}
        for index, entry in enumerate(filter(None, (part.strip() for part in text.split(","))), start=1):
            model, sep, pair = entry.rpartition("=")
            given, slash, taken = pair.partition("/")
            if not sep or not slash or not model.strip():
                raise ValueError(f"{PRICES_ENV} entry {index} is not 'model=input/output'")
            prices[model.strip()] = (given, taken)
        try:
            return cls(prices)
        except ValueError as exc:
            raise ValueError(f"{PRICES_ENV}: {exc}") from None

    def price(self, model: str) -> Price | None:
        """The price of ``model``; None when the table has none."""
        return self._prices.get(model)

    def as_dict(self) -> dict[str, dict[str, float]]:
        """The table as JSON: ``{model: {"input": .., "output": ..}}``."""
        return {model: {"input": p.input, "output": p.output} for model, p in self._prices.items()}


@dataclass(frozen=True)
class Budgets:
    """Spending limits; None: no limit. Costs are in US dollars (see :class:`PriceTable`)."""

    max_tokens_per_session: int | None = None
    max_cost_per_session: float | None = None
    max_cost_per_tenant_per_day: float | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Budgets:
        """The budgets in ``TETHER_MAX_TOKENS_PER_SESSION``, ``TETHER_MAX_COST_PER_SESSION`` and
        ``TETHER_MAX_COST_PER_TENANT_PER_DAY`` (unset: no limit); ``ValueError`` names a bad one."""
        env = environ if environ is not None else os.environ
        values: dict[str, Any] = {}
        for field_ in dataclasses.fields(cls):
            name = f"TETHER_{field_.name.upper()}"
            text = env.get(name, "").strip()
            if not text:
                continue
            try:
                values[field_.name] = int(text) if field_.name == "max_tokens_per_session" else float(text)
            except ValueError:
                raise ValueError(f"{name} must be a number, not {text!r}") from None
        return cls(**values)

    def __post_init__(self) -> None:
        for name in ("max_tokens_per_session", "max_cost_per_session", "max_cost_per_tenant_per_day"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int | float) or value < 0 or not math.isfinite(value)):
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")


def session_cost(session: Session) -> dict[str, Any]:
    """What ``session`` spent: ``tokens_in``, ``tokens_out``, ``calls``, ``estimated_cost`` (US
    dollars; 0 when no call had a price), ``unpriced_calls`` and ``by_model``."""
    stored = session.metadata.get(COST_KEY)
    cost = dict(stored) if isinstance(stored, Mapping) else {}
    return {"tokens_in": int(cost.get("tokens_in", 0)), "tokens_out": int(cost.get("tokens_out", 0)),
            "calls": int(cost.get("calls", 0)), "estimated_cost": float(cost.get("estimated_cost", 0.0)),
            "currency": "USD", "unpriced_calls": int(cost.get("unpriced_calls", 0)),
            "by_model": dict(cost.get("by_model", {}))}


def _day(now: datetime) -> str:
    return now.astimezone(UTC).date().isoformat()


@dataclass
class CostLedger:
    """A runtime's prices and budgets, and the tenants' spend of the day in this process."""

    prices: PriceTable = field(default_factory=PriceTable)
    budgets: Budgets = field(default_factory=Budgets)
    _tenant_day: dict[tuple[str, str], float] = field(default_factory=dict)

    async def seed(self, store: Store, tenant: str, now: datetime, *, always: bool = False) -> None:
        """Read ``tenant``'s spend of the day from the store, once a day per process (only when a
        tenant cap is set, unless ``always``)."""
        if self.budgets.max_cost_per_tenant_per_day is None and not always:
            return
        day = _day(now)
        if (tenant, day) in self._tenant_day:
            return
        spent = 0.0
        for summary in await store.list(tenant=tenant, limit=_TENANT_SCAN):
            if _day(summary.saved_at) != day:
                break  # newest first: the rest were saved before today
            doc = await store.load(summary.id)
            if doc is not None:
                spent += _day_cost(doc, day)
        self._forget_other_days(day)
        self._tenant_day.setdefault((tenant, day), spent)

    def add(self, tenant: str, now: datetime, dollars: float) -> None:
        """Count ``dollars`` spent by ``tenant`` at ``now``."""
        key = (tenant, _day(now))
        self._forget_other_days(key[1])
        self._tenant_day[key] = self._tenant_day.get(key, 0.0) + dollars

    def _forget_other_days(self, day: str) -> None:
        """Keep only ``day``'s tallies: a long-running process does not hold every day it saw."""
        for key in [key for key in self._tenant_day if key[1] != day]:
            del self._tenant_day[key]

    def tenant_spent(self, tenant: str, now: datetime) -> float:
        """The tenant's spend of the day as this process knows it."""
        return self._tenant_day.get((tenant, _day(now)), 0.0)

    def budget_for(self, now: datetime) -> SessionBudget:
        """The ``CallBudget`` of one turn at ``now``."""
        return SessionBudget(self, now)


def _day_cost(doc: Session, day: str) -> float:
    stored = doc.metadata.get(COST_KEY)
    days = stored.get("by_day") if isinstance(stored, Mapping) else None
    return float(days.get(day, 0.0)) if isinstance(days, Mapping) else 0.0


def _estimate_input(request: ModelRequest) -> int:
    """The call's input in tokens, estimated from its text (about four characters a token)."""
    chars = len(request.instructions or "") + sum(len(str(m.content or "")) for m in request.messages)
    return math.ceil(chars / _CHARS_PER_TOKEN)


class SessionBudget:
    """The :class:`~tether.engine.core.ports.CallBudget` of one turn: checks the ledger's budgets and
    tallies each call on the session (``metadata["cost"]``) and its tenant's day."""

    def __init__(self, ledger: CostLedger, now: datetime) -> None:
        self.ledger = ledger
        self.now = now

    def refuse(self, session: Session, model: str, request: ModelRequest) -> str | None:
        budgets = self.ledger.budgets
        cost = session_cost(session)
        estimate = _estimate_input(request)
        if budgets.max_tokens_per_session is not None:
            used = cost["tokens_in"] + cost["tokens_out"]
            if used + estimate > budgets.max_tokens_per_session:
                return (f"the session has used {used} tokens; this call (about {estimate} in) would pass "
                        f"max_tokens_per_session={budgets.max_tokens_per_session}")
        price = self.ledger.prices.price(model)
        extra = estimate * price.input / 1e6 if price is not None else 0.0
        if budgets.max_cost_per_session is not None and cost["estimated_cost"] + extra > budgets.max_cost_per_session:
            return (f"the session has cost ${cost['estimated_cost']:.6f}; this call would pass "
                    f"max_cost_per_session=${budgets.max_cost_per_session}")
        if budgets.max_cost_per_tenant_per_day is not None:
            tenant = session_tenant(session.metadata)
            spent = self.ledger.tenant_spent(tenant, self.now)
            if spent + extra > budgets.max_cost_per_tenant_per_day:
                return (f"tenant {tenant!r} has spent ${spent:.6f} today; this call would pass "
                        f"max_cost_per_tenant_per_day=${budgets.max_cost_per_tenant_per_day}")
        return None

    def spent(self, session: Session, model: str, usage: Usage) -> None:
        tokens_in, tokens_out = usage.prompt_tokens or 0, usage.completion_tokens or 0
        price = self.ledger.prices.price(model)
        dollars = (tokens_in * price.input + tokens_out * price.output) / 1e6 if price is not None else 0.0
        stored = session.metadata.get(COST_KEY)
        cost: dict[str, Any] = dict(stored) if isinstance(stored, Mapping) else {}
        cost["tokens_in"] = int(cost.get("tokens_in", 0)) + tokens_in
        cost["tokens_out"] = int(cost.get("tokens_out", 0)) + tokens_out
        cost["calls"] = int(cost.get("calls", 0)) + 1
        cost["estimated_cost"] = float(cost.get("estimated_cost", 0.0)) + dollars
        if price is None:
            cost["unpriced_calls"] = int(cost.get("unpriced_calls", 0)) + 1
        by_model = dict(cost.get("by_model", {}))
        mine = dict(by_model.get(model, {}))
        mine.update(tokens_in=int(mine.get("tokens_in", 0)) + tokens_in,
                    tokens_out=int(mine.get("tokens_out", 0)) + tokens_out, calls=int(mine.get("calls", 0)) + 1,
                    estimated_cost=float(mine.get("estimated_cost", 0.0)) + dollars)
        by_model[model] = mine
        cost["by_model"] = by_model
        day = _day(self.now)
        by_day = dict(cost.get("by_day", {}))
        by_day[day] = float(by_day.get(day, 0.0)) + dollars
        cost["by_day"] = {d: by_day[d] for d in sorted(by_day)[-31:]}  # a month of days, not a growing list
        session.metadata[COST_KEY] = cost
        self.ledger.add(session_tenant(session.metadata), self.now, dollars)
        count_model_call(model, tokens_in, tokens_out)
