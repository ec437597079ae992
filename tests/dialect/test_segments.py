"""Segments (seed 000): which chains of ``generate: true`` replies a flow file batches, found when
the file is built. The cap of 8 members, no revisits, every boundary, the suffix index, the cap of
32 chains; Python flows have none; the digest and to_spec do not see them."""

from __future__ import annotations

from typing import Any

import pytest

from tether import reply
from tether.dialect import canonical, to_spec
from tether.dialect.build import build_flow
from tether.dialect.segments import MAX_CHAINS, MAX_MEMBERS, find_segments
from tether.dialect.spec import FlowFile, FlowSpec
from tether.flow import Flow


def gen(node_id: str, next_: Any = None, **options: Any) -> dict[str, Any]:
    node = {"kind": "reply", "id": node_id, "generate": True, "instructions": f"Say {node_id}.", **options}
    if next_ is not None:
        node["next"] = next_
    return node


def spec(*nodes: dict[str, Any], **options: Any) -> FlowSpec:
    return FlowFile.model_validate({"flow": {"id": "f", "nodes": list(nodes), **options}}).flow


def path(count: int, prefix: str = "n") -> list[dict[str, Any]]:
    """``count`` generate replies, each going to the next by id; the last ends."""
    ids = [f"{prefix}{i}" for i in range(count)]
    return [gen(node_id, ids[i + 1] if i + 1 < count else {"end": "done"}) for i, node_id in enumerate(ids)]


def test_three_chained_replies_are_one_segment_indexed_by_every_suffix() -> None:
    found = find_segments(spec(gen("a", "b"), gen("b", {"goto": "c"}), gen("c", {"end": "done"})))
    assert found == {"a": ("a", "b", "c"), "b": ("b", "c")}  # a one-node suffix is no batch


def test_next_in_declaration_order_is_unconditional() -> None:
    found = find_segments(spec(gen("a", "next"), gen("b", "next"), gen("c")))
    assert found == {"a": ("a", "b", "c"), "b": ("b", "c")}


def test_a_chain_has_at_most_eight_members_and_the_rest_is_its_own_chain() -> None:
    found = find_segments(spec(*path(11)))
    assert MAX_MEMBERS == 8
    assert found["n0"] == tuple(f"n{i}" for i in range(8))
    assert found["n8"] == ("n8", "n9", "n10")
    assert all(len(members) <= MAX_MEMBERS for members in found.values())
    assert "n7" not in found  # n7 ends its chain: the cap is where the batch stops


def test_a_cycle_is_never_revisited() -> None:
    found = find_segments(spec(gen("a", "b"), gen("b", "c"), gen("c", {"goto": "a"})))
    assert found == {"a": ("a", "b", "c"), "b": ("b", "c")}


def test_a_reply_going_to_itself_is_no_chain() -> None:
    assert find_segments(spec(gen("a", "a"))) == {}


@pytest.mark.parametrize("boundary", [
    {"kind": "reply", "id": "b", "response": {"template": "Fixed."}, "next": "c"},
    {"kind": "collect", "id": "b", "fields": [], "schema": {"type": "object", "properties": {"x": {"type": "string"}}},
     "next": "c"},
    {"kind": "decide", "id": "b", "otherwise": "c"},
    {"kind": "action", "id": "b", "do": "noop", "next": "c"},
    {"kind": "action", "id": "b", "do": "noop", "approval": True, "next": "c"},
    {"kind": "router", "id": "b", "when": {"op": "truthy", "value": {"literal": True}}, "then": "c"},
    gen("b", "c", routes=[{"when": {"op": "exists", "path": "state.x"}, "to": "c"}]),
    gen("b", "c", instructions="Thank ${state.name}."),
], ids=["template-reply", "collect", "decide", "action", "approval-action", "router", "routes", "interpolating"])
def test_boundaries_split_chains(boundary: dict[str, Any]) -> None:
    found = find_segments(spec(gen("a0", "a"), gen("a", "b"), boundary, gen("c", "d"), gen("d", {"end": "x"})))
    assert found == {"a0": ("a0", "a"), "c": ("c", "d")}


@pytest.mark.parametrize("transition", [
    {"goto": "b", "data": {"seen": {"value": True}}},
    {"goto": "b", "clear": ["seen"]},
    "stay",
    {"end": "done"},
    {"handoff": "human"},
], ids=["goto-with-data", "goto-with-clear", "stay", "end", "handoff"])
def test_only_an_unconditional_goto_without_data_links_two_replies(transition: Any) -> None:
    assert find_segments(spec(gen("a", transition), gen("b", {"end": "done"}))) == {}


def test_a_reply_with_no_next_stays_and_ends_the_chain() -> None:
    assert find_segments(spec(gen("a", "b"), gen("b"), gen("c", "a"))) == {"c": ("c", "a", "b"), "a": ("a", "b")}


def test_a_merge_point_is_indexed_once() -> None:
    found = find_segments(spec(gen("x", "m"), gen("y", "m"), gen("m", "n"), gen("n", {"end": "done"})))
    assert found == {"x": ("x", "m", "n"), "y": ("y", "m", "n"), "m": ("m", "n")}


def test_at_most_thirty_two_chains_are_kept() -> None:
    nodes = [node for k in range(40) for node in path(2, prefix=f"c{k}_")]
    found = find_segments(spec(*nodes))
    assert MAX_CHAINS == 32
    assert set(found) == {f"c{k}_0" for k in range(32)}  # the first 32, in declaration order


def test_the_built_flow_carries_its_segments_outside_digest_and_to_spec() -> None:
    parsed = spec(gen("a", "b"), gen("b", {"end": "done"}))
    flow = build_flow(parsed)
    assert flow.segments == {"a": ("a", "b")}
    assert to_spec(flow) == canonical(parsed.model_dump(mode="json", by_alias=True))
    unbatched = build_flow(parsed)
    unbatched.segments = {}
    assert flow.digest == unbatched.digest == build_flow(FlowSpec.model_validate(to_spec(flow))).digest


def test_python_flows_have_no_segments() -> None:
    flow = Flow("f", nodes=[reply("a", instructions="Say a.", next="b"), reply("b", instructions="Say b.")])
    assert flow.segments == {}
