"""``tether check`` and ``tether graph`` on the examples, on broken apps, and bad APP values."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import EXAMPLES, SHIPPING, SUPPORT, Done, tether

BROKEN = """\
from tether import Agent, Flow, goto, on_message, reply

flow = Flow("broken", nodes=[reply("a", response="x", next=goto("nowhere")), reply("a", response="y")],
            on=[on_message()])
agent = Agent("Broken", flows=[flow])
"""

UNREACHABLE = """\
from tether import Agent, Flow, end, on_message, reply

flow = Flow("lonely", nodes=[reply("a", response="x", next=end("done")), reply("b", response="y")],
            on=[on_message()])
agent = Agent("Lonely", flows=[flow])
"""

TWO_AGENTS = """\
from tether import Agent, Flow, end, on_message, reply

one = Agent("One", flows=[Flow("f1", nodes=[reply("a", response="x", next=end("done"))], on=[on_message()])])
two = Agent("Two", flows=[Flow("f2", nodes=[reply("b", response="y", next=end("done"))], on=[on_message()])])
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_examples(tmp_path: Path) -> None:
    done = tether("check", SHIPPING, cwd=tmp_path, process=True)  # the real path
    assert (done.code, done.out.strip()) == (0, "ok: 1 agent(s), 1 flow(s)")
    if SUPPORT.exists():
        done = tether("check", SUPPORT, cwd=tmp_path)
        assert done.code == 0, done.out + done.err
        assert done.out.startswith("ok: 1 agent(s), ")


def test_check_reports_each_problem_with_code_flow_and_node(tmp_path: Path) -> None:
    done = tether("check", _write(tmp_path, "broken.py", BROKEN))
    assert done.code == 1
    lines = done.out.splitlines()
    assert lines[0].startswith("error [unresolved-transition] flow 'broken' node 'a': ")
    assert lines[1].startswith("error [duplicate-node-id] flow 'broken' node 'a': ")
    assert lines[2] == "2 problem(s)"
    done = tether("check", _write(tmp_path, "unreachable.py", UNREACHABLE))
    assert done.code == 1
    assert done.out.splitlines()[0].startswith("error [unreachable-node] flow 'lonely' node 'b': ")


def test_graph_every_flow_or_one(tmp_path: Path) -> None:
    done = tether("graph", SHIPPING, process=True)  # the real path
    assert done.code == 0
    assert done.out.startswith("%% agent Shippy\nflowchart TD\n  %% flow ship\n")
    if SUPPORT.exists():
        every = tether("graph", SUPPORT)
        assert every.code == 0
        flows = [line.split()[-1] for line in every.out.splitlines() if line.startswith("  %% flow ")]
        assert len(flows) >= 2
        one = tether("graph", SUPPORT, flows[1])
        assert one.code == 0
        assert one.out.startswith(f"%% flow {flows[1]}\nflowchart TD\n") and "%% agent" not in one.out


def test_graph_unknown_flow_lists_the_flows(tmp_path: Path) -> None:
    done = tether("graph", SHIPPING, "nope")
    assert done.code == 2
    assert done.err.strip() == "error: unknown flow 'nope' (flows: ship)"


def test_graph_of_a_broken_app_fails(tmp_path: Path) -> None:
    done = tether("graph", _write(tmp_path, "broken.py", BROKEN))
    assert done.code == 1
    assert "error [duplicate-node-id]" in done.err
    assert "Traceback" not in done.err


BAD_APPS = [
    ("missing.py", "error: no such file: missing.py"),
    ("syntax.py", "error: syntax error in "),
    ("raises.py", "error: cannot import raises.py: RuntimeError: boom at import"),
    ("plain.py:nothing", "error: plain.py has no attribute 'nothing'"),
    ("plain.py:value", "error: plain.py:value is a int, not an Agent (or a list of Agents)"),
    ("plain.py", "error: no Agent found in plain.py"),
    ("two.py", "error: several Agents in two.py (one, two): name one with two.py:ATTR"),
    ("no_such_module_xyz:agent", "error: no module named 'no_such_module_xyz'"),
    ("shipping.py:", "error: invalid APP 'shipping.py:'"),
]


def _bad_apps(tmp_path: Path) -> None:
    _write(tmp_path, "syntax.py", "def broken(:\n")
    _write(tmp_path, "raises.py", "raise RuntimeError('boom at import')\n")
    _write(tmp_path, "plain.py", "value = 3\n")
    _write(tmp_path, "two.py", TWO_AGENTS)


def _one_line_error(done: Done, message: str) -> None:
    assert done.code == 2, (done.out, done.err)
    assert done.err.startswith(message), done.err
    assert len(done.err.strip().splitlines()) == 1, done.err
    assert done.out == ""


@pytest.mark.parametrize(("app", "message"), BAD_APPS)
def test_bad_app_is_a_one_line_error(tmp_path: Path, app: str, message: str) -> None:
    _bad_apps(tmp_path)
    _one_line_error(tether("check", app, cwd=tmp_path), message)


@pytest.mark.parametrize(("app", "message"), [BAD_APPS[0], BAD_APPS[2], BAD_APPS[6]])
def test_bad_app_in_graph_and_chat(tmp_path: Path, app: str, message: str) -> None:
    _bad_apps(tmp_path)
    _one_line_error(tether("graph", app, cwd=tmp_path), message)
    _one_line_error(tether("chat", app, "--db", tmp_path / "t.db", cwd=tmp_path), message)
    assert not (tmp_path / "t.db").exists()


def test_app_forms(tmp_path: Path) -> None:
    _write(tmp_path, "two.py", TWO_AGENTS)
    _write(tmp_path, "listed.py", TWO_AGENTS + "agents = [one, two]\n")
    assert tether("check", "two.py:two", cwd=tmp_path).out.strip() == "ok: 1 agent(s), 1 flow(s)"
    assert tether("check", "listed.py", cwd=tmp_path).out.strip() == "ok: 2 agent(s), 2 flow(s)"
    (tmp_path / "pkg").mkdir()
    _write(tmp_path / "pkg", "__init__.py", "")
    _write(tmp_path / "pkg", "app.py", TWO_AGENTS)
    assert tether("check", "pkg.app:one", cwd=tmp_path).out.strip() == "ok: 1 agent(s), 1 flow(s)"
    # a relative file path from another directory, importing a sibling module
    _write(tmp_path / "pkg", "sibling.py", "from app import one as agent\n")
    assert tether("check", "pkg/sibling.py", cwd=tmp_path).code == 0
    assert tether("check", str(EXAMPLES / "shipping.py") + ":agent").code == 0
