"""File forms for what Python authoring has: verify, branches, a question per field, a mention's
``extract`` and gates. Each builds the same Python objects, runs, and gives its file back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tether import Agent, Field, Flow, Message, collect, end, judge_gate, on_mention, reply
from tether.dialect import build_flow, canonical, to_spec, validate
from tether.dialect.spec import FlowSpec
from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.nodes import Branch, Verify, branch
from tether.testing import FakeClock, SequentialIds

ORDER: dict[str, Any] = {
    "id": "order",
    "on": [{"kind": "message"}, {"kind": "mention", "phrases": ["a discount code"],
                                 "extract": {"code": "string", "percent": {"type": "integer", "minimum": 1}}}],
    "gates": [{"id": "not_zero", "kind": "predicate", "when": {"op": "not", "arg": {
        "op": "eq", "left": {"path": "state.qty"}, "right": {"literal": 0}}}},
              {"id": "judged", "kind": "judge", "inputs": ["state.qty", "results.ask"], "severity": "advisory"}],
    "nodes": [
        {"kind": "collect", "id": "ask",
         "schema": {"type": "object", "properties": {"item": {"type": "string"}, "qty": {"type": "integer"}}},
         "ask": {"item": "Which item?", "qty": "How many?"},
         "resolvers": [{"kind": "pattern", "field": "item", "regex": "(pen|cup)"},
                       {"kind": "pattern", "field": "qty", "regex": "(\\d+)"}],
         "verify": {"check": {"op": "not", "arg": {"op": "gt", "left": {"path": "state.qty"},
                                                   "right": {"literal": 10}}}},
         "branches": [{"if": {"op": "truthy", "value": {"path": "context.vip"}}, "then": "vip"},
                      {"when": "the customer wants to stop", "then": {"end": "stopped"}}],
         "next": "done"},
        {"kind": "reply", "id": "done", "response": {"template": "${state.qty} x ${state.item}, ordered."},
         "next": {"end": "ordered"}},
        {"kind": "reply", "id": "vip", "response": {"template": "A person will take your order."},
         "next": {"end": "vip"}},
    ],
}


def built(spec: dict[str, Any] = ORDER) -> Flow:
    return build_flow(FlowSpec.model_validate(copy.deepcopy(spec)))


def agent(spec: dict[str, Any] = ORDER) -> Agent:
    """The flow without its judge gate (no gate judge is configured here: it would fail the run)."""
    runnable = copy.deepcopy(spec)
    runnable["gates"] = [g for g in runnable["gates"] if g["kind"] != "judge"]
    return Agent("Oda", flows=[built(runnable)]).with_clock(FakeClock(), SequentialIds("s"))


def test_the_forms_build_the_python_objects() -> None:
    flow = built()
    ask = flow.by_id["ask"]
    assert isinstance(ask.verify, Verify) and ask.verify.check is not None
    assert [b.when for b in ask.branches] == [None, "the customer wants to stop"]
    assert isinstance(ask.branches[0], Branch) and callable(ask.branches[0].if_)
    assert dict(ask.ask) == {"item": "Which item?", "qty": "How many?"}  # type: ignore[arg-type]
    mention = flow.on[1]
    assert mention.extract == {"code": "string", "percent": {"type": "integer", "minimum": 1}}
    assert [(g.id, g.kind, g.severity) for g in flow.gates] == [("not_zero", "predicate", "blocking"),
                                                                ("judged", "judge", "advisory")]


def test_to_spec_gives_the_file_back_and_the_same_digest() -> None:
    flow = built()
    assert to_spec(flow) == canonical(ORDER)
    assert build_flow(FlowSpec.model_validate(to_spec(flow))).digest == flow.digest
    changed = copy.deepcopy(ORDER)
    changed["gates"][0]["when"]["arg"]["right"]["literal"] = 1
    assert build_flow(FlowSpec.model_validate(changed)).digest != flow.digest  # the gate's predicate counts


async def test_a_question_per_field_and_a_code_branch_run() -> None:
    bot = agent()
    first = await bot.turn(None, Message("hello"))
    assert first.text == "Which item? How many?"
    vip = await bot.turn(first.session, Message("hmm"), context={"vip": True})
    assert (vip.text, vip.ended[0].reason) == ("A person will take your order.", "vip")


async def test_verify_holds_the_node_until_its_check_passes() -> None:
    bot = agent()
    first = await bot.turn(None, Message("hello"))
    blocked = await bot.turn(first.session, Message("pen, 40"))
    assert "verify-blocked" in [o.code for o in blocked.outcomes] and not blocked.ended
    fixed = await bot.turn(blocked.session, Message("pen, 4"))
    assert (fixed.text, fixed.ended[0].reason) == ("4 x pen, ordered.", "ordered")


async def test_a_predicate_gate_fails_the_run_it_does_not_hold_for() -> None:
    spec = copy.deepcopy(ORDER)
    spec["gates"][0]["when"]["arg"]["right"]["literal"] = 2
    bot = agent(spec)
    first = await bot.turn(None, Message("hello"))
    done = await bot.turn(first.session, Message("cup, 2"))
    assert done.ended[0].reason == "failed-verification"


def test_python_authoring_converts_too() -> None:
    ask = collect("ask", fields=["size"], ask={"size": "Which size?"},
                  branches=[branch("stop", if_={"equals": {"size": "none"}}),
                            branch(end("asked"), when="they ask a question")], on_complete="stop")
    with pytest.warns(DeprecationWarning, match="flow 'py', node 'ask'"):  # the older condition form
        flow = Flow("py", start=ask, nodes=[ask, reply("stop", response="Bye.", next=end("bye"))],
                    on=[on_mention("a refund", extract={"order": "string"})],
                    gates=[judge_gate("judged", inputs=["state.size"])])
    data = to_spec(flow)
    assert data["nodes"][0]["ask"] == {"size": "Which size?"}
    assert data["nodes"][0]["branches"] == [
        {"then": "stop", "if": {"op": "eq", "left": {"path": "state.size"}, "right": {"literal": "none"}}},
        {"then": {"end": "asked"}, "when": "they ask a question"}]
    assert data["on"][0]["extract"] == {"order": "string"}
    assert data["gates"] == [{"id": "judged", "kind": "judge", "inputs": ["state.size"]}]
    Agent("P", fields={"size": Field("string")}, flows=[build_flow(FlowSpec.model_validate(data))])


def test_code_in_verify_and_gates_is_refused_by_name() -> None:
    from tether import predicate_gate

    only = reply("r", response="hi", next=end("x"), verify=Verify(check=lambda state, data: True))
    flow = Flow("py", start=only, nodes=[only], gates=[predicate_gate("g", lambda scope: True)])
    with pytest.raises(FlowDefinitionError) as caught:
        to_spec(flow)
    by_path = {i.path: i.hint for i in caught.value.issues}
    assert "{op: condition, name: <name>}" in (by_path["verify.check"] or "")
    assert "predicate over state.*" in (by_path["gates.0.when"] or "")


def issues_of(mutate: Any) -> list[DefinitionIssue]:
    spec = copy.deepcopy(ORDER)
    mutate(spec)
    return validate({"flow": spec})


def ask_node(spec: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = spec["nodes"][0]
    return found


CASES: list[tuple[str, Any, str, str, str]] = [
    ("branch with neither", lambda s: ask_node(s)["branches"].append({"then": "done"}), "branch-needs-one",
     "flow.nodes.0.branches.2", "when: <text"),
    ("branch with both", lambda s: ask_node(s)["branches"][1].update({"if": {"op": "exists", "path": "state.qty"}}),
     "branch-needs-one", "flow.nodes.0.branches.1", "or if: <predicate>"),
    ("branch to nowhere", lambda s: ask_node(s)["branches"][0].update(then="vpi"), "unresolved-transition",
     "flow.nodes.0.branches.0.then", "did you mean 'vip'?"),
    ("branch reads nothing set", lambda s: ask_node(s)["branches"][0].update(
        {"if": {"op": "exists", "path": "state.nope"}}), "unknown-source", "flow.nodes.0.branches.0.if.path",
     "legal sources here"),
    ("ask for an unknown field", lambda s: ask_node(s)["ask"].update(qyt="How many?"), "unknown-field",
     "flow.nodes.0.ask.qyt", "did you mean 'qty'?"),
    ("ask template", lambda s: ask_node(s)["ask"].update(qty="How many ${state.item}?"), "unknown-source",
     "flow.nodes.0.ask.qty", "legal sources here: input.*, context.*"),
    ("empty verify", lambda s: ask_node(s).update(verify={}), "verify-needs-one", "flow.nodes.0.verify",
     "output_schema"),
    ("verify schema", lambda s: ask_node(s).update(verify={"output_schema": {
        "type": "object", "properties": {"qty": {"type": "date"}}}}), "invalid-schema",
     "flow.nodes.0.verify.output_schema.properties.qty.type", "string, number"),
    ("duplicate gate", lambda s: s["gates"][1].update(id="not_zero"), "invalid-gate", "flow.gates.1.id",
     "its own id"),
    ("judge input root", lambda s: s["gates"][1].update(inputs=["sate.qty"]), "unknown-root",
     "flow.gates.1.inputs.0", "did you mean 'state'?"),
    ("gate kind", lambda s: s["gates"][1].update(kind="judje"), "dialect-union-tag-invalid", "flow.gates.1",
     "did you mean 'judge'?"),
    ("extract type", lambda s: s["on"][1]["extract"].update(code="text"), "dialect-literal-error",
     "flow.on.1.extract.code", "one of the values"),
]


@pytest.mark.parametrize(("family", "mutate", "code", "path", "hint"), CASES, ids=[c[0] for c in CASES])
def test_each_form_is_checked_with_a_hint(family: str, mutate: Any, code: str, path: str, hint: str) -> None:
    found = [i for i in issues_of(mutate) if i.code == code]
    assert found, issues_of(mutate)
    assert found[0].path == path
    assert found[0].hint is not None and hint in found[0].hint, found[0].hint


def test_the_order_flow_is_valid() -> None:
    assert validate({"flow": copy.deepcopy(ORDER)}) == []
