"""validate(): every issue at once, each with a path, a code and a repair hint."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tether import tool
from tether.dialect import Registry, validate
from tether.errors import DefinitionIssue


@tool
async def book_shipment(address: str) -> dict[str, str]:
    """Book it."""
    return {"id": "t"}


REGISTRY = Registry.of(tools=[book_shipment], actions={"lookup": lambda args, ctx: None},
                       conditions={"is_vip": lambda root, arg: True}, events=["payment_received"])

AGENT: dict[str, Any] = {"agent": {
    "name": "Shippy",
    "fields": {"size": {"type": "enum", "enum": ["small", "large"]}, "email": {"type": "string"}},
    "flows": [{
        "id": "ship",
        "on": [{"kind": "message"}],
        "nodes": [
            {"kind": "collect", "id": "get_address", "ask": "Where to?",
             "schema": {"type": "object", "properties": {"address": {"type": "string"}}}},
            {"kind": "action", "id": "book", "tool": "book_shipment", "args": {"address": {"path": "state.address"}},
             "bind": {"tracking_id": {"path": "result.id"}}},
            {"kind": "reply", "id": "done", "response": {"template": "Booked ${state.tracking_id}."},
             "next": {"end": "booked"}},
        ],
    }, {"id": "other", "nodes": [{"kind": "reply", "id": "hi", "generate": True}]}],
}}


def issues_of(mutate: Any = None) -> list[DefinitionIssue]:
    document = copy.deepcopy(AGENT)
    if mutate is not None:
        mutate(document["agent"])
    return validate(document, REGISTRY)


def node(agent: dict[str, Any], index: int, flow: int = 0) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = agent["flows"][flow]["nodes"]
    return nodes[index]


def one(found: list[DefinitionIssue], code: str) -> DefinitionIssue:
    matching = [i for i in found if i.code == code]
    assert matching, f"no {code} in {found}"
    return matching[0]


def test_the_valid_agent_has_no_issue() -> None:
    assert issues_of() == []


def test_every_issue_is_reported_not_just_the_first() -> None:
    def breaks(agent: dict[str, Any]) -> None:
        node(agent, 0)["max_turn"] = 3
        node(agent, 1)["tool"] = "book_shipmnt"
        node(agent, 2)["next"] = {"goto": "dnoe"}

    found = issues_of(breaks)
    assert len(found) == 1  # strict parsing refuses first: the unknown key
    assert (found[0].code, found[0].path, found[0].hint) == (
        "dialect-extra-forbidden", "agent.flows.0.nodes.0", "did you mean 'max_turns'?")

    def semantic(agent: dict[str, Any]) -> None:
        node(agent, 1)["tool"] = "book_shipmnt"
        node(agent, 2)["next"] = {"goto": "dnoe"}
        agent["flows"][0]["clear_on_start"] = ["sise"]

    codes = sorted(i.code for i in issues_of(semantic))
    assert codes == ["unknown-field", "unknown-tool", "unresolved-transition"]


CASES: list[tuple[str, Any, str, str, str]] = [
    # (family, mutation, code, path, hint fragment)
    ("unknown key", lambda a: node(a, 0).update(verbatim=["address"]), "dialect-extra-forbidden",
     "agent.flows.0.nodes.0", "did you mean 'verbatim_fields'?"),
    ("bad kind", lambda a: node(a, 2).update(kind="replay"), "dialect-union-tag-invalid",
     "agent.flows.0.nodes.2", "did you mean 'reply'?"),
    ("bad op", lambda a: a["flows"][0]["on"][0].update({"if": {"op": "equals", "path": "state.x"}}),
     "dialect-union-tag-invalid", "agent.flows.0.on.0.if", "one of: eq, ne, lt"),
    ("bad context", lambda a: node(a, 2).update(context="rest"), "dialect-literal-error",
     "agent.flows.0.nodes.2.context", "did you mean 'reset'?"),
    ("duplicate id", lambda a: node(a, 2).update(id="book"), "duplicate-node-id", "agent.flows.0.nodes.2.id",
     "its own id"),
    ("reserved id", lambda a: node(a, 2).update(id="end"), "reserved-node-id", "agent.flows.0.nodes.2.id",
     "{end: reason}"),
    ("missing start", lambda a: a["flows"][0].update(start="get_adress"), "missing-start", "agent.flows.0.start",
     "did you mean 'get_address'?"),
    ("unresolved target", lambda a: node(a, 1).update(next="dne"), "unresolved-transition",
     "agent.flows.0.nodes.1.next", "did you mean 'done'?"),
    ("goto end", lambda a: node(a, 1).update(next={"goto": "end"}), "unresolved-transition",
     "agent.flows.0.nodes.1.next", "write {end: reason}"),
    ("reply both", lambda a: node(a, 2).update(generate=True), "reply-needs-one", "agent.flows.0.nodes.2",
     "remove generate"),
    ("reply neither", lambda a: node(a, 2).pop("response"), "reply-needs-one", "agent.flows.0.nodes.2",
     "generate: true"),
    ("action neither", lambda a: node(a, 1).pop("tool"), "action-needs-one", "agent.flows.0.nodes.1", "tool:"),
    ("unknown tool", lambda a: node(a, 1).update(tool="book_shipmnt"), "unknown-tool", "agent.flows.0.nodes.1.tool",
     "did you mean 'book_shipment'?"),
    ("unknown action", lambda a: node(a, 1).update(tool=None, do="lookp"), "unknown-action",
     "agent.flows.0.nodes.1.do", "did you mean 'lookup'?"),
    ("unknown field", lambda a: node(a, 0).update(fields=["emial"]), "unknown-field",
     "agent.flows.0.nodes.0.fields.0", "did you mean 'email'?"),
    ("unknown resolver field", lambda a: node(a, 0).update(
        resolvers=[{"kind": "pattern", "field": "adress", "regex": "x"}]), "unknown-field",
     "agent.flows.0.nodes.0.resolvers.0.field", "did you mean 'address'?"),
    ("collect nothing", lambda a: node(a, 0).pop("schema"), "collect-nothing", "agent.flows.0.nodes.0", "fields:"),
    ("unknown condition", lambda a: a["flows"][0]["on"][0].update({"if": {"op": "condition", "name": "is_vp"}}),
     "unknown-condition", "agent.flows.0.on.0.if.name", "did you mean 'is_vip'?"),
    ("unknown event", lambda a: a["flows"][0]["on"].append({"kind": "event", "name": "payment_recieved"}),
     "unknown-event", "agent.flows.0.on.1.name", "did you mean 'payment_received'?"),
    ("unknown flow", lambda a: node(a, 2).update(next={"start_flow": "othr"}), "unknown-flow",
     "agent.flows.0.nodes.2.next.start_flow", "did you mean 'other'?"),
    ("bad duration", lambda a: a["flows"][0]["on"].append({"kind": "silence", "after": "10 minutes"}),
     "bad-duration", "agent.flows.0.on.1.after", "10m"),
    ("wait needs one", lambda a: a["flows"][0]["nodes"].insert(2, {"kind": "wait", "id": "w"}), "wait-needs-one",
     "agent.flows.0.nodes.2", "timer: 10m"),
    ("off enum", lambda a: node(a, 2).update(routes=[{"when": {"op": "eq", "left": {"path": "state.size"},
                                                               "right": {"literal": "lage"}}, "to": "done"}]),
     "off-enum", "agent.flows.0.nodes.2.routes.0.when", "did you mean 'large'?"),
    ("unknown root", lambda a: node(a, 2).update(response={"template": "Hi ${sate.tracking_id}"}), "unknown-root",
     "agent.flows.0.nodes.2.response.template", "did you mean 'state'?"),
    ("unknown source", lambda a: node(a, 2).update(response={"template": "Hi ${state.traking_id}"}),
     "unknown-source", "agent.flows.0.nodes.2.response.template",
     "did you mean 'tracking_id'? legal sources here: state.address, state.email, state.size, state.tracking_id"),
    ("source set later", lambda a: node(a, 1).update(args={"address": {"path": "state.tracking_id"}}),
     "unknown-source", "agent.flows.0.nodes.1.args.address.path", "legal sources here: state.address"),
    ("template syntax", lambda a: node(a, 2).update(response={"template": "Hi ${state.tracking_id"}),
     "template-syntax", "agent.flows.0.nodes.2.response.template", "${state.name}"),
    ("bare placeholder", lambda a: node(a, 2).update(response={"template": "Hi {tracking_id}"}),
     "bare-placeholder", "agent.flows.0.nodes.2.response.template", "write ${state.tracking_id}"),
    ("bad bind", lambda a: node(a, 1).update(bind="input.receipt"), "invalid-bind", "agent.flows.0.nodes.1.bind",
     "state.receipt"),
    ("bad schema", lambda a: node(a, 0).update(schema={"type": "object", "properties": {"a": {"type": "date"}}}),
     "invalid-schema", "agent.flows.0.nodes.0.schema.properties.a.type", "string, number"),
    ("dynamic router data", lambda a: a["flows"][0]["nodes"].insert(2, {
        "kind": "router", "id": "r", "when": {"op": "exists", "path": "state.tracking_id"},
        "then": {"goto": "done", "data": {"x": {"path": "state.address"}}}}), "dynamic-data",
     "agent.flows.0.nodes.2.then.data", "{value: ...}"),
    ("unknown argument", lambda a: node(a, 1)["args"].update(adress={"value": "x"}), "unknown-argument",
     "agent.flows.0.nodes.1.args.adress", "did you mean 'address'?"),
    ("missing argument", lambda a: node(a, 1).update(args={}), "missing-argument", "agent.flows.0.nodes.1.args",
     "add address: {path: state.address}"),
    ("duplicate flow", lambda a: a["flows"][1].update(id="ship"), "duplicate-flow-id", "agent.flows.1.id",
     "its own id"),
]


@pytest.mark.parametrize(("family", "mutate", "code", "path", "hint"), CASES, ids=[c[0] for c in CASES])
def test_each_family_has_its_code_path_and_hint(family: str, mutate: Any, code: str, path: str, hint: str) -> None:
    issue = one(issues_of(mutate), code)
    assert issue.path == path
    assert issue.hint is not None and hint in issue.hint, issue.hint


def test_warnings_do_not_refuse() -> None:
    def unreachable(agent: dict[str, Any]) -> None:
        agent["flows"][0]["nodes"].append({"kind": "reply", "id": "orphan", "generate": True})
        node(agent, 0).pop("ask")

    found = issues_of(unreachable)
    assert {(i.code, i.severity) for i in found} == {("unreachable-node", "warning"), ("no-question", "warning")}


def test_a_registered_action_opens_the_state() -> None:
    def code_sets_it(agent: dict[str, Any]) -> None:
        node(agent, 1).update(tool=None, do="lookup", bind=None)
        node(agent, 2)["response"] = {"template": "Status ${state.order_status}"}

    assert issues_of(code_sets_it) == []


def test_routes_see_what_their_own_node_produced() -> None:
    def route_on_own_output(agent: dict[str, Any]) -> None:
        node(agent, 0)["routes"] = [{"when": {"op": "exists", "path": "state.address"}, "to": "book"}]
        node(agent, 1)["routes"] = [{"when": {"op": "exists", "path": "state.tracking_id"}, "to": "done"}]

    assert issues_of(route_on_own_output) == []


def test_a_flow_document_alone_checks_what_it_can() -> None:
    flow = {"flow": copy.deepcopy(AGENT["agent"]["flows"][0])}
    assert validate(flow) == []  # no registry: tool names are not checked
    flow["flow"]["nodes"][1]["tool"] = "nope"
    assert [i.code for i in validate(flow, REGISTRY)] == ["unknown-tool"]
    assert validate({"flows": []})[0].code == "dialect-document"
