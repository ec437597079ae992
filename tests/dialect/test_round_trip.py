"""to_spec: the exact inverse of building a flow file; closures refused with their replacement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.dialect.twins import EXAMPLES, python_example

from tether import Flow, action, collect, end, goto, handoff, on_message, on_silence, reply, router, wait
from tether.dialect import Registry, build_flow, canonical, load, parse_document, parse_text, to_spec
from tether.dialect.spec import FlowSpec
from tether.errors import FlowDefinitionError


def _flows(name: str) -> list[dict[str, Any]]:
    flows: list[dict[str, Any]] = parse_text((EXAMPLES / f"{name}.yaml").read_text())["agent"]["flows"]
    return flows


@pytest.mark.parametrize("name", ["shipping", "support"])
def test_the_examples_round_trip_exactly(name: str) -> None:
    agent = load(EXAMPLES / f"{name}.yaml")
    for flow, written in zip(agent.flows, _flows(name), strict=True):  # type: ignore[union-attr]
        spec = to_spec(flow)
        assert spec == canonical(written)
        rebuilt, issues = parse_document({"flow": spec})
        assert issues == [] and isinstance(rebuilt, FlowSpec)
        registry = Registry()
        again = build_flow(rebuilt, registry)
        assert to_spec(again) == spec


def test_a_round_trip_keeps_the_digest() -> None:
    (flow,) = load(EXAMPLES / "shipping.yaml").flows  # type: ignore[union-attr]
    spec, _ = parse_document({"flow": to_spec(flow)})
    assert isinstance(spec, FlowSpec)
    rebuilt = build_flow(spec, Registry.of(tools=flow_tools()))
    assert rebuilt.digest == flow.digest


def flow_tools() -> list[Any]:
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("shipping_code_rt", EXAMPLES / "shipping_code.py")
    assert module_spec and module_spec.loader
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return list(module.registry.tools)


def test_every_kind_and_option_round_trips(tmp_path: Path) -> None:
    text = """\
flow:
  id: everything
  version: "3"
  description: all the kinds
  start: first
  context: reset
  max_oscillations: 3
  on:
    - {kind: message, phrases: [hi], repeat: always, if: {op: exists, path: state.name}}
    - {kind: mention, phrases: [refund]}
    - {kind: silence, after: 10m, repeat: {cooldown: 1h}}
    - {kind: event, name: paid, after: 1d, business_hours: true}
  clear_on_start: [name]
  on_end: stay
  instructions: ["Be brief with ${state.name}."]
  tools: [lookup_tool]
  collect: [name]
  nodes:
    - kind: reply
      id: intro
      generate: true
      instructions: Greet ${input.who}.
      fallback: Hello!
      once: true
      tools: [lookup_tool]
      model: small
      routes: [{when: {op: truthy, value: {path: state.vip}}, to: {handoff: vip_desk, reason: vip}}]
      next: first
    - kind: collect
      id: first
      schema: {type: object, properties: {name: {type: string, minLength: 2}, age: {type: integer}}, required: [name]}
      required: [name]
      ask: Your name?
      question: What is your name?
      instructions: Read the name.
      max_turns: 4
      max_asks: 2
      resolvers:
        - {kind: pattern, field: name, regex: "[A-Z][a-z]+"}
        - {kind: range, field: age, min: 0, max: 130}
        - {kind: jsonpath, field: name, path: input.name}
        - {kind: whole_message, field: name, min_length: 2}
      verbatim_fields: [name]
      model: deep
      routes: [{when: {op: lt, left: {path: state.age}, right: {literal: 18}}, to: {end: minor}}]
      next: {goto: pick, data: {source: {value: form}}, clear: [age]}
    - kind: decide
      id: pick
      instructions: Pick one.
      prompt: Which one?
      choices: [{id: a, label: Option A, description: the first}, b]
      routes: [{when: {op: eq, left: {path: state.choice}, right: {literal: a}}, to: act}]
      otherwise: {escalate: unsure}
    - kind: action
      id: act
      tool: lookup_tool
      args: {q: {template: "${state.name}!"}, n: {value: 3}, who: {path: input.who}}
      bind: state.found
      approval: true
      routes:
        - when: {op: not, arg: {op: exists, path: state.found}}
          to: {start_flow: "${state.name}", input: {a: {value: 1}}}
      next: check
      on_fail: {end: failed}
      output_schema: {type: object, properties: {found: {type: object}}}
    - kind: router
      id: check
      when:
        op: or
        args: [{op: in, value: {path: state.name}, set: {literal: [Ann, Bob]}}, {op: condition, name: vip, arg: 2}]
      then: pause
      else: {goto: pause, data: {x: {value: 1}}}
      label: Check
    - kind: wait
      id: pause
      timer: 2h
      up_to: 1d
      business_hours: true
      then: {end: done}
      else: stay
