"""Property (issue 16, "bad input gets a clear error"): a node built with any option of the wrong
type either builds a flow, or is refused with a coded FlowDefinitionError, when the node or the
flow is defined; never a TypeError, AttributeError or KeyError from deep inside."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from tether import Agent, Flow, FlowDefinitionError, Verify, action, collect, decide, end, reply, router, wait

KNOWN_CODES = {"invalid-option", "unresolved-transition", "inline-transition-target", "invalid-node",
               "invalid-node-id", "reserved-node-id", "missing-start", "unreachable-node", "invalid-trigger",
               "invalid-condition", "unknown-condition", "unknown-field", "unknown-tool", "unknown-action",
               "unknown-flow"}


class Slot(BaseModel):
    value: str


VALUES = [42, -1, 0, 2.5, True, None, "", "text", "end", b"bytes", [1], ["value"], ("value",), {"a": 1},
          {"goto": "n"}, set(), object(), Slot, Slot(value="x"), Verify(), (lambda: 1), (lambda a, b: end()),
          str, end(), "{missing}"]
OPTIONS = {
    "reply": ["instructions", "response", "context", "next", "once", "tools", "branches", "fallback",
              "output_schema", "verify"],
    "collect": ["schema", "fields", "required", "ask", "question", "prompt", "instructions", "max_turns",
                "max_asks", "resolvers", "verbatim_fields", "on_complete", "branches", "choices", "output_schema"],
    "action": ["run", "then", "on_fail", "output_schema", "verify"],
    "decide": ["schema", "decide", "instructions", "choices", "prompt"],
    "router": ["when", "then", "else_"],
    "wait": ["timer", "event", "up_to", "business_hours", "then", "else_"],
}
BASE: dict[str, dict[str, Any]] = {
    "reply": {"response": "hello"},
    "collect": {"schema": Slot},
    "action": {"run": lambda state, ctx: None},
    "decide": {"choices": ["yes", "no"], "decide": lambda data, state: end()},
    "router": {"when": lambda run: True},
    "wait": {"timer": "5m"},
}
BUILDERS = {"reply": reply, "collect": collect, "action": action, "decide": decide, "router": router, "wait": wait}

mutations = st.sampled_from(sorted(OPTIONS)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.dictionaries(st.sampled_from(OPTIONS[kind]),
                                                          st.sampled_from(range(len(VALUES))), max_size=3)))


@given(mutations)
def test_wrong_typed_node_options_are_refused_with_a_code_or_build(mutation: Any) -> None:
    kind, changes = mutation
    options = {**BASE[kind], **{option: VALUES[i] for option, i in changes.items()}}
    try:
        node = BUILDERS[kind]("n", **options)
        flow = Flow("f", nodes=[node, reply("other", response="other")])
        Agent("Bot", flows=[flow])
    except FlowDefinitionError as exc:
        assert exc.issues and {issue.code for issue in exc.issues} <= KNOWN_CODES, str(exc)
        return
    assert flow.digest.startswith("sha256:")
    assert flow.to_mermaid().startswith("flowchart TD")
