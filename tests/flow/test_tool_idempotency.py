"""Tools and the effect journal: the idempotency key parameter and the in-doubt policy."""

from __future__ import annotations

import pytest

from tether import tool


async def test_an_idempotency_key_parameter_is_supplied_not_part_of_the_schema() -> None:
    seen: list[str | None] = []

    @tool
    def charge(amount: int, idempotency_key: str | None = None) -> int:
        """Charge."""
        seen.append(idempotency_key)
        return amount

    assert set(charge.parameters["properties"]) == {"amount"}
    assert await charge.call({"amount": 3}, idempotency_key="k1") == 3
    assert seen == ["k1"]
    assert charge.in_doubt == "retry"  # the documented default


def test_an_unknown_in_doubt_policy_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="'sometimes'"):
        tool(in_doubt="sometimes")  # type: ignore[arg-type]
