"""``tether check``, ``tether schema`` and ``tether chat`` on flow files (YAML agents)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import EXAMPLES, chat, tether

BROKEN = """\
agent:
  name: Broken
  fields: {email: {type: string}}
  flows:
    - id: f
      on: [{kind: message}]
      nodes:
        - kind: collect
          id: ask
          fields: [emial]
          ask: Your email?
        - kind: reply
          id: done
          response: {template: "Thanks ${state.emal}"}
          next: {goto: dnoe}
"""


def test_check_prints_every_issue_like_a_compiler(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    done = tether("check", path)
    assert done.code == 1
    lines = done.out.splitlines()
    assert f"{path}:10: unknown-field: unknown field 'emial' [agent.flows.0.nodes.0.fields.0]" in lines
    assert "    hint: did you mean 'email'?" in lines
    assert any(line.startswith(f"{path}:14: unknown-source: state.emal") for line in lines)
    assert f"{path}:15: unresolved-transition: target 'dnoe' is not a node of the flow [agent.flows.0.nodes.1.next]" \
        in lines
    assert "    hint: did you mean 'done'?" in lines
    assert lines[-1] == "3 error(s), 0 warning(s)"


def test_check_accepts_the_yaml_examples() -> None:
    for name in ("shipping", "support"):
        done = tether("check", EXAMPLES / f"{name}.yaml")
        assert (done.code, done.out.strip()) == (0, f"ok: {EXAMPLES / f'{name}.yaml'}")


def test_check_lists_the_older_predicate_objects_with_their_cel_form(tmp_path: Path) -> None:
    text = (EXAMPLES / "welcome.yaml").read_text()
    cel = "when: \"state.wants_trial == 'yes'\""
    assert cel in text
    path = tmp_path / "welcome.yaml"
    path.write_text(text.replace(cel, 'when: {op: eq, left: {path: state.wants_trial}, right: {literal: "yes"}}'))
    line = 1 + text[:text.index(cel)].count("\n")
    done = tether("check", path, process=True)
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f"{path}:{line}: warning old-form: a predicate object is the older form of a condition "
        "[agent.flows.0.nodes.3.routes.0.when]",
        "    hint: write the CEL condition \"state.wants_trial == 'yes'\"",
        f"ok: {path} (1 warning(s))"]


def test_schema_prints_a_closed_schema_enumerating_the_agent() -> None:
    done = tether("schema", "flow", EXAMPLES / "shipping.yaml", process=True)  # the real path
    assert done.code == 0, done.err
    schema = json.loads(done.out)
    assert {"enum": ["book_shipment"]} in schema["$defs"]["ActionSpec"]["properties"]["tool"]["anyOf"]
    plain = json.loads(tether("schema", "flow").out)
    assert plain["$defs"]["ActionSpec"]["additionalProperties"] is False


def test_chat_talks_to_a_yaml_agent(tmp_path: Path) -> None:
    done = chat(EXAMPLES / "shipping.yaml", tmp_path / "s.db", "I'd like to ship a parcel", "42 Harbour Lane, Bristol")
    assert done.code == 0, done.err
    assert done.replies("Shippy") == ["Which address should the shipment go to?",
                                      "Booked! Your shipment to 42 Harbour Lane, Bristol has tracking id trk_24."]


def test_check_lists_the_older_json_conditions_of_a_python_app(tmp_path: Path) -> None:
    app = tmp_path / "old.py"
    app.write_text(
        "from tether import Agent, Field, Flow, end, on_message, reply\n"
        "from tether.flow.nodes import router\n"
        "flow = Flow('f', 'f', nodes=[router('r', when={'equals': {'size': 'large'}, 'known': ['size']},\n"
        "                                   then='a', else_='a'), reply('a', response='ok', next=end('done'))],\n"
        "            on=[on_message('go', if_=\"data.size != 'small'\")])\n"
        "agent = Agent('A', fields={'size': Field('string')}, flows=[flow])\n")
    done = tether("check", app, process=True)
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        "warning [old-form] flow 'f' node 'r': when: {'equals': {'size': 'large'}, 'known': ['size']} is the "
        'older form of a condition (write the CEL condition: "size" in data && data.size == "large" && "size" in '
        'data)',
        "ok: 1 agent(s), 1 flow(s) (1 warning(s))"]
