"""What a workflow run's model calls cost, and where a user reads it: the run's snapshot (a sub-flow
child's calls included), the run's stored document (``usage``, what ``tether sessions show`` and
the store list read), and the usage of a conversation that drove the run (``WorkflowChat``)."""

from __future__ import annotations

import json
from typing import Any

from workflow_helpers import definition, node

from tether import Agent, Flow, Message, on_message
from tether.engine.core.session import Session
from tether.errors import ModelError
from tether.models.types import ModelRequest, ModelResponse, ToolCall, Usage
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.workflow_host import WorkflowChat, WorkflowRun


def spent(prompt: int, completion: int, text: str = "", *, calls: tuple[ToolCall, ...] = ()) -> ModelResponse:
    """A reply that reports its tokens (exact numbers, so the sums below are checked, not guessed)."""
    return ModelResponse(text=text, tool_calls=calls, usage=Usage(prompt_tokens=prompt, completion_tokens=completion))


def tool(name: str, tokens: tuple[int, int], **arguments: Any) -> ModelResponse:
    return spent(*tokens, calls=(ToolCall(id=f"call-{name}", name=name, arguments=arguments),))


def subprompt(node_id: str, **extra: Any) -> dict[str, Any]:
    return node(node_id, {"kind": "subprompt", "instruction": f"write {node_id}"}, **extra)


async def test_a_sub_flows_model_calls_are_counted_on_the_parent_run_and_saved() -> None:
    child = definition([subprompt("inner")])
    child["id"] = "child"
    middle = definition([node("deeper", {"kind": "sub-flow", "flow": "child"})])
    middle["id"] = "middle"
    parent = definition([subprompt("outer"), node("sub", {"kind": "sub-flow", "flow": "middle"})],
                        [("outer", "sub")])
    store = MemoryStore()
    model = ScriptedModel(subprompt=[spent(10, 2, "one"), spent(30, 4, "two")])
    run = WorkflowRun(parent, model=model, store=store, run_id="r1", resolve={"child": child, "middle": middle})
    await run.drain()
    assert run.status == "complete" and model.unused() == {}
    assert run.snapshot.model_calls == 2  # the nested child's call reaches the root
    assert run.snapshot.usage == {"prompt_tokens": 40, "completion_tokens": 6}
    stored = await WorkflowRun.load(store, "r1", parent, resolve={"child": child, "middle": middle})
    assert stored.snapshot.model_calls == 2 and stored.snapshot.usage["prompt_tokens"] == 40


async def test_the_stored_run_document_carries_the_runs_usage() -> None:
    store = MemoryStore()
    model = ScriptedModel(subprompt=[spent(12, 3, "a"), spent(20, 5, "b")])
    run = WorkflowRun(definition([subprompt("a"), subprompt("b")], [("a", "b")]), model=model, store=store,
                      run_id="r2")
    await run.drain()
    document = await store.load("r2")
    assert document is not None
    usage = document.usage
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (2, 32, 8)
    assert usage.workflow_calls == 0  # the run's own document: its calls are the run's, not a session's


async def test_a_failed_subprompt_call_is_counted_as_a_call_without_tokens() -> None:
    def down(request: ModelRequest) -> ModelResponse:
        raise ModelError("provider overloaded", kind="overload")

    model = ScriptedModel(subprompt=[down, spent(7, 1, "fine")])
    run = WorkflowRun(definition([subprompt("a", control={"retries": 1})]), model=model)
    await run.drain()
    assert run.node("a").status == "complete"
    assert run.snapshot.model_calls == 2 and run.snapshot.usage == {"prompt_tokens": 7, "completion_tokens": 1}


def handoff_answer(request: ModelRequest) -> ModelResponse:
    answer = json.loads(request.messages[-1].content)["input"]["response"]
    return tool("complete_node", (50, 9), node_id="ask", summary="named", fields={"name": answer})


NAMED = definition(
    [node("ask", {"kind": "agent", "instruction": "ask for the name"},
          contract={"output": {"fields": {"type": "object", "properties": {"name": {"type": "string"}},
                                          "required": ["name"]}}}),
     subprompt("card")],
    [("ask", "card")],
)


async def test_a_conversation_that_drives_a_workflow_counts_the_runs_calls_in_its_usage() -> None:
    store = MemoryStore()
    model = ScriptedModel(
        agent=[tool("start_node", (100, 10), node_id="ask"),
               tool("request_input", (110, 11), node_id="ask", prompt="Whose card?"),
               tool("build_handoff", (120, 12), node_id="ask"), handoff_answer, spent(60, 3, "done")],
        subprompt=[spent(40, 20, "Happy birthday, Ana!")])
    bridge = WorkflowChat(NAMED, store=store, model=model)
    flow = Flow("card", "Start the card workflow", nodes=bridge.nodes(), on=[on_message(repeat="always")])
    agent = Agent("Bot", flows=[flow], fields=bridge.fields()).with_clock(FakeClock(), SequentialIds("s"))

    first = await agent.turn(None, Message("make a card"))
    assert first.text == "Whose card?"
    assert (first.llm_calls, first.workflow_calls) == (2, 2)
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (210, 21)
    session: Session | None = first.session
    assert session is not None
    assert (session.usage.llm_calls, session.usage.workflow_calls, session.usage.prompt_tokens) == (2, 2, 210)

    second = await agent.turn(session, Message("Ana"))
    assert second.text == "Workflow is complete." and model.unused() == {}
    assert (second.llm_calls, second.workflow_calls) == (4, 4)  # handoff, complete, closing text, subprompt
    session = second.session
    assert session is not None
    usage = session.usage
    assert (usage.llm_calls, usage.workflow_calls) == (6, 6)
    assert (usage.prompt_tokens, usage.completion_tokens) == (480, 65)
    [stored] = await store.list(agent="workflow:wf")
    run = await WorkflowRun.load(store, stored.id, NAMED)
    assert run.snapshot.model_calls == 6 and run.snapshot.usage["prompt_tokens"] == 480
