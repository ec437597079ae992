"""The ``results.<node>`` root and a collect's ``assign``: run time, validation and round trips."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Message, tool
from tether.dialect import Registry, canonical, load, to_spec, validate
from tether.errors import DefinitionIssue
from tether.testing import FakeClock, SequentialIds


@tool
async def order_status(order: str) -> dict[str, str]:
    """The status of an order."""
    return {"status": "shipped" if order.startswith("A") else "lost"}


REGISTRY = Registry.of(tools=[order_status])

AGENT: dict[str, Any] = {"agent": {
    "name": "Orla",
    "flows": [{
        "id": "track",
        "on": [{"kind": "message"}],
        "nodes": [
            {"kind": "collect", "id": "ask_order", "ask": "Which order?",
             "schema": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
             "resolvers": [{"kind": "pattern", "field": "order", "regex": "[A-Z]-\\d+"}],
             "assign": {"state.last_order": "order"}},
            {"kind": "action", "id": "lookup", "tool": "order_status", "args": {"order": {"path": "state.order"}},
             "routes": [{"when": {"op": "eq", "left": {"path": "results.lookup.status"},
                                  "right": {"literal": "lost"}}, "to": "sorry"}],
             "next": "found"},
            {"kind": "reply", "id": "found",
             "response": {"template": "Order ${state.last_order} is ${results.lookup.status} "
                                      "(you typed ${results.ask_order.order})."},
             "next": {"end": "told"}},
            {"kind": "reply", "id": "sorry", "response": {"template": "Order ${results.lookup.status}, sorry."},
             "next": {"end": "lost"}},
        ],
    }],
}}


def issues_of(mutate: Any) -> list[DefinitionIssue]:
    document = copy.deepcopy(AGENT)
    mutate(document["agent"]["flows"][0]["nodes"])
    return validate(document, REGISTRY)


def agent_from(tmp_path: Path) -> Agent:
    import yaml

    path = tmp_path / "orla.yaml"
    path.write_text(yaml.safe_dump(AGENT, sort_keys=False))
    loaded = load(path, REGISTRY)
    assert isinstance(loaded, Agent)
    return loaded.with_clock(FakeClock(), SequentialIds("s"))


def test_the_agent_is_valid() -> None:
    assert validate(copy.deepcopy(AGENT), REGISTRY) == []


async def test_templates_and_routes_read_results_and_assign_copies_a_field(tmp_path: Path) -> None:
    agent = agent_from(tmp_path)
    first = await agent.turn(None, Message("hello"))
    assert first.text == "Which order?"
    done = await agent.turn(first.session, Message("A-17"))
    assert done.text == "Order A-17 is shipped (you typed A-17)." and done.ended[0].reason == "told"
    assert done.llm_calls == 0
    lost = await agent.turn((await agent.turn(None, Message("hello"))).session, Message("B-2"))
    assert (lost.text, lost.ended[0].reason) == ("Order lost, sorry.", "lost")


def test_only_nodes_read_as_results_record_and_to_spec_is_the_inverse(tmp_path: Path) -> None:
    agent = agent_from(tmp_path)
    flow = agent.flows_by_id["track"]
    assert to_spec(flow) == canonical(AGENT["agent"]["flows"][0])
    plain = copy.deepcopy(AGENT["agent"]["flows"][0])
    plain["nodes"][2]["response"]["template"] = "Order ${state.last_order}."
    plain["nodes"][3]["response"]["template"] = "Sorry."
    plain["nodes"][1]["routes"] = []
    rebuilt = load_flow(tmp_path, plain)
    assert rebuilt.digest != flow.digest  # recording is part of the definition
    assert to_spec(rebuilt) == canonical(plain)


def load_flow(tmp_path: Path, flow: dict[str, Any]) -> Any:
    import yaml

    path = tmp_path / "flow.yaml"
    path.write_text(yaml.safe_dump({"flow": flow}, sort_keys=False))
    return load(path, REGISTRY)


CASES: list[tuple[str, Any, str, str, str]] = [
    ("results of a later node", lambda n: n[1]["args"].update(order={"path": "results.found"}), "unknown-source",
     "agent.flows.0.nodes.1.args.order.path", "does not run before this node"),
    ("results of an unknown node", lambda n: n[2]["response"].update(template="${results.lookpu.status}"),
     "unknown-source", "agent.flows.0.nodes.2.response.template", "did you mean 'lookup'?"),
    ("results of no node", lambda n: n[2]["response"].update(template="${results}"), "unknown-source",
     "agent.flows.0.nodes.2.response.template", "write results.<node id>"),
    ("results of a router", lambda n: n.insert(1, {"kind": "router", "id": "check", "when": {
        "op": "exists", "path": "results.check"}}), "unknown-source", "agent.flows.0.nodes.1.when.path",
     "read the state"),
    ("assign from an unknown field", lambda n: n[0].update(assign={"last_order": "ordr"}), "unknown-field",
     "agent.flows.0.nodes.0.assign.last_order", "did you mean 'order'?"),
    ("assign to a path", lambda n: n[0].update(assign={"input.x": "order"}), "invalid-assign",
     "agent.flows.0.nodes.0.assign.input.x", "state.x"),
    ("assign to results", lambda n: n[0].update(assign={"results": "order"}), "reserved-state-key",
     "agent.flows.0.nodes.0.assign.results", "results.<node id>"),
    ("bind to results", lambda n: n[1].update(bind="state.results"), "reserved-state-key",
     "agent.flows.0.nodes.1.bind", "choose another name"),
]


@pytest.mark.parametrize(("family", "mutate", "code", "path", "hint"), CASES, ids=[c[0] for c in CASES])
def test_results_and_assign_issues(family: str, mutate: Any, code: str, path: str, hint: str) -> None:
    found = [i for i in issues_of(mutate) if i.code == code]
    assert found, issues_of(mutate)
    assert found[0].path == path
    assert hint in f"{found[0].message} {found[0].hint}", found[0]


def test_an_assigned_key_is_a_legal_source_downstream() -> None:
    found = issues_of(lambda n: n[2]["response"].update(template="${state.last_ordr}"))
    assert found[0].code == "unknown-source"
    assert found[0].repair is not None and "state.last_order" in found[0].repair.legal_sources
    assert "results.ask_order" in found[0].repair.legal_sources
