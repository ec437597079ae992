"""Subprompt nodes: one isolated model call, fail-closed extraction, the output contract, origin
``agent`` (a downstream check is ``asserted``), tiers, retries, timeout, optional and abort."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from workflow_helpers import definition, fn, node

from tether.executors import SubprocessExecutor
from tether.models import ModelTiers
from tether.models.types import ModelRequest
from tether.testing import FunctionModel, ScriptedModel
from tether.workflow_host import WorkflowRun

KIND = {"type": "object", "properties": {"kind": {"type": "string", "enum": ["bug", "feature"]}},
        "required": ["kind"]}


def subprompt(node_id: str = "classify", *, fields: dict[str, Any] | None = KIND, model: str | None = None,
              instruction: str = "Classify this ticket: ${input.ticket}", **extra: Any) -> dict[str, Any]:
    run: dict[str, Any] = {"kind": "subprompt", "instruction": instruction}
    if model:
        run["model"] = model
    contract = {"output": {"fields": fields}} if fields is not None else {}
    return node(node_id, run, contract=contract, **extra)


def one(node_data: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return definition([node_data], input={"ticket": "the app crashes on start"}, **fields)


async def run_with(reply: Any, data: dict[str, Any] | None = None, **options: Any) -> WorkflowRun:
    model = ScriptedModel(subprompt=reply if isinstance(reply, list) else [reply])
    run = WorkflowRun(data or one(subprompt()), model=model, **options)
    await run.drain()
    return run


ACCEPTED = [
    ('{"kind": "bug"}', "the whole reply"),
    ('```json\n{"kind": "bug"}\n```', "a fence around all of it"),
    ('```\n{"kind": "bug"}\n```', "a bare fence"),
    ('Here\'s the classification:\n{"kind": "bug"}', "narrated, on its own line"),
    ('{\n  "kind": "bug"\n}\nThat is my answer.', "prose after it"),
    ('I need more information.\n{"kind": "bug"}', "structural, not semantic"),
]
REFUSED = [
    ("It is a bug.", "no-json"),
    ("", "empty"),
    ('{"kind": "bug"}\n{"kind": "feature"}', "two-candidates"),
    ('{"kind": "bug"}}', "unbalanced"),
    ('Answer: }\n{"kind": "bug"}', "unbalanced"),
    ('{"kind": "bug"', "unterminated"),
    ('The answer is {"kind": "bug"} I think', "embedded"),
    ("{'kind': 'bug'}", "invalid-json"),
    ('{"kind": "bug",}', "invalid-json"),
    ('{"kind": "question"}', "output contract at kind"),
    ('{"type": "bug"}', "output contract at fields: 'kind' is a required property"),
    ('["bug"]', "fields must be a JSON object"),
]


@pytest.mark.parametrize(("reply", "why"), ACCEPTED)
async def test_accepted_replies_land_in_fields_and_the_reply_is_the_summary(reply: str, why: str) -> None:
    run = await run_with(reply)
    state = run.node("classify")
    assert state.status == "complete", (why, state.error)
    assert state.output is not None and state.output.fields == {"kind": "bug"}
    assert state.output.summary == reply and state.obtained_by == "agent"


@pytest.mark.parametrize(("reply", "reason"), REFUSED)
async def test_refused_replies_fail_the_node_without_repair(reply: str, reason: str) -> None:
    run = await run_with(reply)
    state = run.node("classify")
    assert state.status == "failed" and state.output is None
    assert reason in (state.error or ""), state.error
    assert state.attempts[-1].summary == reply  # the reply is kept on the failed attempt


async def test_without_a_contract_the_reply_is_prose_in_the_summary() -> None:
    run = await run_with("A crash on start: a bug.", one(subprompt(fields=None)))
    state = run.node("classify")
    assert state.status == "complete" and state.output is not None
    assert (state.output.fields, state.output.summary) == ({}, "A crash on start: a bug.")


async def test_the_call_is_isolated_and_carries_the_interpolated_instruction_inputs_and_directive() -> None:
    data = one(subprompt() | {"contract": {"input": {"team": "${input.ticket}"}, "output": {"fields": KIND}}})
    model = ScriptedModel(subprompt=['{"kind": "bug"}'])
    run = WorkflowRun(data, model=model)
    await run.drain()
    assert run.status == "complete" and len(model.calls) == 1
    request = model.calls[0].request
    assert (request.call, request.system, request.instructions, request.tools) == ("subprompt", "", "", ())
    assert [m.role for m in request.messages] == ["user"]
    prompt = request.messages[0].content
    assert prompt.startswith("Classify this ticket: the app crashes on start\n\nInputs:\n")
    assert '"team": "the app crashes on start"' in prompt
    assert "Respond with only a JSON object that matches this JSON Schema" in prompt and '"enum"' in prompt
    assert run.snapshot.model_calls == 1


async def test_a_check_downstream_of_a_subprompt_is_asserted(executor: SubprocessExecutor, workspace: Path) -> None:
    passthrough = fn("copy", 'printf "$KIND"', capture="kind",
                     contract={"input": {"KIND": "${classify.output.fields.kind}"}})
    check = fn("verify", '[ "$KIND" = bug ]', kind="check", contract={"input": {"KIND": "${copy.output.fields.kind}"}})
    data = definition([subprompt(), passthrough, check], [("classify", "copy"), ("copy", "verify")],
                      input={"ticket": "crash"})
    run = await run_with('{"kind": "bug"}', data, executor=executor, workspace=workspace)
    assert run.status == "complete"
    verdict = run.node("verify").attempts[-1].verdict
    assert verdict is not None and verdict["provenance"] == "asserted"


async def test_tiers_use_the_run_model_and_an_undeclared_tier_fails_instead_of_substituting() -> None:
    small_model = ScriptedModel(subprompt=['{"kind": "feature"}'], name="scripted:small")
    default_model = ScriptedModel(subprompt=['{"kind": "bug"}', '{"kind": "bug"}'])
    tiers = ModelTiers(default=default_model, small=small_model)
    run = WorkflowRun(one(subprompt(model="small")), model=tiers)
    await run.drain()
    assert run.node("classify").output.fields == {"kind": "feature"}  # type: ignore[union-attr]
    assert small_model.calls[0].request.tier == "small" and default_model.count() == 0
    for tier in ("default", None):
        run = WorkflowRun(one(subprompt(model=tier)), model=tiers)
        await run.drain()
        assert run.node("classify").output.fields == {"kind": "bug"}  # type: ignore[union-attr]
    only_default = ScriptedModel()
    for tier in ("small", "deep"):
        run = WorkflowRun(one(subprompt(model=tier)), model=only_default)
        await run.drain()
        assert run.node("classify").status == "failed"
        assert f"model tier {tier!r}: tier {tier!r} is not configured" in (run.node("classify").error or "")
    assert only_default.count() == 0
    run = WorkflowRun(one(subprompt()))
    await run.drain()
    assert "needs a language model, and none is configured" in (run.node("classify").error or "")


async def test_retries_consume_bad_replies_and_optional_failure_skips() -> None:
    data = one(subprompt(control={"retries": 1}))
    run = await run_with(["not json", '{"kind": "bug"}'], data)
    state = run.node("classify")
    assert state.status == "complete" and [a.status for a in state.attempts] == ["failed", "complete"]
    assert run.snapshot.model_calls == 2
    exhausted = await run_with(["no", "still no"], data)
    assert exhausted.node("classify").status == "failed" and len(exhausted.node("classify").attempts) == 2
    optional = await run_with("no", one(subprompt(control={"optional": True})))
    assert optional.node("classify").status == "skipped" and optional.node("classify").skip_reason == "optional"


def hanging() -> tuple[FunctionModel, dict[str, int]]:
    seen = {"started": 0, "cancelled": 0}

    async def reply(request: ModelRequest) -> str:
        seen["started"] += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        return "never"
    return FunctionModel(reply), seen


async def test_a_timeout_cancels_the_call_before_the_next_attempt() -> None:
    model, seen = hanging()
    run = WorkflowRun(one(subprompt(control={"timeoutSec": 0.05, "retries": 1})), model=model)
    await run.drain()
    state = run.node("classify")
    assert state.status == "failed" and "timed out after 0.05s" in (state.error or "")
    assert seen == {"started": 2, "cancelled": 2}


async def test_cancel_aborts_the_call_and_its_late_output_is_discarded() -> None:
    model, seen = hanging()
    run = WorkflowRun(one(subprompt()), model=model)
    draining = asyncio.create_task(run.drain())
    while seen["started"] == 0:
        await asyncio.sleep(0.01)
    await run.cancel("stop")
    await asyncio.wait_for(draining, 10)
    assert seen["cancelled"] == 1 and run.status == "cancelled"
    assert run.node("classify").status == "failed" and run.node("classify").output is None
