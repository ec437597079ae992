"""``tether workflow run`` with a model that does not do the agent work: what the model said is
reported, and a rejection the scripted replies cannot answer leaves a saved run and a reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import EXAMPLES, tether

ECHO = EXAMPLES / "echo_workflow.yaml"
SCRIPT = EXAMPLES / "echo_workflow.script.json"


def test_a_model_that_answers_without_a_flow_tool_is_reported_with_its_reply(tmp_path: Path) -> None:
    script = tmp_path / "chatty.json"
    script.write_text(json.dumps({"agent": ["Happy to help! Whom shall I greet?"]}))
    done = tether("workflow", "run", ECHO, "--script", script, "--db", tmp_path / "t.db", "--workspace", tmp_path,
                  process=True)
    assert done.code == 1, done.out + done.err
    last = done.out.strip().splitlines()[-1]
    assert re.fullmatch(r"run \S+ needs agent work at ask-name: the model did not call a flow tool \(start_node, "
                        r"request_input, complete_node, \.\.\.\); it replied 'Happy to help! Whom shall I greet\?'",
                        last), last
    assert "set TETHER_MODEL" not in done.out


def test_rejecting_the_sign_off_when_the_script_has_no_more_replies(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    done = tether("workflow", "run", ECHO, "--script", SCRIPT, "--db", db, "--workspace", tmp_path,
                  stdin="Ada\nr\nnot friendly enough\n", process=True)
    assert done.code == 1, done.out + done.err
    assert re.search(r"sign-off\s+│ agent\s+│ running\s+│ rejected: not friendly enough", done.out), done.out
    found = re.search(r"run (\S+) stopped \(running, agent work at sign-off\): the script ran out of replies "
                      r"\(.*\); resume with: tether workflow run (\S+) --run (\S+) --db (\S+)", done.out)
    assert found, done.out
    assert found.group(1) == found.group(3) and found.group(4) == str(db)
    listed = tether("workflow", "runs", "--db", db)
    # the rejection's feedback waits for the agent's next turn (kept until a model answers): the
    # listing names the node as agent work, with the rejection where the listing shows it
    assert re.search(r"│ echo\s+│ running\s+│ rejected at sign-off: not friendly enough \(agent work: needs",
                     listed.out), listed.out
