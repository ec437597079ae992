"""load() from files, strictness with file and line, template errors, and the JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tether import Agent, Flow, Message
from tether.dialect import load
from tether.dialect.schema import flow_file_schema
from tether.dialect.text import parse_text
from tether.errors import FlowDefinitionError
from tether.flow.agent_def import DEFAULT_FAILURE_REPLY
from tether.testing import FakeClock, SequentialIds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

FLOW = """\
flow:
  id: greet
  on: [{kind: message}]
  nodes:
    - kind: collect
      id: ask_name
      schema: {type: object, properties: {name: {type: string}}, required: [name]}
      resolvers: [{kind: whole_message, field: name}]
      ask: What's your name?
    - kind: reply
      id: hello
      response: {template: "Hello ${state.name}, from ${context.tenant}!"}
      next: {end: greeted}
"""


def write(tmp_path: Path, text: str, name: str = "flow.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def test_a_flow_file_loads_into_a_flow_that_runs(tmp_path: Path) -> None:
    flow = load(write(tmp_path, FLOW))
    assert isinstance(flow, Flow) and [n.id for n in flow.nodes] == ["ask_name", "hello"]
    agent = Agent("A", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("Ann"), context={"tenant": "acme"})
    assert result.text == "Hello Ann, from acme!" and result.ended[0].reason == "greeted"


async def test_json_loads_the_same(tmp_path: Path) -> None:
    data = parse_text(FLOW)
    flow = load(write(tmp_path, json.dumps(data), "flow.json"))
    assert isinstance(flow, Flow) and flow.digest == load(write(tmp_path, FLOW)).digest  # type: ignore[union-attr]


async def test_a_missing_template_value_is_a_loud_error_not_an_empty_string(tmp_path: Path) -> None:
    flow = load(write(tmp_path, FLOW))
    assert isinstance(flow, Flow)
    agent = Agent("A", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("Ann"), context={})
    assert result.text == DEFAULT_FAILURE_REPLY  # the turn degrades loudly: no "Hello Ann, from !"
    errors = [e for e in result.events if e.type == "error"]
    assert errors and "context.tenant" in str(errors[0])


def test_errors_name_file_line_path_and_hint(tmp_path: Path) -> None:
    broken = FLOW.replace("      ask: What's your name?", "      ask: What's your name?\n      max_turn: 3")
    path = write(tmp_path, broken)
    with pytest.raises(FlowDefinitionError) as caught:
        load(path)
    (issue,) = caught.value.issues
    assert issue.code == "dialect-extra-forbidden" and issue.path == "flow.nodes.0"
    assert issue.message.startswith(f"{path}:5: ")  # the node's line
    assert issue.hint == "did you mean 'max_turns'?"


def test_template_errors_refuse_the_file(tmp_path: Path) -> None:
    broken = FLOW.replace("${state.name}", "${state.nme}").replace("${context.tenant}", "${ctx.tenant}")
    with pytest.raises(FlowDefinitionError) as caught:
        load(write(tmp_path, broken))
    assert sorted(i.code for i in caught.value.issues) == ["unknown-root", "unknown-source"]
    assert all(":12: " in i.message for i in caught.value.issues)


def test_yaml_on_and_yes_stay_text(tmp_path: Path) -> None:
    flow = load(write(tmp_path, FLOW.replace("What's your name?", "yes")))
    assert isinstance(flow, Flow) and flow.nodes[0].ask == "yes"  # type: ignore[attr-defined]


def test_the_examples_load_as_agents() -> None:
    for name in ("shipping", "support"):
        agent = load(EXAMPLES / f"{name}.yaml")
        assert isinstance(agent, Agent) and agent.flows


# --------------------------------------------------------------------------- schema


def _closed(schema: Any, where: str = "#") -> list[str]:
    """Object schemas that allow unknown keys (node schemas, which are JSON Schemas, excepted)."""
    open_: list[str] = []
    if isinstance(schema, dict):
        if "properties" in schema and schema.get("additionalProperties") is not False:
            open_.append(where)
        for key, value in schema.items():
            if key not in ("schema", "output_schema"):
                open_ += _closed(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            open_ += _closed(value, f"{where}/{index}")
    return open_


def test_the_schema_is_closed_and_accepts_the_examples() -> None:
    for kind in ("flow", "agent"):
        assert _closed(flow_file_schema(kind)) == []
    agent_schema = flow_file_schema("agent")
    for name in ("shipping", "support"):
        jsonschema.validate(parse_text((EXAMPLES / f"{name}.yaml").read_text()), agent_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"flow": {"id": "f", "nodes": [{"kind": "reply", "id": "r", "generat": True}]}},
                            flow_file_schema("flow"))


def test_given_an_agent_the_schema_enumerates_what_it_offers() -> None:
    schema = flow_file_schema("flow", fields=["email", "size"], tools=["book_shipment"], actions=[],
                              events=["paid"], conditions=["is_vip"])
    defs = schema["$defs"]
    assert defs["CollectSpec"]["properties"]["fields"]["items"] == {"enum": ["email", "size"]}
    assert {"enum": ["book_shipment"]} in defs["ActionSpec"]["properties"]["tool"]["anyOf"]
    assert {"not": {}} in defs["ActionSpec"]["properties"]["do"]["anyOf"]  # no registered action: none legal
    flow = {"flow": {"id": "f", "nodes": [{"kind": "action", "id": "a", "tool": "book_shipment"}]}}
    jsonschema.validate(flow, schema)
    flow["flow"]["nodes"][0]["tool"] = "delete_everything"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(flow, schema)


@pytest.mark.parametrize("kind", ["flow", "agent"])
def test_the_published_schemas_are_current(kind: str) -> None:
    published = EXAMPLES.parent / "schemas" / f"{kind}-file.v1.schema.json"
    assert json.loads(published.read_text()) == flow_file_schema(kind), (
        f"{published.name} is stale: regenerate it with `tether schema {kind} > schemas/{published.name}`")


IDLE_AGENT = """\
agent:
  name: Ava
  code: {code}
  tools: [book_shipment]
  {idle}
  flows:
    - id: f
      on: [{{kind: message, phrases: [hello]}}]
      nodes:
        - {{kind: reply, id: r, response: {{template: hi}}}}
