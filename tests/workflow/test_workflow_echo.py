"""The reference procedure (issue 12), end to end with real processes and a scripted model:
request_input for a name, a function writes the greeting file, a check verifies it, approval is
requested and the flow completes. The workflow is examples/echo_workflow.yaml."""

from __future__ import annotations

import json
from pathlib import Path

from tether.executors import SubprocessExecutor
from tether.models.types import ModelResponse, ToolCall
from tether.stores import MemoryStore
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun, load_workflow_file

ECHO = Path(__file__).resolve().parents[2] / "examples" / "echo_workflow.yaml"


def call(name: str, **arguments: object) -> ModelResponse:
    return ModelResponse(tool_calls=(ToolCall(id=f"call-{name}", name=name, arguments=dict(arguments)),))


def echo_model() -> ScriptedModel:
    def complete_with_the_answer(request: object) -> ModelResponse:
        """Complete ask-name with what the human answered (read back through build_handoff)."""
        handoff = json.loads(request.messages[-1].content)  # type: ignore[attr-defined]
        return call("complete_node", node_id="ask-name", summary="got it",
                    fields={"name": handoff["input"]["response"]})

    return ScriptedModel(
        agent=[call("build_handoff", node_id="ask-name"), call("start_node", node_id="ask-name"),
               call("request_input", node_id="ask-name", prompt="Whom should I greet?", schema={"kind": "text"}),
               call("build_handoff", node_id="ask-name"), complete_with_the_answer, "name recorded",
               call("start_node", node_id="sign-off"), call("build_handoff", node_id="sign-off"),
               call("request_approval", node_id="sign-off", summary="greeting.txt greets Grace")],
        subprompt=['Here is the wish:\n{"wish": "Have a bright day."}'],
    )


async def test_the_echo_procedure_runs_end_to_end(executor: SubprocessExecutor, workspace: Path) -> None:
    store = MemoryStore()
    model = echo_model()
    run = WorkflowRun(load_workflow_file(ECHO), executor=executor, workspace=workspace, model=model, store=store,
                      run_id="echo-1")
    await run.advance()
    assert run.node("ask-name").status == "awaiting_input" and run.status == "waiting"
    await run.apply_input("ask-name", "Grace", provided_by="ana")
    await run.advance()
    assert {n: s.status for n, s in run.snapshot.nodes.items()} == {
        "ask-name": "complete", "wish": "complete", "write-greeting": "complete", "verify": "complete",
        "sign-off": "awaiting_approval"}
    assert (workspace / "greeting.txt").read_text() == "Hello, Grace!\nHave a bright day.\n"
    verdict = run.verdict("verify")
    assert verdict is not None and verdict.passed and verdict.provenance == "asserted" and verdict.exit_code == 0
    assert verdict.compared["NAME"].value == "Grace" and run.verdict("wish") is None
    await run.apply_approval("sign-off", "approved", decided_by="ana", feedback="ship it")
    assert run.status == "complete"
    assert run.snapshot.output == {"name": "Grace", "greeting": "Hello, Grace!"}
    assert model.unused() == {} and run.snapshot.model_calls == 10
    stored = await WorkflowRun.load(store, "echo-1", load_workflow_file(ECHO))
    assert stored.status == "complete" and stored.snapshot.model_calls == 10
    tools = [entry.name for entry in await store.journal("echo-1") if entry.kind == "flow-tool"]
    assert tools == ["build_handoff", "start_node", "request_input", "build_handoff", "complete_node",
                     "start_node", "build_handoff", "request_approval"]
