"""Property (issue 16): over random flow graphs, every invalid graph is refused when it is built
with a coded FlowDefinitionError (never a KeyError, AttributeError, ...), and every valid one
builds, draws its diagram and runs.

The generator mixes node kinds, ids (good, duplicated, reserved, empty, not a string) and every
kind of static target (ids known and unknown, reserved words, registered nodes, impostor nodes
with a registered id, ``goto(...)`` of all of those, thunks, the seed's mapping forms, transition
objects and values of the wrong type). An oracle, written from the rules of seed 000 and kuralle
§1.5 rather than from the implementation, says which issue codes the graph must raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from tether import (
    NEXT,
    Agent,
    Flow,
    FlowDefinitionError,
    Message,
    Start,
    action,
    collect,
    decide,
    end,
    escalate,
    goto,
    handoff,
    reply,
    router,
    start_flow,
    stay,
    wait,
)
from tether.flow.nodes import Node
from tether.testing import FakeClock, SequentialIds

IDS = ["a", "b", "c", "d"]
RESERVED = ("end", "stay")
CODES = {"duplicate-node-id", "invalid-node-id", "reserved-node-id", "unresolved-transition",
         "inline-transition-target", "missing-start", "unreachable-node"}


class Slot(BaseModel):
    value: str


@dataclass(frozen=True)
class NodeSpec:
    kind: str  # reply | reply_fn | action | router | collect | collect_fn | wait | decide
    id: Any
    targets: tuple[Any, ...]  # target tokens, one per static slot of the kind


SLOTS = {"reply": 1, "reply_fn": 0, "action": 1, "router": 2, "collect": 1, "collect_fn": 0, "wait": 1, "decide": 0}
node_ids = st.one_of(st.sampled_from(IDS), st.sampled_from(["end", "stay", "", " "]), st.just(42))
target_tokens = st.one_of(
    st.tuples(st.just("id"), st.sampled_from([*IDS, "zz"])),
    st.tuples(st.just("word"), st.sampled_from(RESERVED)),
    st.tuples(st.just("node"), st.integers(0, 5)),
    st.tuples(st.just("impostor"), st.sampled_from(IDS)),
    st.tuples(st.just("goto_id"), st.sampled_from([*IDS, "zz", *RESERVED])),
    st.tuples(st.just("goto_node"), st.integers(0, 5)),
    st.tuples(st.just("goto_impostor"), st.sampled_from(IDS)),
    st.tuples(st.just("thunk"), st.integers(0, 5)),
    st.tuples(st.just("function"), st.just(0)),
    st.tuples(st.just("mapping"), st.sampled_from([*IDS, "zz", "end"])),
    st.tuples(st.just("bad_mapping"), st.sampled_from([0, 1])),
    st.tuples(st.just("move"), st.sampled_from(["next", "end", "stay", "handoff", "escalate", "flow", "flow42"])),
    st.tuples(st.just("wrong"), st.sampled_from([0, 1, 2, 3])),
    st.tuples(st.just("none"), st.just(0)),
)


@st.composite
def node_specs(draw: st.DrawFn) -> NodeSpec:
    kind = draw(st.sampled_from(sorted(SLOTS)))
    return NodeSpec(kind, draw(node_ids), tuple(draw(target_tokens) for _ in range(SLOTS[kind])))


start_tokens = st.one_of(st.just(("default", 0)), st.tuples(st.just("node"), st.integers(0, 5)),
                         st.tuples(st.just("impostor"), st.sampled_from(IDS)), st.just(("thunk", 0)),
                         st.just(("wrong", 0)))
graphs = st.tuples(st.lists(node_specs(), min_size=1, max_size=5), start_tokens)


def _fn(turn: Any, state: Any) -> Any:
    return end("by-code")


def _run(state: Any, ctx: Any) -> Any:
    return None


def _when(run: Any) -> bool:
    return True


def _build_node(spec: NodeSpec) -> Node:
    if spec.kind in ("reply", "reply_fn"):
        return reply(spec.id, response="said", next=_fn if spec.kind == "reply_fn" else None)
    if spec.kind == "action":
        return action(spec.id, _run)
    if spec.kind == "router":
        return router(spec.id, when=_when)
    if spec.kind in ("collect", "collect_fn"):
        return collect(spec.id, schema=Slot, on_complete=(lambda data, state: end()) if spec.kind == "collect_fn"
                       else None)
    if spec.kind == "decide":
        return decide(spec.id, choices=["yes", "no"], prompt="Sure?", decide=lambda data, state: end(data.choice))
    return wait(spec.id, timer="5m")


WRONG = [42, 4.5, ["a"], object()]


def _materialise(token: Any, nodes: list[Node]) -> Any:
    tag, arg = token
    if tag in ("id", "word"):
        return arg
    if tag == "node":
        return nodes[arg % len(nodes)]
    if tag == "impostor":
        return reply(arg, response="impostor")
    if tag == "goto_id":
        return goto(arg)
    if tag == "goto_node":
        node = nodes[arg % len(nodes)]
        return goto(node) if isinstance(node.id, str) and node.id else 42  # goto() itself refuses an id-less node
    if tag == "goto_impostor":
        return goto(reply(arg, response="impostor"))
    if tag == "thunk":
        target = nodes[arg % len(nodes)]
        return lambda: target
    if tag == "function":
        return lambda turn, state: end()
    if tag == "mapping":
        return {"end": "mapped"} if arg == "end" else {"goto": arg}
    if tag == "bad_mapping":
        return [{}, {"goto": 3}][arg]
    if tag == "move":
        return {"next": NEXT, "end": end("done"), "stay": stay, "handoff": handoff("billing"),
                "escalate": escalate("help"), "flow": start_flow("other"), "flow42": start_flow(42)}[arg]
    if tag == "wrong":
        return WRONG[arg]
    return None


SLOT_OPTIONS = {"reply": ("next",), "action": ("then",), "router": ("then", "else_"), "collect": ("on_complete",),
                "wait": ("then",)}


def build_graph(specs: list[NodeSpec], start_token: Any) -> tuple[list[Node], Any, list[Any]]:
    nodes = [_build_node(spec) for spec in specs]
    targets: list[Any] = []
    for spec, node in zip(specs, nodes, strict=True):
        values = []
        for option, token in zip(SLOT_OPTIONS.get(spec.kind, ()), spec.targets, strict=False):
            value = _materialise(token, nodes)
            setattr(node, option, value)
            values.append(value)
        targets.append(values)
    tag, arg = start_token
    start: Any = {"default": None, "node": nodes[arg % len(nodes)] if tag == "node" else None,
                  "impostor": reply(arg, response="impostor") if tag == "impostor" else None,
                  "thunk": (lambda: nodes[0]), "wrong": 42}[tag]
    return nodes, start, targets


# --------------------------------------------------------------------------- the oracle


def expected_codes(specs: list[NodeSpec], nodes: list[Node], start: Any, targets: list[list[Any]]) -> set[str]:
    """The issue codes the rules demand for this graph (empty: the graph is valid)."""
    codes: set[str] = set()
    registered: dict[Any, Node] = {}
    for node in nodes:
        if node.id in registered:
            codes.add("duplicate-node-id")
        registered.setdefault(node.id, node)
        if not isinstance(node.id, str) or not node.id.strip():
            codes.add("invalid-node-id")
        elif node.id in RESERVED:
            codes.add("reserved-node-id")

    def is_member(obj: Any) -> bool:
        return isinstance(obj, Node) and registered.get(obj.id) is obj

    def names_node(node_id: Any) -> bool:
        return isinstance(node_id, str) and node_id not in RESERVED and node_id in registered

    def check(kind: str, value: Any) -> str | None:
        function_slot = kind in ("reply", "collect")
        if value is None:
            return None if function_slot else "unresolved-transition"
        if isinstance(value, str):
            return None if value in RESERVED or value in registered else "unresolved-transition"
        if isinstance(value, Node):
            return None if is_member(value) else "inline-transition-target"
        if callable(value) and not isinstance(value, Node):
            if function_slot and value.__code__.co_argcount == 2:
                return None
            return "inline-transition-target"
        if isinstance(value, dict):
            if "end" in value:
                return None
            return None if names_node(value.get("goto")) else "unresolved-transition"
        kind_name = type(value).__name__
        if kind_name == "Goto":
            if value.node is not None:
                return None if is_member(value.node) else "inline-transition-target"
            return None if names_node(value.target) else "unresolved-transition"
        if kind_name == "StartFlow":
            return None if isinstance(value.flow, str) else "unresolved-transition"
        if kind_name in ("Next", "End", "Stay", "Handoff", "Escalate"):
            return None
        return "unresolved-transition"

    for spec, values in zip(specs, targets, strict=True):
        base = spec.kind.removesuffix("_fn")
        for value in values:
            problem = check(base, value)
            if problem:
                codes.add(problem)
    if start is None:
        start = nodes[0]
    if callable(start) and not isinstance(start, Node):
        codes.add("inline-transition-target")
    elif not is_member(start):
        codes.add("missing-start")
    if codes:
        return codes
    return {"unreachable-node"} if _unreachable(nodes, start, targets, specs) else set()


def _unreachable(nodes: list[Node], start: Node, targets: list[list[Any]], specs: list[NodeSpec]) -> bool:
    by_id = {n.id: n for n in nodes}
    index = {id(n): i for i, n in enumerate(nodes)}
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        i = index[id(node)]
        spec = specs[i]
        if spec.kind in ("action", "reply_fn", "collect_fn", "decide") or any(
                callable(v) and not isinstance(v, Node) for v in targets[i]):
            return False  # code decides where it goes: anything may be reached
        values = list(targets[i])
        if spec.kind == "collect" and values == [None]:
            values = [NEXT]
        for value in values:
            name = type(value).__name__
            if name == "Next" and i + 1 < len(nodes):
                todo.append(nodes[i + 1])
            elif isinstance(value, str) and value in by_id:
                todo.append(by_id[value])
            elif isinstance(value, Node):
                todo.append(value)
            elif name == "Goto":
                todo.append(by_id[value.target])
            elif isinstance(value, dict) and "goto" in value:
                todo.append(by_id[value["goto"]])
    return len(seen) < len(by_id)


# --------------------------------------------------------------------------- the property


@given(graphs)
def test_invalid_graphs_are_refused_with_codes_and_valid_graphs_build(graph: Any) -> None:
    specs, start_token = graph
    nodes, start, targets = build_graph(specs, start_token)
    expected = expected_codes(specs, nodes, start, targets)
    try:
        flow = Flow("f", start=start, nodes=nodes)
    except FlowDefinitionError as exc:
        raised = {issue.code for issue in exc.issues}
        assert raised == expected, f"expected {sorted(expected)}, raised: {exc}"
        assert all(issue.flow == "f" for issue in exc.issues)
        return
    assert expected == set(), f"built a graph the rules refuse ({sorted(expected)})"
    assert flow.to_mermaid().startswith("flowchart TD")


@given(graphs)
async def test_valid_graphs_run_without_an_internal_error(graph: Any) -> None:
    """A graph that builds never fails mid-run with a KeyError/AttributeError: a start runs it to
    a pause or an end, and a message answers whatever it asked (no node here needs a model)."""
    specs, start_token = graph
    nodes, start, _ = build_graph(specs, start_token)
    try:
        flow = Flow("f", start=start, nodes=nodes)
    except FlowDefinitionError:
        return
    other = Flow("other", nodes=[reply("hello", response="other flow", next=end())])
    agent = Agent("Bot", flows=[flow, other], idle="silent").with_clock(FakeClock(), SequentialIds("s"))
    # a loop of static targets is the oscillation guard's to stop: it degrades the run, never the turn
    result = await agent.turn(None, Start("f", key="k1"))
    assert result.session is not None
    assert all(line.code != "step-gone" for line in result.outcomes)
    answered = await agent.turn(result.session, Message("yes"))  # a customer answers whatever was asked
    assert all(line.code != "step-gone" for line in answered.outcomes)
