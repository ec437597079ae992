"""Scenario files: the examples' scenarios pass; a failing one reports a readable diff, through
run_scenario, ``tether test`` and the pytest plugin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tether.testing.scenarios import ScenarioError, find_scenarios, record_file, run_file, run_scenario

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
            "intent chitchat, intent skip, quantity, size, toppings)")
    assert said in result.report()
    path.write_text(STRICT.replace("calls: [extract], node: order/confirm}",
                                   "calls: [extract], node: order/confirm, unsaid: [values.colour]}"))
    assert (await run_scenario(path)).passed


async def test_a_meaning_needs_the_strict_model(tmp_path: Path) -> None:
    path = tmp_path / "means.scenario.yaml"
    path.write_text(STRICT.replace("model: strict\n", ""))
    with pytest.raises(ScenarioError, match="needs model: strict"):
        await run_scenario(path)


SUITE = f"""\
agent: {EXAMPLES / "shipping.yaml"}
model: {{summary: ["Wants 1 Main St."], speak: ["Booked! Tracking trk_9."]}}
scenarios:
  - scenario: booked at once
    steps:
      - user: ship to 1 Main St
        expect: {{reply: Booked! Tracking trk_9., ended: [booked]}}
  - scenario: a wrong reply
    steps:
      - user: ship to 1 Main St
        expect: {{reply: Booked! Tracking trk_10.}}
"""


async def test_a_suite_runs_each_scenario_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "suite.scenario.yaml"
    path.write_text(SUITE)
    results = await run_file(path)
    assert [(r.name, r.passed) for r in results] == [("booked at once", True), ("a wrong reply", False)]
    assert (await run_scenario(path, "booked at once")).passed
    with pytest.raises(ScenarioError, match=r"holds 2 scenarios \('booked at once', 'a wrong reply'\): name one"):
        await run_scenario(path)
    with pytest.raises(ScenarioError, match="none is named 'nope'"):
        await run_scenario(path, "nope")


async def test_a_suite_names_each_scenario_once_and_says_where_a_step_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "twice.scenario.yaml"
    path.write_text(SUITE.replace("a wrong reply", "booked at once"))
    with pytest.raises(ScenarioError, match="two scenarios are named 'booked at once'"):
        await run_scenario(path, "booked at once")
    path.write_text(SUITE.replace("      - user: ship to 1 Main St\n        expect: {reply: Booked! Tracking trk_10.}",
                                  "      - {user: hi, wake: true}"))
    with pytest.raises(ScenarioError, match=r"scenarios\.1\.steps\.0: .*exactly one of user, event, clock, wake"):
        await run_file(path)


COUNTER_APP = """\
from tether import Agent, Field, Flow, action, end, goto, on_message, reply

SAID = []


@action("count")
async def count(state, ctx):
    SAID.append(1)
    return goto("say", data={"n": len(SAID)})


say = reply("say", response="message ${n} this module has seen", next=end("done"))
agent = Agent("Counter", fields={"n": Field()},
              flows=[Flow("greet", start=count, nodes=[count, say], on=[on_message(repeat="always")])])
"""


async def test_recording_writes_what_each_turn_did_and_each_scenario_starts_from_a_fresh_module(
        tmp_path: Path) -> None:
    (tmp_path / "counter.py").write_text(COUNTER_APP)
    path = tmp_path / "counter.scenario.yaml"
    path.write_text("agent: counter.py\nscenarios:\n"
                    "  - scenario: one\n    steps: [{user: hi}, {clock: 1m}, {user: again}]\n"
                    "  - scenario: two\n    steps: [{user: hello}]\n")
    results = await record_file(path)
    assert [r.name for r in results] == ["one", "two"]
    recorded = yaml.safe_load(path.read_text())
    one, two = recorded["scenarios"]
    assert one["steps"] == [
        {"user": "hi", "expect": {"reply": "message 1 this module has seen", "node": [], "ended": ["done"]}},
        {"clock": "1m"},
        {"user": "again", "expect": {"reply": "message 2 this module has seen", "node": [], "ended": ["done"]}}]
    # the second scenario ran on a fresh import of counter.py: its module's list was empty again
    assert two["steps"][0]["expect"]["reply"] == "message 1 this module has seen"
    assert all(r.passed for r in await run_file(path))
    path.write_text(path.read_text().replace("user: again", "user: once more").replace("message 2", "message 3"))
    changed = (await run_file(path))[0]
    assert [(m.step, m.key) for m in changed.mismatches] == [(2, "reply")]


def test_tether_test_records_a_suite_and_the_plugin_collects_one_test_per_scenario(tmp_path: Path) -> None:
    path = tmp_path / "suite.scenario.yaml"
    path.write_text(SUITE)
    recorded = _run("tether.cli", "test", "--record", str(path), cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert recorded.stdout.splitlines() == [f"RECORDED {path} :: 2 scenarios", "2 recorded, 0 failed"]
    assert "trk_10" not in path.read_text()
    done = _run("pytest", "-p", "tether.testing.pytest_plugin", "-p", "no:cacheprovider", "-v", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "suite.scenario.yaml::booked at once PASSED" in done.stdout
    assert "suite.scenario.yaml::a wrong reply PASSED" in done.stdout


def test_a_file_that_cannot_be_run_is_an_error_named_once_and_recording_leaves_it_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "bad.scenario.yaml"
    text = "scenario: x\nagent: nowhere.py\nsteps: [{user: hi}]\n"
    path.write_text(text)
    done = _run("tether.cli", "test", "--record", str(path), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"ERROR  {path}: no such file: {tmp_path / 'nowhere.py'}",
                                        "0 recorded, 1 failed"]
    assert path.read_text() == text
