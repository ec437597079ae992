"""One template syntax: ``${name}`` in Python flows, flow files and workflows, ``$$`` for a literal
``$``; the older Python ``{name}`` still renders, with a warning when the flow is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether import Agent, Field, Flow, FlowDefinitionError, Message, action, end, goto, on_message, reply
from tether.dialect import load
from tether.models.types import ModelResponse, ToolCall
from tether.templating import normal_form, parse, slots
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.workflow_host import WorkflowRun


def _agent(*texts: str) -> Agent:
    @action("pick")
    async def pick(state: dict[str, Any], ctx: Any) -> Any:
        return goto("say", data={"toppings": ["ham", "olives"], "price": 12})

    flow = Flow("order", "Order", nodes=[pick, reply("say", response=" ".join(texts), next=end("ok"))],
                on=[on_message("pizza")])
    return Agent("Pia", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))


@pytest.mark.parametrize(("text", "said"), [
    ("$${price}", "$12"), ("$$", "$"), ("$5 off", "$5 off"), ("${ price }", "12"), ("{not a name}", "{not a name}"),
])
async def test_a_python_text_fills_placeholders_and_keeps_escaped_dollars(text: str, said: str) -> None:
    result = await _agent(text).turn(None, Message("pizza"))
    assert result.text == said


async def test_the_dollar_escape_reads_the_same_in_a_flow_file_and_a_workflow(tmp_path: Path) -> None:
    path = tmp_path / "order.yaml"
    path.write_text("""\
flow:
  id: order
  on: [{kind: message}]
  nodes:
    - kind: reply
      id: confirm
      response: {template: "${context.toppings}: $${context.price}."}
      next: {end: ok}
""")
    flow = load(path)
    assert isinstance(flow, Flow)
    agent = Agent("Pia", flows=[flow]).with_clock(FakeClock(), SequentialIds("s"))
    result = await agent.turn(None, Message("a pizza"), context={"toppings": ["ham", "olives"], "price": 12})
    assert result.text == "ham and olives: $12."

    data = {"schema_version": 2, "id": "wf", "version": "1", "name": "Workflow",
            "input": {"toppings": ["ham", "olives"], "price": 12},
            "nodes": [{"id": "write", "label": "Write", "description": "the order",
                       "run": {"kind": "agent", "instruction": "${input.toppings}: $${input.price}."}}],
            "edges": []}
    call = ToolCall(id="c1", name="build_handoff", arguments={"node_id": "write"})
    model = ScriptedModel(agent=[ModelResponse(tool_calls=(call,), finish_reason="tool_calls"), "ok"])
    report = await WorkflowRun(data, model=model).agent.turn()
    assert report.calls[0][2]["instruction"] == "ham and olives: $12."


async def test_the_older_form_renders_and_warns_once_when_the_flow_is_built_naming_the_new_text() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        agent = _agent("{toppings} for {price}.")
    (warning,) = [w for w in caught if w.category is DeprecationWarning]
    assert str(warning.message) == (
        "flow 'order', node 'say': response: {toppings}, {price} is the older form of a placeholder (deprecated); "
        "write '${toppings} for ${price}.'")
    assert warning.filename == __file__
    result = await agent.turn(None, Message("pizza"))
    assert result.text == "ham and olives for 12."
    (issue,) = agent.old_forms()  # what `tether check` lists
    assert (issue.code, issue.flow, issue.node, issue.path) == ("old-form", "order", "say", "nodes.1.response")


def test_a_text_with_both_forms_is_refused_when_the_flow_is_built() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        _agent("${price} for {toppings}")
    (issue,) = caught.value.issues
    assert (issue.code, issue.flow, issue.node, issue.path) == ("ambiguous-template", "order", "say",
                                                                "nodes.1.response")
    assert '"$${amount}" where a dollar sign goes before a value' in issue.message
    assert "write ${toppings}" in issue.message


def test_a_missing_name_in_the_one_syntax_is_refused_when_the_agent_is_built() -> None:
    flow = Flow("f", nodes=[reply("r", response="Hi ${nmae}.", next=end())], on=[on_message()])
    with pytest.raises(FlowDefinitionError) as caught:
        Agent("A", fields={"name": Field()}, flows=[flow])
    (issue,) = caught.value.issues
    assert issue.code == "unknown-placeholder" and "${nmae}" in issue.message


def test_rewriting_a_text_in_the_one_syntax_keeps_the_flow_digest() -> None:
    def flow(text: str) -> Flow:
        return Flow("f", nodes=[reply("r", response=text, next=end())], on=[on_message()])

    with pytest.warns(DeprecationWarning):
        older = flow("Hi {name}, {state.size}: $5")
    assert flow("Hi ${name}, ${state.size}: $5").digest == older.digest
    assert flow("Hi ${name}, ${state.size}: $6").digest != older.digest


def test_the_syntax() -> None:
    assert parse("a ${ x.y } b $${z} $$ $5 {w}") == ["a ", slots("${x.y}")[0], " b ", "$", slots("${z}")[0],
                                                    " ", "$", " $5 {w}"]
    assert [s.written for s in slots("{a} ${b}", old=True)] == ["{a}", "${b}"]
    assert normal_form("${a} {b} $${c} $$") == "{a} {b} ${c} $$"


def test_an_agents_fixed_texts_fill_their_own_names_in_either_form() -> None:
    from tether.templating import fill_names

    assert fill_names("Dropped ${task}; {task} again? ${other} $$", {"task": "the order"}) == (
        "Dropped the order; the order again? ${other} $")
