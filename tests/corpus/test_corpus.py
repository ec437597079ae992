"""The regression corpus: conversations with the four example agents (no model), and with support
and pizza under a strict model (``*-model.scenario.yaml``: each message says what the customer
means, and the model can say only what a request offers), as customers talk, each turn's reply
recorded (``tether test --record``). A change that alters any reply fails
here with its diff: when it is intended, record the file again and review its diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.testing.scenarios import find_scenarios, read_scenarios, run_scenario

HERE = Path(__file__).parent
CASES = [(path, scenario.scenario) for path in find_scenarios(HERE) for scenario in read_scenarios(path)]


@pytest.mark.parametrize(("path", "name"), CASES, ids=[f"{p.stem.removesuffix('.scenario')}::{n}" for p, n in CASES])
async def test_the_corpus_replies_as_recorded(path: Path, name: str) -> None:
    result = await run_scenario(path, name)
    hint = f"if the change is intended: tether test --record {path.relative_to(HERE.parents[1])}, and review its diff"
    assert result.passed, f"{result.report()}\n{hint}"