"""
    path = tmp_path / "everything.yaml"
    path.write_text(text)
    from tether import tool

    @tool
    async def lookup_tool(q: str, n: int, who: str | None = None) -> dict[str, Any]:
        """Look up."""
        return {}

    registry = Registry.of(tools=[lookup_tool], conditions={"vip": lambda root, arg: True})
    flow = load(path, registry)
    assert isinstance(flow, Flow) and flow.version == "3"
    assert to_spec(flow) == canonical(parse_text(text)["flow"])


def test_a_declarative_python_flow_converts_and_rebuilds() -> None:
    greet = reply("greet", response="Hi ${name}, from ${context.tenant}.", next=goto("ask"))
    ask = collect("ask", fields=["name"], ask="Name?", on_complete=goto("route"))
    route = router("route", when={"equals": {"name": "Ann"}}, then="bye", else_="pause")  # the older form
    bye = reply("bye", response="Bye.", next=handoff("desk"))
    pause = wait("pause", event="paid", then=end("paid"))
    with pytest.warns(DeprecationWarning, match="flow 'py', node 'route'"):
        flow = Flow("py", nodes=[greet, ask, route, bye, pause], on=[on_message("hi"), on_silence("5m")])
    spec = to_spec(flow)
    assert spec["nodes"][0]["response"] == {"template": "Hi ${state.name}, from ${context.tenant}."}
    assert spec["nodes"][2]["when"] == {"op": "eq", "left": {"path": "state.name"}, "right": {"literal": "Ann"}}
    parsed, issues = parse_document({"flow": spec})
    assert issues == [] and isinstance(parsed, FlowSpec)
    assert to_spec(build_flow(parsed)) == spec


def test_closures_are_refused_naming_node_option_and_replacement() -> None:
    shipping = python_example("shipping")
    with pytest.raises(FlowDefinitionError) as caught:
        to_spec(shipping.ship)
    found = {(i.node, i.path): i for i in caught.value.issues}
    assert set(found) == {("get_address", "ask"), ("get_address", "on_complete"), ("book", "run"), ("done", "next")}
    assert all(i.code == "not-declarative" and i.flow == "ship" for i in found.values())
    assert "template" in (found[("get_address", "ask")].hint or "")
    assert "routes: [{when: <predicate>, to: <node>}] and next: <node>" in (found[("get_address", "on_complete")].hint
                                                                             or "")
    assert "tool: <name>, args, bind" in (found[("book", "run")].hint or "")


def test_the_python_support_example_converts_where_it_is_declarative() -> None:
    support = python_example("support")
    assert to_spec(support.human)["nodes"][0]["next"] == {"handoff": "human", "reason": "customer asked for a person"}
    assert to_spec(support.still_there)["nodes"][0]["next"] == "next"
    with pytest.raises(FlowDefinitionError) as caught:
        to_spec(support.menu)
    assert [(i.node, i.path) for i in caught.value.issues] == [("topic", "on_complete")]
    code = action("code", lambda state, ctx: None)
    with pytest.raises(FlowDefinitionError, match="do: <name>"):
        to_spec(Flow("f", nodes=[code]))


def test_a_node_kind_the_dialect_lacks_is_refused() -> None:
    from tether.flow.steps import agent as agent_step

    flow = Flow("f", nodes=[agent_step("helper", prompt="Help.")])
    with pytest.raises(FlowDefinitionError) as caught:
        to_spec(flow)
    assert [(i.node, i.path, i.code) for i in caught.value.issues] == [("helper", "kind", "not-declarative")]
