"""Seed 001's own conventions: a human's rejection of a gate gives the agent one revision turn
even when no agent node is ready; a run started from a file finds its definition again; a host
drives the agent tools without a model. (Hyphenated ids, ``nodes['ask-name']``: the echo
procedure, tests/workflow/test_workflow_echo.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workflow_helpers import definition, node

from tether.errors import WorkflowOperationError
from tether.models.types import ModelResponse, ToolCall
from tether.stores import MemoryStore
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun, load_workflow_file

ECHO = Path(__file__).resolve().parents[2] / "examples" / "echo_workflow.yaml"
def call(name: str, **arguments: object) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id=f"call-{name}", name=name, arguments=dict(arguments)),))


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


async def test_a_run_started_from_a_file_loads_without_being_given_its_definition(tmp_path: Path) -> None:
    path = tmp_path / "sign.yaml"
    path.write_text("schema_version: 2\nid: sign\nversion: '1'\nname: Sign\nedges: []\nnodes:\n"
                    "  - {id: sign-off, label: Sign, description: sign it, run: {kind: gate, prompt: 'Sign?', "
                    "schema: {kind: text}}}\n")
    store = MemoryStore()
    run = WorkflowRun.from_file(path, store=store, run_id="r1", workspace=tmp_path)
    await run.drain()
    again = await WorkflowRun.load(store, "r1")
    assert again.node("sign-off").status == "awaiting_approval" and again.graph.digest == run.graph.digest
    path.write_text(path.read_text().replace("Sign?", "Sign it now?"))
    with pytest.raises(WorkflowOperationError) as changed:
        await WorkflowRun.load(store, "r1")
    assert changed.value.code == "definition-changed"
    coded = WorkflowRun(load_workflow_file(ECHO), store=store, run_id="r2")
    await coded.save()
    with pytest.raises(WorkflowOperationError) as needed:
        await WorkflowRun.load(store, "r2")
    assert needed.value.code == "definition-needed"
    assert "pass it, as WorkflowRun.load(store, 'r2', definition)" in needed.value.message
    assert (await WorkflowRun.load(store, "r2", load_workflow_file(ECHO))).run_id == "r2"


async def test_a_host_performs_the_agent_tools_without_a_model() -> None:
    data = definition([node("ask", {"kind": "agent", "instruction": "ask for a name"},
                            contract={"output": {"fields": {"type": "object", "required": ["name"],
                                                            "properties": {"name": {"type": "string"}}}}})])
    store = MemoryStore()
    run = WorkflowRun(data, store=store, run_id="host-1")
    refused = await run.agent.call("complete_node", node_id="ask", summary="done", fields={"name": "Ada"})
    assert refused["ok"] is False and run.node("ask").status == "available"  # not started: nothing changed
    assert (await run.agent.call("start_node", node_id="ask"))["ok"]
    wrong = await run.agent.call("complete_node", node_id="ask", summary="done", fields={})
    assert wrong["ok"] is False and wrong["code"] == "output-contract"
    done = await run.agent.call("complete_node", node_id="ask", summary="done", fields={"name": "Ada"})
    assert done["ok"] and run.status == "complete"
    tools = [(e.name, e.status) for e in await store.journal("host-1") if e.kind == "flow-tool"]
    assert tools == [("complete_node", "error"), ("start_node", "finished"), ("complete_node", "error"),
                     ("complete_node", "finished")]
