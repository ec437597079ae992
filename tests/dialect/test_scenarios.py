"""Scenario files: the examples' scenarios pass; a failing one reports a readable diff, through
run_scenario, ``tether test`` and the pytest plugin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tether.testing.scenarios import ScenarioError, find_scenarios, run_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

FAILING = f"""\
scenario: a wrong expectation
agent: {EXAMPLES / "shipping.yaml"}
model: {{summary: ["Wants 1 Main St."], speak: ["Booked! Tracking trk_9."]}}
steps:
  - user: ship to 1 Main St
    expect:
      reply: Booked! Tracking trk_10.
      calls: [extract, summary, speak]
      ended: [booked]
"""


@pytest.mark.parametrize("path", find_scenarios(EXAMPLES / "scenarios"), ids=lambda p: p.name)
async def test_the_example_scenarios_pass(path: Path) -> None:
    result = await run_scenario(path)
    assert result.passed, result.report()
    assert result.turns >= 1


async def test_a_failing_scenario_reports_each_mismatch_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "wrong.scenario.yaml"
    path.write_text(FAILING)
    result = await run_scenario(path)
    assert not result.passed
    assert [(m.step, m.key) for m in result.mismatches] == [(0, "reply"), (0, "calls")]
    report = result.report()
    assert "step 1: reply differs" in report
    assert "-Booked! Tracking trk_10." in report and "+Booked! Tracking trk_9." in report
    assert '-  "extract",' in report


async def test_unused_scripted_replies_fail_the_scenario(tmp_path: Path) -> None:
    path = tmp_path / "unused.scenario.yaml"
    expectations = "    expect:\n      reply: Booked! Tracking trk_10.\n      calls: [extract, summary, speak]\n"
    path.write_text(FAILING.replace('speak: ["Booked! Tracking trk_9."]', 'speak: ["a", "b"]')
                    .replace(expectations + "      ended: [booked]\n", ""))
    result = await run_scenario(path)
    assert result.unused == {"speak": 1} and not result.passed


async def test_a_malformed_scenario_names_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "bad.scenario.yaml"
    path.write_text(f"scenario: x\nagent: {EXAMPLES / 'shipping.yaml'}\nsteps:\n  - {{user: hi, wake: true}}\n")
    with pytest.raises(ScenarioError, match=r"steps\.0: .*exactly one of user, event, clock, wake"):
        await run_scenario(path)


async def test_a_python_agent_file_that_names_no_agent_is_a_scenario_error(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    path = tmp_path / "empty.scenario.yaml"
    path.write_text("scenario: x\nagent: empty.py\nsteps:\n  - {user: hi}\n")
    with pytest.raises(ScenarioError, match=rf"^{re.escape(str(path))}: no Agent found in .*empty\.py: define `agent`"):
        await run_scenario(path)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_tether_test_passes_and_fails_readably(tmp_path: Path) -> None:
    passing = _run("tether.cli", "test", str(EXAMPLES / "scenarios"), cwd=tmp_path)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert passing.stdout.splitlines()[-1] == f"{len(find_scenarios(EXAMPLES / 'scenarios'))} passed, 0 failed"
    (tmp_path / "wrong.scenario.yaml").write_text(FAILING)
    failing = _run("tether.cli", "test", str(tmp_path), cwd=tmp_path)
    assert failing.returncode == 1
    lines = failing.stdout.splitlines()
    assert lines[0] == f"FAILED {tmp_path / 'wrong.scenario.yaml'} :: a wrong expectation"
    assert "    +Booked! Tracking trk_9." in lines and lines[-1] == "0 passed, 1 failed"


def test_the_pytest_plugin_collects_scenario_files(tmp_path: Path) -> None:
    (tmp_path / "wrong.scenario.yaml").write_text(FAILING)
    (tmp_path / "right.scenario.yaml").write_text(FAILING.replace("trk_10", "trk_9").replace("extract, ", ""))
    done = _run("pytest", "-p", "tether.testing.pytest_plugin", "-p", "no:cacheprovider", "-q", str(tmp_path),
                cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "1 failed, 1 passed" in done.stdout
    assert "scenario 'a wrong expectation' failed:" in done.stdout and "+Booked! Tracking trk_9." in done.stdout


STRICT = f"""\
scenario: a pizza with a strict model
agent: {EXAMPLES / "pizza.py"}
model: strict
steps:
  - user: a large one with ham
    means: {{values: {{size: large, toppings: [ham]}}}}
    expect: {{calls: 0, node: order/confirm}}
  - user: hmm, is it red?
    means: {{values: {{colour: red}}}}
    expect: {{calls: [extract], node: order/confirm}}
  - user: "yes"
    means: {{values: {{confirm: "yes"}}}}
    expect: {{ended: [placed]}}
"""


async def test_a_strict_scenario_fails_a_step_whose_meaning_no_call_could_say(tmp_path: Path) -> None:
    path = tmp_path / "strict.scenario.yaml"
    path.write_text(STRICT)
    result = await run_scenario(path)
    assert [(m.step, m.key) for m in result.mismatches] == [(1, "unsaid")]
    said = ("'hmm, is it red?': could not say values.colour (calls: extract; offered: confirm, intent cancel, "
            "intent chitchat, intent skip, size, toppings)")
    assert said in result.report()
    path.write_text(STRICT.replace("calls: [extract], node: order/confirm}",
                                   "calls: [extract], node: order/confirm, unsaid: [values.colour]}"))
    assert (await run_scenario(path)).passed


async def test_a_meaning_needs_the_strict_model(tmp_path: Path) -> None:
    path = tmp_path / "means.scenario.yaml"
    path.write_text(STRICT.replace("model: strict\n", ""))
    with pytest.raises(ScenarioError, match="needs model: strict"):
        await run_scenario(path)
