"""A conversation starts a workflow and answers its gates and its agent's input request from the
chat (tether.workflow_host.WorkflowChat)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workflow_helpers import definition, fn, node

from tether import Agent, Flow, Message, on_message
from tether.engine.core.session import Session
from tether.executors import SubprocessExecutor
from tether.models.types import ModelRequest, ModelResponse, ToolCall
from tether.stores import MemoryStore
from tether.testing import FakeClock, ScriptedModel, SequentialIds
from tether.workflow_host import WorkflowChat, WorkflowRun


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id=f"call-{name}", name=name, arguments=arguments),))


def with_the_answer(request: ModelRequest) -> ModelResponse:
    handoff = json.loads(request.messages[-1].content)
    return call("complete_node", node_id="ask", summary="named", fields={"name": handoff["input"]["response"]})


WORKFLOW = definition(
    [node("ask", {"kind": "agent", "instruction": "ask for the name"},
          contract={"output": {"fields": {"type": "object", "properties": {"name": {"type": "string"}},
                                          "required": ["name"]}}}),
     node("channel", {"kind": "gate", "prompt": "Which channel?",
                      "schema": {"kind": "choice", "options": ["stable", "beta"]}}),
     fn("greet", 'printf "Hello, $NAME ($CHANNEL)" > greeting.txt',
        contract={"input": {"NAME": "${ask.output.fields.name}", "CHANNEL": "${channel.output.fields.response}"}}),
     node("sign", {"kind": "gate", "prompt": "Sign the greeting off?", "schema": {"kind": "text"}})],
    [("ask", "channel"), ("channel", "greet"), ("greet", "sign")],
    output={"channel": "${channel.output.fields.response}", "signed": "${sign.output.fields.feedback}"},
)


class Conversation:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent.with_clock(FakeClock(), SequentialIds("s"))
        self.session: Session | None = None

    async def say(self, text: str) -> str:
        result = await self.agent.turn(self.session, Message(text))
        self.session = result.session
        return result.text


async def test_a_conversation_starts_a_workflow_and_answers_its_input_and_gates(
    executor: SubprocessExecutor, workspace: Path
) -> None:
    store = MemoryStore()
    model = ScriptedModel(agent=[call("start_node", node_id="ask"),
                                 call("request_input", node_id="ask", prompt="Whom should I greet?"),
                                 call("build_handoff", node_id="ask"), with_the_answer, "done"])
    bridge = WorkflowChat(WORKFLOW, store=store, executor=executor, model=model, workspace=workspace)
    flow = Flow("greeting", "Start the greeting workflow", nodes=bridge.nodes(),
                on=[on_message(repeat="always")])  # the catch-all: routed with no model
    chat = Conversation(Agent("Bot", flows=[flow], fields=bridge.fields()))
    assert await chat.say("greet someone") == "Whom should I greet?"
    assert await chat.say("Grace") == "Which channel? (stable / beta)"
    refused = await chat.say("nightly")
    assert refused == "gate 'channel': 'nightly' is not one of ['stable', 'beta']. Which channel? (stable / beta)"
    assert await chat.say("beta") == "Sign the greeting off? (yes or no)"
    assert (workspace / "greeting.txt").read_text() == "Hello, Grace (beta)"
    unclear = await chat.say("maybe")
    assert unclear == "please answer yes or no (a reason may follow). Sign the greeting off? (yes or no)"
    assert await chat.say("yes, looks good") == "Workflow is complete."
    [stored] = await store.list(agent="workflow:wf")
    run = await WorkflowRun.load(store, stored.id, WORKFLOW)
    assert run.status == "complete" and run.snapshot.output == {"channel": "beta", "signed": "looks good"}
    assert run.node("ask").input_request.provided_by == "chat"  # type: ignore[union-attr]
    assert run.node("sign").approval.decided_by == "chat"  # type: ignore[union-attr]
