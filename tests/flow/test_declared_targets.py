"""``targets=[...]`` on a node whose transition is made in code: checked when the flow is built and
followed by the reachability check."""

from __future__ import annotations

import pytest

from tether import Agent, Flow, FlowDefinitionError, action, end, goto, reply, start_flow


def pick(state, ctx):  # type: ignore[no-untyped-def]
    return goto("yes")


def test_a_declared_target_must_exist() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        Flow("f", nodes=[action("pick", pick, targets=["yes", "nope"]), reply("yes", response="y", next=end())])
    assert [(i.code, i.node, i.path) for i in caught.value.issues] == [
        ("unresolved-transition", "pick", "nodes.0.targets.1")]


def test_targets_on_a_node_with_a_static_next_are_refused() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        Flow("f", nodes=[reply("a", response="a", next="b", targets=["b"]), reply("b", response="b", next=end())])
    assert [(i.code, i.path) for i in caught.value.issues] == [("invalid-option", "nodes.0.targets")]


def test_reachability_follows_the_declared_targets() -> None:
    nodes = [action("pick", pick, then=end(), targets=["yes"]), reply("yes", response="y", next=end()),
             reply("no", response="n", next=end())]
    with pytest.raises(FlowDefinitionError) as caught:
        Flow("f", nodes=nodes)
    assert [(i.code, i.node) for i in caught.value.issues] == [("unreachable-node", "no")]
    # without targets, code could go anywhere: nothing is unreachable
    Flow("f", nodes=[action("pick", pick, then=end()), *nodes[1:]])


def test_a_declared_start_flow_must_name_a_flow_of_the_agent() -> None:
    flow = Flow("f", nodes=[action("pick", pick, targets=[start_flow("ghost")]), reply("yes", response="y")])
    with pytest.raises(FlowDefinitionError) as caught:
        Agent("A", flows=[flow])
    assert [(i.code, i.path) for i in caught.value.issues] == [("unknown-flow", "targets.0")]


def test_declaring_targets_changes_no_digest_of_a_flow_without_them() -> None:
    plain = Flow("f", nodes=[action("pick", pick), reply("yes", response="y")])
    assert "targets" not in plain.nodes[0].describe()
    declared = Flow("f", nodes=[action("pick", pick, targets=["yes"]), reply("yes", response="y")])
    assert declared.digest != plain.digest
