"""Workflow definitions: the strict v2 contract, its error paths, loading, v1, the JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from workflow_helpers import definition, fn, node

from tether.errors import FlowDefinitionError, WorkflowDefinitionError
from tether.workflow import (
    check_node,
    compile_expression,
    edge,
    function_node,
    load_workflow,
    new_snapshot,
    normalize_v1,
    router_node,
    workflow,
    workflow_json_schema,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "schemas" / "workflow.v2.schema.json"


def problems(data: Any) -> list[str]:
    with pytest.raises(WorkflowDefinitionError) as info:
        load_workflow(data)
    return [f"{issue.path}: {issue.message}" for issue in info.value.issues]


def test_unknown_top_level_key_is_reported_at_root() -> None:
    found = problems(definition([fn("a")], whoops=1))
    assert found == ['<root>: Unrecognized key: "whoops"']


def test_error_message_lists_path_lines_and_is_a_flow_definition_error() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        load_workflow(definition([fn("a")], whoops=1))
    assert str(info.value) == '<root>: Unrecognized key: "whoops"'
    assert info.value.code == "workflow-extra-forbidden"


def test_unknown_run_kind_names_the_seven_kinds() -> None:
    found = problems(definition([node("a", {"kind": "script", "command": "x"})]))
    assert found == [
        "nodes.0.run: Invalid discriminator value. Expected 'agent' | 'subprompt' | 'function' | 'check' | "
        "'gate' | 'router' | 'sub-flow'"
    ]


def test_model_on_a_non_model_kind_is_an_unrecognized_key() -> None:
    found = problems(definition([fn("a"), node("b", {"kind": "function", "command": "x", "model": "small"})]))
    assert found == ['nodes.1.run: Unrecognized key: "model"']
    ok = load_workflow(definition([node("a", {"kind": "subprompt", "instruction": "sum up", "model": "small"})]))
    assert ok.nodes["a"].run.kind == "subprompt"


def test_missing_and_nested_errors_carry_dot_paths() -> None:
    found = problems(definition([
        node("a", {"kind": "function"}),
        node("g", {"kind": "gate", "prompt": "ok?", "schema": {"kind": "slider"}}),
        node("c", {"kind": "check", "command": "x", "onFail": "ignore"}),
    ]))
    assert "nodes.0.run.command: Required" in found
    assert "nodes.1.run.schema: Invalid discriminator value. Expected 'text' | 'choice' | 'form' | 'file'" in found
    assert any(line.startswith("nodes.2.run.onFail: ") for line in found)


def test_required_top_level_keys() -> None:
    data = definition([fn("a")])
    del data["edges"], data["version"]
    assert problems(data) == ["version: Required", "edges: Required"]


def test_a_check_cannot_be_optional() -> None:
    found = problems(definition([node("c", {"kind": "check", "command": "true"}, control={"optional": True})]))
    assert found == ["nodes.0.control.optional: A check cannot be optional"]


def test_a_cycle_is_refused_at_its_closing_edge() -> None:
    found = problems(definition([fn("a"), fn("b"), fn("c"), fn("d")], [("a", "b"), ("b", "c"), ("c", "d"),
                                                                        ("d", "b")]))
    assert found == ["edges.3: flow graph must be acyclic (this edge closes b -> c -> d -> b)"]


def test_graph_problems_are_all_reported() -> None:
    data = definition([
        fn("a"), fn("a"),
        node("r", {"kind": "router", "routes": [{"when": "default", "target": None},
                                                 {"when": "true", "target": "ghost"}]}),
    ], [("a", "zz")], entry="nowhere")
    found = problems(data)
    assert 'nodes.1.id: Duplicate node id "a"' in found
    assert "nodes.2.run.routes.0.when: The default route must be the last route" in found
    assert 'nodes.2.run.routes.1.target: Unknown node "ghost"' in found
    assert 'edges.0.target: Unknown node "zz"' in found
    assert 'entry: Unknown node "nowhere"' in found


@pytest.mark.parametrize(("expr", "refusal"), [
    ("size(input.items) > 1", "function calls are not allowed"),
    ("input.items.exists(x, x > 1)", "function calls are not allowed"),
    ("has(input.tier)", "function calls are not allowed"),
    ("input.__class__ == 1", "attribute '__class__' is not allowed"),
    ("input.constructor", "attribute 'constructor' is not allowed"),
    ("os.environ == 1", "unknown name 'os'"),
    ("nodes[input.which].status == 'complete'", r"nodes\[\.\.\.\] takes a string literal node id"),
    ("nodes['nope'].status == 'complete'", "unknown node 'nope'"),
    ("input.tier ==", "invalid expression"),
])
def test_bounded_expressions_refuse_calls_escapes_and_unknown_names(expr: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        compile_expression(expr, {"build", "run-tests"})


def test_bounded_expression_reads_are_known_statically() -> None:
    expr = compile_expression("build.output.fields.ok && nodes['run-tests'].status == 'complete' "
                              "&& input.tier in ['max']", {"build", "run-tests"})
    assert expr.reads_nodes == {"build", "run-tests"} and expr.reads_input and not expr.reads_defaults


def test_bad_expressions_in_a_definition_are_pathed() -> None:
    data = definition([fn("a", contract={"requires": [{"expr": "size(input) > 0"}],
                                         "input": {"X": "${a.output.fields.x}", "Y": "${__import__}"}})])
    found = problems(data)
    assert any(line.startswith("nodes.0.contract.requires.0.expr: ") and "function calls" in line for line in found)
    assert any(line.startswith("nodes.0.contract.input.Y: ") for line in found)


def test_a_node_cannot_read_its_own_output() -> None:
    found = problems(definition([fn("a", contract={"input": {"X": "${a.output.fields.x}"}})]))
    assert found == ["nodes.0.contract: A node cannot read its own output"]


def test_binding_names_must_be_environment_names() -> None:
    found = problems(definition([fn("a", contract={"input": {"not-env": 1}})]))
    assert found == ["nodes.0.contract.input.not-env: is not a valid environment variable name"]


YAML_TEXT = """
schemaVersion: 2
id: hello
version: "1"
name: Hello
input: {who: world}
nodes:
  - id: greet
    label: Greet
    description: say hello
    run: {kind: function, command: "echo hello $WHO", capture: {stdout: fields.greeting}}
    contract: {input: {WHO: "${input.who}"}}
