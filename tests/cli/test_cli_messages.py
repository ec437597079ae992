"""Messages that point at the line and say what to do: YAML syntax errors as ``file:line:column``,
``tether schema`` given a Python file, ``tether test`` on several paths, and the "did you mean"
of Python definitions (node ids, fields, tools, option values, keywords)."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import EXAMPLES, SUPPORT, tether

BROKEN_WORKFLOW = """schemaVersion: 2
id: broken
nodes:
  - id: a
    run: {kind: function, command: "echo"
  - id: b
"""

BROKEN_AGENT = """agent:
  id: a
  flows:
    - id: f
      nodes: [{kind: reply, id: a, response: hi}
"""

TYPOS = """from tether import Agent, Field, Flow, collect, goto, reply, tool


@tool
def lookup_order(number: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return "ok"


flow = Flow("f", "orders", nodes=[
    collect("ask_order", fields=["order_numbr"], ask="Which order?"),
    reply("done", response="ok", tools=["lookup_ordr"], next=goto("ask_ordr")),
], on_end="rest")
agent = Agent("A", flows=[flow], fields={"order_number": Field("string")}, tools=[lookup_order])
"""


def test_a_yaml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    workflow = tmp_path / "broken.yaml"
    workflow.write_text(BROKEN_WORKFLOW)
    checked = tether("check", workflow, process=True)
    assert checked.code == 1
    assert checked.out.splitlines()[0] == (f"{workflow}:6:3: not valid YAML: expected ',' or '}}', but got '-' "
                                           "(while parsing a flow mapping at line 5, column 10)")
    assert "<unicode string>" not in checked.out and "<root>" not in checked.out
    ran = tether("workflow", "run", workflow, process=True)
    assert ran.code == 1 and ran.err.startswith(f"error [workflow-syntax] {workflow}:6:3: not valid YAML")

    agent = tmp_path / "agent.yaml"
    agent.write_text(BROKEN_AGENT)
    for command in ("check", "chat"):
        done = tether(command, agent, process=True)
        assert done.code == 1 and f"{agent}:6:1: not valid YAML: expected ',' or ']'" in done.out + done.err, done
        assert "<unicode string>" not in done.out + done.err and "Python module" not in done.err


def test_chat_on_a_workflow_file_says_how_to_run_it() -> None:
    done = tether("chat", EXAMPLES / "release.yaml", process=True)
    assert done.code == 2 and "tether workflow run" in done.err and "Python module" not in done.err


def test_schema_of_a_python_file_says_what_to_run_instead() -> None:
    done = tether("schema", "flow", SUPPORT, process=True)
    assert done.code == 2
    assert done.err.strip() == (f"error: {SUPPORT} is a Python file, and only a flow file (agent.yaml) has a schema "
                                f"of its own: run `tether check {SUPPORT}` to validate it, or `tether schema flow` for "
                                "the schema every flow file follows")


def test_test_takes_several_files_and_folders(tmp_path: Path) -> None:
    scenarios = EXAMPLES / "scenarios"
    one, two = sorted(scenarios.glob("*.scenario.yaml"))[:2]
    done = tether("test", one, two, scenarios, process=True)
    assert done.code == 0, done.out + done.err
    total = len(list(scenarios.glob("*.scenario.yaml")))
    assert done.out.strip().splitlines()[-1] == f"{total} passed, 0 failed"  # each file once
    assert sum(line.startswith(f"PASSED {one}") for line in done.out.splitlines()) == 1
    missing = tether("test", one, tmp_path / "nope", process=True)
    assert missing.code == 2 and missing.err.strip() == f"error: no such file or directory: {tmp_path / 'nope'}"


def test_python_definition_errors_suggest_the_near_name(tmp_path: Path) -> None:
    app = tmp_path / "typos.py"
    app.write_text(TYPOS)
    done = tether("check", app, process=True)
    assert done.code == 1
    assert done.out.splitlines() == [
        "error [invalid-option] flow 'f' at on_end: on_end must be 'end', 'stay' or 'reset', got 'rest' "
        "(did you mean 'reset'?)",
        "error [unresolved-transition] flow 'f' node 'done': next names 'ask_ordr', which is not a node of the "
        "flow (did you mean 'ask_order'?)",
        "2 problem(s)"]
    app.write_text(TYPOS.replace('on_end="rest"', 'on_end="reset"').replace('goto("ask_ordr")', 'goto("ask_order")'))
    done = tether("check", app, process=True)
    assert done.out.splitlines() == [
        "error [unknown-field] flow 'f' node 'ask_order': field 'order_numbr' is not declared on the agent "
        "(did you mean 'order_number'?)",
        "error [unknown-tool] flow 'f' node 'done': tool 'lookup_ordr' is not registered on the agent "
        "(did you mean 'lookup_order'?)",
        "2 problem(s)"]
    app.write_text(TYPOS.replace('ask="Which order?")', 'ask="Which order?", max_turn=3)'))
    done = tether("check", app, process=True)
    assert done.code == 2
    assert done.err.strip() == (f"error: cannot import {app}: TypeError: collect() got an unexpected keyword "
                                "argument 'max_turn' (typos.py:11; did you mean 'max_turns'?)")
