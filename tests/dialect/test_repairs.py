"""Structured repair actions on validation issues, in validate(), `tether check --json` and the server."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from tests.dialect.test_validate import AGENT, REGISTRY, issues_of, node, one

from tether.dialect import validate
from tether.errors import DefinitionIssue, RepairAction


def repair_of(mutate: Any, code: str) -> dict[str, Any]:
    issue = one(issues_of(mutate), code)
    assert issue.repair is not None, issue
    return issue.repair.as_dict()


CASES: list[tuple[str, Any, str, dict[str, Any]]] = [
    ("unresolved target", lambda a: node(a, 1).update(next="dne"), "unresolved-transition",
     {"operation": "set-transition", "arguments": {"target_path": "agent.flows.0.nodes.1.next"}, "legal_sources": []}),
    ("missing start", lambda a: a["flows"][0].update(start="nope"), "missing-start",
     {"operation": "set-transition", "arguments": {"target_path": "agent.flows.0.start"}, "legal_sources": []}),
    ("unreachable", lambda a: a["flows"][0]["nodes"].append({"kind": "reply", "id": "orphan", "generate": True}),
     "unreachable-node", {"operation": "remove-node", "arguments": {"node_id": "orphan"}, "legal_sources": []}),
    ("reply both", lambda a: node(a, 2).update(generate=True), "reply-needs-one",
     {"operation": "update-node", "arguments": {"node_id": "done"}, "legal_sources": []}),
    ("mapping source", lambda a: node(a, 1).update(args={"address": {"path": "state.adress"}}), "unknown-source",
     {"operation": "set-mapping-source", "arguments": {"target_path": "agent.flows.0.nodes.1.args.address.path"},
      "legal_sources": ["state.address", "state.email", "state.size", "results.get_address", "input.*",
                        "context.*"]}),
    ("template source", lambda a: node(a, 2).update(response={"template": "Hi ${state.nope}"}), "unknown-source",
     {"operation": "set-template", "arguments": {"target_path": "agent.flows.0.nodes.2.response.template"},
      "legal_sources": ["state.address", "state.email", "state.size", "state.tracking_id", "results.book",
                        "results.get_address", "input.*", "context.*"]}),
    ("predicate source", lambda a: node(a, 2).update(routes=[{"when": {"op": "exists", "path": "state.nope"},
                                                             "to": "done"}]), "unknown-source",
     {"operation": "set-predicate", "arguments": {"target_path": "agent.flows.0.nodes.2.routes.0.when.path"},
      "legal_sources": ["state.address", "state.email", "state.size", "state.tracking_id", "results.book",
                        "results.done", "results.get_address", "input.*", "context.*"]}),
    ("bare placeholder", lambda a: node(a, 2).update(response={"template": "Hi {x}"}), "bare-placeholder",
     {"operation": "set-template", "arguments": {"target_path": "agent.flows.0.nodes.2.response.template"},
      "legal_sources": ["state.address", "state.email", "state.size", "state.tracking_id", "results.book",
                        "results.get_address", "input.*", "context.*"]}),
]


@pytest.mark.parametrize(("family", "mutate", "code", "repair"), CASES, ids=[c[0] for c in CASES])
def test_each_issue_carries_its_repair_action(family: str, mutate: Any, code: str, repair: dict[str, Any]) -> None:
    assert repair_of(mutate, code) == repair


def test_a_flow_level_issue_without_a_node_has_no_repair() -> None:
    issue = one(issues_of(lambda a: a["flows"][0].update(clear_on_start=["sise"])), "unknown-field")
    assert issue.node is None and issue.repair is None


def test_a_repair_names_exactly_one_argument() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RepairAction("update-node")
    with pytest.raises(ValueError, match="exactly one"):
        RepairAction("update-node", node_id="a", target_path="b")
    issue = DefinitionIssue("x", "m", repair=RepairAction("remove-node", node_id="n"))
    assert issue.as_dict()["repair"] == {"operation": "remove-node", "arguments": {"node_id": "n"},
                                         "legal_sources": []}


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
          fields: [email]
          ask: Your email?
        - kind: reply
          id: done
          response: {template: "Thanks ${state.emal}"}
          next: {goto: dnoe}
"""


def test_check_json_lists_every_issue_with_its_line_and_repair(tmp_path: Path) -> None:
    from tests.cli.cli_helpers import tether

    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    done = tether("check", "--json", path)
    assert done.code == 1
    report = json.loads(done.out)
    assert (report["file"], report["ok"], report["errors"], report["warnings"]) == (str(path), False, 2, 0)
    by_code = {i["code"]: i for i in report["issues"]}
    source = by_code["unknown-source"]
    assert source["line"] == 14 and source["node"] == "done" and "did you mean 'email'?" in source["hint"]
    assert source["repair"] == {"operation": "set-template",
                                "arguments": {"target_path": "agent.flows.0.nodes.1.response.template"},
                                "legal_sources": ["state.email", "results.ask", "input.*", "context.*"]}
    assert by_code["unresolved-transition"]["repair"]["operation"] == "set-transition"
    fine = tmp_path / "fine.yaml"
    fine.write_text(BROKEN.replace("emal", "email").replace("dnoe", "done").replace("{goto: done}", "{end: ok}"))
    ok = tether("check", "--json", fine)
    assert ok.code == 0 and json.loads(ok.out)["ok"] is True


def test_check_json_is_refused_for_a_python_app(tmp_path: Path) -> None:
    from tests.cli.cli_helpers import EXAMPLES, tether

    done = tether("check", "--json", EXAMPLES / "shipping.py")
    assert done.code == 2 and "--json is for flow files" in done.err


def test_the_document_validates_clean_without_repairs() -> None:
    assert validate(copy.deepcopy(AGENT), REGISTRY) == []
