"""Every ``validateFlow`` error family and warning of seed 003 (reference falai §1.9), one by one,
each with the code, path and hint a flow file gets for it."""

from __future__ import annotations

from typing import Any

import pytest
from tests.dialect.test_validate import issues_of, node


def flow(agent: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = agent["flows"][0]
    return found


def insert(agent: dict[str, Any], index: int, spec: dict[str, Any]) -> None:
    flow(agent)["nodes"].insert(index, spec)


LOOP = {"kind": "router", "id": "again", "when": {"op": "exists", "path": "state.address"}, "then": "get_address"}

# (seed family, mutation, code, path, hint fragment, severity)
FAMILIES: list[tuple[str, Any, str, str, str, str]] = [
    ("missing flow id", lambda a: flow(a).pop("id"), "dialect-missing", "agent.flows.0.id", "add id", "error"),
    ("missing step id", lambda a: node(a, 2).pop("id"), "dialect-missing", "agent.flows.0.nodes.2.id", "add id",
     "error"),
    ("reserved id end", lambda a: node(a, 2).update(id="end"), "reserved-node-id", "agent.flows.0.nodes.2.id",
     "{end: reason}", "error"),
    ("duplicate step id", lambda a: node(a, 2).update(id="book"), "duplicate-node-id", "agent.flows.0.nodes.2.id",
     "its own id", "error"),
    ("triggers but no steps", lambda a: flow(a).update(nodes=[]), "dialect-too-short", "agent.flows.0.nodes",
     "at least 1", "error"),
    ("trigger naming no kind", lambda a: flow(a)["on"].append({"phrases": ["ship"]}), "dialect-union-tag-not-found",
     "agent.flows.0.on.1", "add kind: one of message, mention, silence, event", "error"),
    ("all-exclusion phrases", lambda a: flow(a)["on"].__setitem__(0, {"kind": "message", "phrases": ["!refund"]}),
     "all-exclusions", "agent.flows.0.on.0.phrases", "add a phrase the trigger matches", "error"),
    ("step that does nothing", lambda a: node(a, 2).pop("response"), "reply-needs-one", "agent.flows.0.nodes.2",
     "generate: true", "error"),
    ("step that does two things", lambda a: node(a, 1).update(do="lookup"), "action-needs-one",
     "agent.flows.0.nodes.1", "tool:", "error"),
    ("kind disagrees with body", lambda a: node(a, 2).update(timer="10m"), "dialect-extra-forbidden",
     "agent.flows.0.nodes.2", "allowed keys:", "error"),
    ("unknown field in a collect", lambda a: node(a, 0).update(fields=["emial"]), "unknown-field",
     "agent.flows.0.nodes.0.fields.0", "did you mean 'email'?", "error"),
    ("unknown field in a clear", lambda a: node(a, 2).update(next={"goto": "get_address", "clear": ["adress"]}),
     "unknown-field", "agent.flows.0.nodes.2.next.clear.0", "did you mean 'address'?", "error"),
    ("unknown field in equals", lambda a: node(a, 2).update(routes=[{"when": {
        "op": "eq", "left": {"path": "state.emial"}, "right": {"literal": "x"}}, "to": "done"}]), "unknown-source",
     "agent.flows.0.nodes.2.routes.0.when.left.path", "did you mean 'email'?", "error"),
    ("unknown field in known", lambda a: node(a, 2).update(routes=[{"when": {
        "op": "exists", "path": "state.emial"}, "to": "done"}]), "unknown-source",
     "agent.flows.0.nodes.2.routes.0.when.path", "did you mean 'email'?", "error"),
    ("unknown tool", lambda a: node(a, 1).update(tool="book_shipmnt"), "unknown-tool", "agent.flows.0.nodes.1.tool",
     "did you mean 'book_shipment'?", "error"),
    ("unknown action", lambda a: node(a, 1).update(tool=None, do="lookp"), "unknown-action",
     "agent.flows.0.nodes.1.do", "did you mean 'lookup'?", "error"),
    ("unknown event", lambda a: insert(a, 2, {"kind": "wait", "id": "w", "event": "paid"}), "unknown-event",
     "agent.flows.0.nodes.2.event", "payment_received", "error"),
    ("unknown condition", lambda a: flow(a)["on"][0].update({"if": {"op": "condition", "name": "vip"}}),
     "unknown-condition", "agent.flows.0.on.0.if.name", "is_vip", "error"),
    ("equals value off-enum", lambda a: node(a, 2).update(routes=[{"when": {
        "op": "eq", "left": {"path": "state.size"}, "right": {"literal": "lage"}}, "to": "done"}]), "off-enum",
     "agent.flows.0.nodes.2.routes.0.when", "did you mean 'large'?", "error"),
    ("equals value of the wrong type", lambda a: node(a, 2).update(routes=[{"when": {
        "op": "eq", "left": {"path": "state.email"}, "right": {"literal": 3}}, "to": "done"}]), "wrong-type",
     "agent.flows.0.nodes.2.routes.0.when", "write a string literal", "error"),
    ("unparseable duration", lambda a: flow(a)["on"].append({"kind": "silence", "after": "soon"}), "bad-duration",
     "agent.flows.0.on.1.after", "30s, 10m", "error"),
    ("dangling jump target", lambda a: node(a, 1).update(next="dne"), "unresolved-transition",
     "agent.flows.0.nodes.1.next", "did you mean 'done'?", "error"),
    ("missing action parameter", lambda a: node(a, 1).update(args={}), "missing-argument",
     "agent.flows.0.nodes.1.args", "add address:", "error"),
    ("wrong-type action parameter", lambda a: node(a, 1).update(args={"address": {"value": 12}}),
     "wrong-argument-type", "agent.flows.0.nodes.1.args.address.value", "not coerced", "error"),
    ("extra action parameter", lambda a: node(a, 1)["args"].update(adress={"value": "x"}), "unknown-argument",
     "agent.flows.0.nodes.1.args.adress", "did you mean 'address'?", "error"),
    ("unknown field in a per-field ask", lambda a: node(a, 0).update(ask={"adress": "Where to?"}), "unknown-field",
     "agent.flows.0.nodes.0.ask.adress", "did you mean 'address'?", "error"),
    ("branch with neither when nor if", lambda a: node(a, 0).update(branches=[{"then": "done"}]),
     "branch-needs-one", "agent.flows.0.nodes.0.branches.0", "when: <text the model judges", "error"),
    ("backward if with no else", lambda a: insert(a, 2, dict(LOOP)), "backward-router-without-else",
     "agent.flows.0.nodes.2", "add else:", "error"),
    ("question on a step that collects nothing", lambda a: node(a, 0).pop("schema"), "collect-nothing",
     "agent.flows.0.nodes.0", "fields:", "error"),
    ("non-list shape", lambda a: node(a, 0).update(fields="email"), "dialect-list-type",
     "agent.flows.0.nodes.0.fields", "write a list", "error"),
    ("non-text shape", lambda a: node(a, 0).update(ask=3), "dialect-string-type", "agent.flows.0.nodes.0.ask",
     "write text", "error"),
    ("off-enum shape", lambda a: node(a, 2).update(context="rest"), "dialect-literal-error",
     "agent.flows.0.nodes.2.context", "did you mean 'reset'?", "error"),
    ("bad repeat", lambda a: flow(a)["on"][0].update(repeat="sometimes"), "dialect-literal-error",
     "agent.flows.0.on.0.repeat", "once, always or {cooldown: 1h}", "error"),
    ("bad maxAsks", lambda a: node(a, 0).update(max_asks=0), "dialect-greater-than-equal",
     "agent.flows.0.nodes.0.max_asks", "at least 1", "error"),
    ("event wait with no event", lambda a: insert(a, 2, {"kind": "wait", "id": "w"}), "wait-needs-one",
     "agent.flows.0.nodes.2", "event: <name>", "error"),
    ("when branch on a wait step", lambda a: insert(a, 2, {"kind": "wait", "id": "w", "timer": "1m", "branches": [
        {"when": "they cancel", "then": "done"}]}), "dialect-extra-forbidden", "agent.flows.0.nodes.2",
     "allowed keys:", "error"),
    ("literal flow to an unknown flow", lambda a: node(a, 2).update(next={"start_flow": "othr"}), "unknown-flow",
     "agent.flows.0.nodes.2.next.start_flow", "did you mean 'other'?", "error"),
    # warnings
    ("backward jump without clear", lambda a: insert(a, 2, {**LOOP, "else": "done"}), "backward-jump-without-clear",
     "agent.flows.0.nodes.2.then", "clear: [address]", "warning"),
    ("collect step with no prompt and no ask", lambda a: node(a, 0).pop("ask"), "no-question",
     "agent.flows.0.nodes.0", "add ask", "warning"),
    ("flow collect field that no step asks", lambda a: (a["fields"].update(vip={"type": "boolean"}),
                                                       flow(a).update(collect=["vip"])), "field-never-asked",
     "agent.flows.0.collect.0", "fields: [vip]", "warning"),
]


@pytest.mark.parametrize(("family", "mutate", "code", "path", "hint", "severity"), FAMILIES,
                         ids=[f[0] for f in FAMILIES])
def test_every_seed_family_has_its_code_path_and_hint(family: str, mutate: Any, code: str, path: str, hint: str,
                                                      severity: str) -> None:
    found = [i for i in issues_of(mutate) if i.code == code]
    assert found, issues_of(mutate)
    assert (found[0].path, found[0].severity) == (path, severity)
    assert found[0].hint is not None and hint in found[0].hint, found[0].hint


def test_a_backward_jump_that_clears_is_not_warned() -> None:
    def clears(agent: dict[str, Any]) -> None:
        insert(agent, 2, {**LOOP, "then": {"goto": "get_address", "clear": ["address"]}, "else": "done"})

    assert [i.code for i in issues_of(clears)] == []