"""


def test_idle_tools_name_what_the_idle_speaker_may_call(tmp_path: Path) -> None:
    code = EXAMPLES / "shipping_code.py"
    agent = load(write(tmp_path, IDLE_AGENT.format(code=code, idle="idle_tools: [book_shipment]"), "a.yaml"))
    assert isinstance(agent, Agent) and agent.idle is not None and agent.idle.tools == ("book_shipment",)
    plain = load(write(tmp_path, IDLE_AGENT.format(code=code, idle="idle: Be brief."), "b.yaml"))
    assert isinstance(plain, Agent) and plain.idle is not None and plain.idle.tools is None  # none offered
    with pytest.raises(FlowDefinitionError) as wrong:
        load(write(tmp_path, IDLE_AGENT.format(code=code, idle="idle_tools: [book_shipmnt]"), "c.yaml"))
    assert "idle_tools names tool 'book_shipmnt'" in str(wrong.value) and "agent.idle_tools.0" in str(wrong.value)
    with pytest.raises(FlowDefinitionError, match="silent idle speaker"):
        load(write(tmp_path, IDLE_AGENT.format(code=code, idle="idle: silent\n  idle_tools: [book_shipment]"),
                   "d.yaml"))


def _code_flow(option: str, *nodes: str, max_turns: int | None = None) -> str:
    """A flow file asking for a 4-digit code, with the flow ``option`` line and ``nodes`` after its
    collect step (``max_turns``, if given) and its reply."""
    lines = ["flow:", "  id: ask", "  on: [{kind: message}]", f"  {option}", "  nodes:",
             "    - kind: collect", "      id: ask_code", "      fields: [code]",
             '      resolvers: [{kind: pattern, field: code, regex: "\\\\b(\\\\d{4})\\\\b"}]',
             "      ask: What's your code?", *([f"      max_turns: {max_turns}"] if max_turns else []),
             '    - {kind: reply, id: done, response: {template: "Code ${state.code}."}, next: {end: done}}',
             *(f"    {node}" for node in nodes)]
    return "\n".join(lines) + "\n"


SKIPPING = _code_flow("on_skip: explain", "- kind: reply", "  id: explain",
                      '  response: {template: "It is on your card."}', "  next: {goto: ask_code, clear: [code]}")


async def test_a_flow_files_on_skip_explains_instead_of_handing_off(tmp_path: Path) -> None:
    flow = load(write(tmp_path, SKIPPING))
    assert isinstance(flow, Flow) and flow.on_skip == "explain"
    from tether.dialect import to_spec
    assert to_spec(flow)["on_skip"] == "explain"  # written back
    from tether import Field
    agent = Agent("A", flows=[flow], fields={"code": Field("string")}).with_clock(FakeClock(), SequentialIds("s"))
    asked = await agent.turn(None, Message("hello"))
    told = await agent.turn(asked.session, Message("I don't know"))
    assert told.text == "It is on your card.\n\nWhat's your code?"
    with pytest.raises(FlowDefinitionError, match="on_skip 'explian' is not a node"):
        load(write(tmp_path, SKIPPING.replace("on_skip: explain", "on_skip: explian"), "bad.yaml"))


ESCALATING = _code_flow("on_escalate: gave_up", "- kind: reply", "  id: gave_up",
                        """  response: {template: "Let's leave it there."}""", "  next: {end: gave-up}", max_turns=2)

async def test_a_flow_files_on_escalate_ends_the_task_instead_of_handing_off(tmp_path: Path) -> None:
    flow = load(write(tmp_path, ESCALATING))
    assert isinstance(flow, Flow) and flow.on_escalate == "gave_up"
    from tether.dialect import to_spec
    assert to_spec(flow)["on_escalate"] == "gave_up"  # written back
    from tether import Field
    agent = Agent("A", flows=[flow], fields={"code": Field("string")}).with_clock(FakeClock(), SequentialIds("s"))
    for answers in (["no idea"], ["hmm", "what?"]):  # a skip with no on_skip, and max_turns spent
        result = await agent.turn(None, Message("hello"))
        for said in answers:
            result = await agent.turn(result.session, Message(said))
        assert result.text == "Let's leave it there." and result.handoff is None, answers
        assert result.session is not None and result.session.status != "handed_off"
        assert "escalated" in [line.code for line in result.outcomes]
    with pytest.raises(FlowDefinitionError, match="on_escalate 'gave_upp' is not a node"):
        load(write(tmp_path, ESCALATING.replace("on_escalate: gave_up", "on_escalate: gave_upp"), "bad.yaml"))
