"""Gate responses (and input answers) are checked against their typed schema: text, choice, form,
file. A refused answer names the reason and leaves the run untouched."""

from __future__ import annotations

from typing import Any

import pytest
from workflow_helpers import definition, node

from tether.errors import WorkflowDefinitionError, WorkflowOperationError
from tether.workflow import load_workflow
from tether.workflow._answers import check_answer, coerce_input_schema
from tether.workflow._contract import FileSchema, FormSchema
from tether.workflow_host import WorkflowRun

FORM = {"kind": "form", "fields": {
    "version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
    "channel": {"type": "string", "enum": ["stable", "beta"]},
    "replicas": {"type": "integer", "minimum": 1, "default": 2},
}}
FILE = {"kind": "file", "accept": [".pdf", "image/*"], "maxSize": 1000}


def gate_with(schema: dict[str, Any]) -> dict[str, Any]:
    return definition([node("ask", {"kind": "gate", "prompt": "fill this in", "schema": schema})])


async def parked(schema: dict[str, Any]) -> WorkflowRun:
    run = WorkflowRun(gate_with(schema))
    await run.drain()
    assert run.node("ask").status == "awaiting_approval"
    return run


@pytest.mark.parametrize(("schema", "response", "reason"), [
    ({"kind": "text"}, 42, "a text answer must be a string"),
    ({"kind": "text"}, "two\nlines", "cannot hold a line break"),
    ({"kind": "choice", "options": ["a", "b"]}, "c", "'c' is not one of"),
    ({"kind": "choice", "options": ["a", "b"]}, ["a", "b"], "choose exactly one"),
    ({"kind": "choice", "options": ["a", "b"], "multiple": True}, [], "choose at least one"),
    ({"kind": "choice", "options": ["a", "b"]}, None, "needs a response"),
    (FORM, {"version": "1.2"}, "form field 'channel' is required"),
    (FORM, {"version": "1.2", "channel": "nightly"}, "form field 'channel': 'nightly' is not one of"),
    (FORM, {"version": "one", "channel": "beta"}, "form field 'version': 'one' does not match"),
    (FORM, {"version": "1.2", "channel": "beta", "replicas": "3"}, "form field 'replicas': '3' is not of type"),
    (FORM, {"version": "1.2", "channel": "beta", "replicas": 0}, "0 is less than the minimum of 1"),
    (FORM, {"version": "1.2", "channel": "beta", "owner": "x"}, "unknown form field 'owner'"),
    (FORM, ["1.2"], "a form answer must be an object"),
    (FILE, {"name": "notes.txt", "size": 10}, "'notes.txt' is not an accepted type"),
    (FILE, {"name": "report.pdf", "size": 5000}, "5000 bytes, over maxSize 1000"),
    (FILE, {"name": "report.pdf"}, "'size' is required (maxSize is 1000)"),
    (FILE, {"name": "report.pdf", "size": 10, "path": "/etc"}, "unknown file key 'path'"),
    (FILE, {"name": "", "size": 10}, "non-empty 'name'"),
    (FILE, [{"name": "a.pdf", "size": 1}, {"name": "b.pdf", "size": 1}], "exactly one file"),
    (FILE, "report.pdf", "a file answer must be an object"),
])
async def test_a_bad_response_is_refused_with_a_reason_and_the_run_is_untouched(
    schema: dict[str, Any], response: Any, reason: str
) -> None:
    run = await parked(schema)
    before = run.snapshot
    with pytest.raises(WorkflowOperationError, match="gate 'ask'") as refused:
        await run.apply_approval("ask", "approved", response=response, decided_by="ana")
    assert reason in refused.value.message and refused.value.code == "bad-response"
    assert run.snapshot is before and run.node("ask").status == "awaiting_approval"
    assert run.node("ask").approval.decision is None  # type: ignore[union-attr]


@pytest.mark.parametrize(("schema", "response", "stored"), [
    ({"kind": "text"}, None, None),
    ({"kind": "text", "multiline": True}, "two\nlines", "two\nlines"),
    ({"kind": "choice", "options": ["a", "b"], "multiple": True}, "b", ["b"]),
    (FORM, {"version": "1.2", "channel": "beta"}, {"version": "1.2", "channel": "beta", "replicas": 2}),
    (FILE, {"name": "Scan.PNG", "size": 999, "type": "image/png"},
     {"name": "Scan.PNG", "size": 999, "type": "image/png"}),
    ({**FILE, "multiple": True}, {"name": "a.pdf", "size": 1}, [{"name": "a.pdf", "size": 1}]),
])
async def test_a_valid_response_is_stored_coerced_to_its_schema(schema: dict[str, Any], response: Any,
                                                                stored: Any) -> None:
    run = await parked(schema)
    await run.apply_approval("ask", "approved", response=response, decided_by="ana")
    assert run.node("ask").status == "complete"
    assert run.node("ask").output.fields["response"] == stored  # type: ignore[union-attr]


async def test_a_rejection_needs_no_response() -> None:
    run = await parked(FORM)
    await run.apply_approval("ask", "rejected", feedback="not now")
    assert run.node("ask").approval.decision == "rejected"  # type: ignore[union-attr]


def test_malformed_form_fields_fail_when_the_workflow_is_defined() -> None:
    bad = {"kind": "form", "fields": {"n": {"type": "integr"}}, "required": ["n", "m"]}
    with pytest.raises(WorkflowDefinitionError) as raised:
        load_workflow(gate_with(bad))
    found = {(issue.path, issue.code) for issue in raised.value.issues}
    assert found == {("nodes.0.run.schema", "bad-form-schema")}
    messages = " | ".join(issue.message for issue in raised.value.issues)
    assert "field 'n' is not a valid JSON Schema" in messages and "required field 'm' is not declared" in messages


def test_an_explicit_required_list_overrides_the_default_rule() -> None:
    form = FormSchema.model_validate({**FORM, "required": ["version"]})
    assert check_answer(form, {"version": "2.0"}) == {"version": "2.0", "replicas": 2}
    assert check_answer(FileSchema(kind="file"), {"name": "x.bin"}) == {"name": "x.bin"}


@pytest.mark.parametrize(("asked", "kind"), [
    (None, "text"),
    ({"kind": "text", "multiline": True}, "text"),
    ({"type": "string"}, "text"),
    ({"type": "string", "enum": ["yes", "no"]}, "choice"),
    ({"type": "array", "items": {"enum": ["x", "y"]}}, "choice"),
    ({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, "form"),
    ({"kind": "file", "accept": [".txt"]}, "file"),
])
def test_an_agent_input_schema_is_coerced_onto_the_four_kinds(asked: Any, kind: str) -> None:
    assert coerce_input_schema(asked).kind == kind


@pytest.mark.parametrize(("asked", "reason"), [
    ("text", "must be an object"),
    ({"type": "number"}, "cannot be rendered"),
    ({"kind": "choice", "options": []}, "input schema choice.options: List should have at least 1"),
    ({"kind": "slider"}, "input schema"),
    ({"kind": "form", "fields": {"n": {"type": 5}}}, "field 'n' is not a valid JSON Schema"),
])
def test_an_unanswerable_input_schema_is_refused(asked: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("(", r"\(")):
        coerce_input_schema(asked)