edges: []
"""


def test_yaml_json_and_python_definitions_are_the_same_workflow() -> None:
    from_yaml = load_workflow(YAML_TEXT).workflow
    from_json = load_workflow(json.dumps(yaml.safe_load(YAML_TEXT)), "json").workflow
    built = workflow("hello", name="Hello", input={"who": "world"}, edges=[], nodes=[
        function_node("greet", "echo hello $WHO", label="Greet", description="say hello", stdout="greeting",
                      inputs={"WHO": "${input.who}"}),
    ])
    assert from_yaml == from_json == built
    assert load_workflow(built.to_dict()).workflow == built


def test_the_older_raw_dict_forms_still_build_the_same_node_and_warn() -> None:
    forms = r"node 'greet': run=\{...\}, contract=\{...\}, control=\{...\} is deprecated; use keywords"
    with pytest.warns(DeprecationWarning, match=forms):
        old = function_node("greet", "echo hello $WHO", run={"capture": {"stdout": "fields.greeting"}},
                            contract={"input": {"WHO": "${input.who}"}}, control={"timeoutSec": 30})
    assert old == function_node("greet", "echo hello $WHO", stdout="greeting", inputs={"WHO": "${input.who}"},
                                timeout="30s")


def test_builders_take_keywords_for_every_part_of_a_node() -> None:
    check = check_node("lint", ["ruff", "check"], on_fail="fail", timeout="2m", retries=2, cwd="src",
                       requires=["input.strict", ("input.tier != 'none'", "a tier is needed")],
                       output={"type": "object"}, approval="optional", phase="verify", label="Lint")
    assert check.run.on_fail == "fail" and check.run.command == ["ruff", "check"] and check.run.cwd == "src"
    assert check.control.timeout_sec == 120 and check.control.retries == 2 and check.phase == "verify"
    assert [(g.expr, g.message) for g in check.contract.requires] == [("input.strict", None),
                                                                      ("input.tier != 'none'", "a tier is needed")]
    assert check.contract.output is not None and check.contract.output.fields == {"type": "object"}
    assert check.gate.approval == "optional" and check.label == "Lint" and check.description == "Lint"
    assert function_node("f", "true", timeout=1.5, parallel_group="g").control.parallel_group == "g"
    with pytest.raises(TypeError, match=r"node 'f': unknown keyword\(s\) \['timout'\]"):
        function_node("f", "true", timout="1s")
    with pytest.raises(ValueError, match="'soon' is not a duration"):
        function_node("f", "true", timeout="soon")


def test_a_built_graph_is_checked_when_it_is_built() -> None:
    with pytest.raises(WorkflowDefinitionError, match="A check cannot be optional"):
        workflow("w", nodes=[check_node("c", "true", optional=True)], edges=[])
    with pytest.raises(WorkflowDefinitionError, match="nowhere"):
        workflow("w", nodes=[router_node("r", [("input.x", "nowhere")])], edges=[])


def test_syntax_errors_are_definition_errors() -> None:
    with pytest.raises(WorkflowDefinitionError, match="not valid YAML"):
        load_workflow("nodes: [unclosed")
    with pytest.raises(WorkflowDefinitionError, match="must be an object"):
        load_workflow("- a list")


def test_edge_builder_defaults_to_a_flow_edge() -> None:
    assert edge("a", "b").model_dump() == {"id": "a->b", "source": "a", "target": "b", "type": "flow"}


LEGACY = {
    "id": "legacy",
    "name": "Legacy",
    "globals": {"approval_mode": "checkpoint", "research_depth": "deep", "subagent_mode": "x", "team": "ops"},
    "metadata": {"category": "ops"},
    "requires": ["skill:lint"],
    "nodes": [
        {"id": "plan", "type": "skill", "description": "Plan the ${team} work",
         "data": {"skill": "planner", "parameters": {"depth": "${research_depth}"}, "approval": {"mandatory": True},
                  "subagent": True}, "parallel_group": "p1"},
        {"id": "child", "type": "sub-flow", "data": {"flow": "deploy", "pass_context": True}, "optional": True},
        {"id": "pick", "type": "router", "data": {"routes": []}},
        {"id": "after", "type": "skill", "data": {"skill": "writer", "parameters": {"instructions": "Write"}}},
    ],
    "edges": [{"source": "plan", "target": "child"}, {"id": "hard", "source": "pick", "target": "after",
                                                      "type": "flow"}],
}


def test_v1_definitions_are_normalised() -> None:
    v2 = normalize_v1(LEGACY)
    assert v2["defaults"] == {"approval": "checkpoint", "researchDepth": "deep", "parameters": {"team": "ops"}}
    assert v2["meta"] == {"category": "ops"}
    plan, child, pick, after = v2["nodes"]
    assert plan["run"] == {"kind": "agent", "instruction": "Plan the ${defaults.parameters.team} work",
                           "assets": ["skill:planner", "skill:lint"]}
    assert plan["contract"] == {"input": {"depth": "${defaults.researchDepth}"}}
    assert plan["gate"] == {"approval": "mandatory"} and plan["control"] == {"parallelGroup": "p1"}
    assert child["run"] == {"kind": "sub-flow", "flow": "deploy", "assets": ["flow:deploy"], "passContext": True}
    assert child["control"] == {"optional": True}
    assert pick["run"]["kind"] == "router" and pick["contract"]["requires"][0]["expr"] == "false"
    assert pick["control"] == {"optional": True}
    assert after["run"]["instruction"] == "Write"
    assert v2["edges"] == [
        {"id": "e0-plan-child", "source": "plan", "target": "child", "type": "optional"},
        {"id": "hard", "source": "pick", "target": "after", "type": "flow"},
    ]


def test_a_v1_placeholder_never_becomes_available_and_keeps_blocking() -> None:
    graph = load_workflow(LEGACY)  # no schemaVersion: normalised, then parsed strictly
    snapshot = new_snapshot(graph, "r1")
    assert snapshot.nodes["pick"].status == "pending"
    assert snapshot.nodes["pick"].failed_conditions == ["legacy router node (inert)"]
    assert snapshot.nodes["after"].status == "pending" and snapshot.nodes["after"].blocked_by == ["pick"]


def test_v1_modes_fail_the_strict_parse_after_normalising() -> None:
    with pytest.raises(WorkflowDefinitionError):
        load_workflow({"schemaVersion": 2, **normalize_v1(LEGACY), "modes": ["fast"]})


def test_the_json_schema_is_generated_and_published() -> None:
    schema = workflow_json_schema()
    assert json.loads(SCHEMA_FILE.read_text()) == schema, (
        "schemas/workflow.v2.schema.json is stale: regenerate it with "
        "`tether workflow schema > schemas/workflow.v2.schema.json`"
    )
    validator = jsonschema.Draft202012Validator(schema)
    release = yaml.safe_load((ROOT / "examples" / "release.yaml").read_text())
    assert list(validator.iter_errors(release)) == []
    bad = definition([node("a", {"kind": "function", "command": "x", "model": "small"})])
    assert list(validator.iter_errors(bad))


def test_a_workflow_file_may_use_snake_case_keys() -> None:
    camel = load_workflow(YAML_TEXT).workflow
    snake = YAML_TEXT.replace("schemaVersion", "schema_version")
    assert "schema_version: 2" in snake
    assert load_workflow(snake).workflow == camel
    timed = definition([fn("a", run={"success_exit": [0, 3]}, control={"timeout_sec": 5, "parallel_group": "g"})])
    node = load_workflow(timed).workflow.nodes[0]
    assert node.control.timeout_sec == 5 and node.run.success_exit == [0, 3]  # type: ignore[union-attr]
