"""The repair scenarios of tests/scenarios/repair/: each pattern with no model and with a strict
model that can only fill what a request offers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.testing.scenarios import find_scenarios, run_scenario

HERE = Path(__file__).parent / "repair"


@pytest.mark.parametrize("path", find_scenarios(HERE), ids=lambda p: p.name)
async def test_the_repair_scenarios_pass(path: Path) -> None:
    result = await run_scenario(path)
    assert result.passed, result.report()
