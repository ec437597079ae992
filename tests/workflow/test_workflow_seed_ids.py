"""Seed 001's own conventions: node ids with hyphens (``ask-name``) are read through
``nodes['ask-name']`` by bindings, guards and outputs; a human's rejection of a gate gives the
agent one revision turn even when no agent node is ready."""

from __future__ import annotations

import json
from pathlib import Path

from workflow_helpers import definition, node

from tether.executors import SubprocessExecutor
from tether.models.types import ModelResponse, ToolCall
from tether.stores import MemoryStore
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun, load_workflow_file

ECHO = Path(__file__).resolve().parents[2] / "examples" / "echo_workflow.yaml"
HYPHENATED = {"ask_name": "ask-name", "write_greeting": "write-greeting", "sign_off": "sign-off"}


def call(name: str, **arguments: object) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id=f"call-{name}", name=name, arguments=dict(arguments)),))


def hyphenated_echo(tmp_path: Path) -> Path:
    """The echo procedure with the seed's hyphenated ids: bindings read them as ``nodes['...']``."""
    text = ECHO.read_text()
    for old, new in HYPHENATED.items():
        text = text.replace("${" + old + ".", "${nodes['" + new + "'].").replace(old, new)
    assert "ask_name" not in text and "nodes['ask-name'].output.fields.name" in text
    path = tmp_path / "echo.yaml"
    path.write_text(text)
    return path


async def test_the_echo_procedure_runs_with_hyphenated_ids(executor: SubprocessExecutor, workspace: Path,
                                                            tmp_path: Path) -> None:
    def complete_with_the_answer(request: object) -> ModelResponse:
        handoff = json.loads(request.messages[-1].content)  # type: ignore[attr-defined]
        return call("complete_node", node_id="ask-name", summary="got it",
                    fields={"name": handoff["input"]["response"]})

    model = ScriptedModel(
        agent=[call("start_node", node_id="ask-name"),
               call("request_input", node_id="ask-name", prompt="Whom should I greet?", schema={"kind": "text"}),
               call("build_handoff", node_id="ask-name"), complete_with_the_answer, "name recorded",
               call("start_node", node_id="sign-off"),
               call("request_approval", node_id="sign-off", summary="greeting.txt greets Grace")],
        subprompt=['{"wish": "Have a bright day."}'],
    )
    run = WorkflowRun(load_workflow_file(hyphenated_echo(tmp_path)), executor=executor, workspace=workspace,
                      model=model, store=MemoryStore(), run_id="echo-h")
    await run.advance()
    await run.apply_input("ask-name", "Grace", provided_by="ana")
    await run.advance()
    assert (workspace / "greeting.txt").read_text() == "Hello, Grace!\nHave a bright day.\n"
    assert run.node("verify").status == "complete" and run.node("sign-off").status == "awaiting_approval"
    await run.apply_approval("sign-off", "approved", decided_by="ana")
    assert run.status == "complete"
    assert run.snapshot.output == {"name": "Grace", "greeting": "Hello, Grace!"}


async def test_a_gate_rejection_gives_the_agent_one_revision_turn() -> None:
    data = definition([node("draft", {"kind": "agent", "instruction": "draft the note"}),
                       node("sign-off", {"kind": "gate", "prompt": "Sign the note off?", "schema": {"kind": "text"}})],
                      [("draft", "sign-off")])
    model = ScriptedModel(agent=[
        call("start_node", node_id="draft"), call("complete_node", node_id="draft", summary="drafted", fields={}),
        "drafted",
        call("request_approval", node_id="sign-off", summary="Shortened the note as asked."),
    ])
    run = WorkflowRun(data, model=model)
    await run.advance()
    assert run.node("draft").status == "complete" and run.node("sign-off").status == "awaiting_approval"
    assert len(model.calls) == 3
    await run.apply_approval("sign-off", "rejected", feedback="too long", decided_by="ana")
    await run.advance()  # no agent node is ready: the rejection alone gives the agent its turn
    revision = model.calls[3:]
    assert len(revision) == 1  # one turn, ended by the fresh request for a human
    opening = json.loads(revision[0].request.messages[0].content)
    assert opening["ready_agent_nodes"] == []
    assert opening["stimuli"][0]["decision"] == "rejected" and opening["stimuli"][0]["feedback"] == "too long"
    approval = run.node("sign-off").approval
    assert approval is not None and approval.decision is None and approval.request == 2
    assert approval.summary == "Shortened the note as asked."
    await run.advance()  # the revision is spent: nothing more until a human decides
    assert len(model.calls) == 4 and model.unused() == {}
