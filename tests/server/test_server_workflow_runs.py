"""Workflow runs over HTTP: started through the path of ``tether workflow run --detach`` and
driven by the worker function, listed per tenant with what each waits on, shown, and acted on by
an operator (approve, reject with feedback, input, retry, cancel); every refusal is a clear 4xx
that changes nothing, and every action is an event on the run."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_client import ACME, GLOBEX, KEYS, app_client

from tether.models.types import ModelResponse, ToolCall
from tether.runtime import Runtime
from tether.server import create_app
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun, act_on_run, drive_stored_runs

OPERATOR_KEYS = {"key-ann": "acme", "key-bob": "globex"}
ANN = {"Authorization": "Bearer key-ann"}
BOB = {"Authorization": "Bearer key-bob"}  # globex's operator
RUNS = "/v1/workflow-runs"


def _node(node_id: str, run: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "label": node_id.title(), "description": f"the {node_id} step", "run": run}


def _workflow(workflow_id: str, nodes: list[dict[str, Any]], edges: list[tuple[str, str]] = (),  # type: ignore[assignment]
              **fields: Any) -> dict[str, Any]:
    return {"schemaVersion": 2, "id": workflow_id, "version": "1", "name": workflow_id, "nodes": nodes,
            "edges": [{"id": f"{s}->{t}", "source": s, "target": t, "type": "flow"} for s, t in edges], **fields}


@pytest.fixture
def workflows(tmp_path: Path) -> Path:
    directory = tmp_path / "workflows"
    directory.mkdir()
    files = {
        "ship": _workflow("ship", [_node("build", {"kind": "function", "command": "echo built > built.txt"}),
                                   _node("sign", {"kind": "gate", "prompt": "Ship it?", "schema": {"kind": "text"}})],
                          [("build", "sign")], input={"version": "1.0"}),
        "flaky": _workflow("flaky", [_node("probe", {"kind": "function", "command": "test -f ok"})]),
        "ask": _workflow("ask", [_node("ask", {"kind": "agent", "instruction": "ask for the name"})]),
    }
    for name, data in files.items():
        (directory / f"{name}.json").write_text(json.dumps(data))
    (directory / "broken.yaml").write_text("id: [")
    return directory


@pytest.fixture
async def client(runtime: Runtime, workflows: Path, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(runtime, api_keys=KEYS, operator_keys=OPERATOR_KEYS, scheduler=False, workflows=workflows,
                     workflow_workspace=tmp_path / "work")
    (tmp_path / "work").mkdir()
    async for c in app_client(app):
        yield c


async def _start(client: httpx.AsyncClient, workflow: str, headers: dict[str, str] = ACME,
                 **body: Any) -> dict[str, Any]:
    started = await client.post(f"/v1/workflows/{workflow}/runs", json=body, headers=headers)
    assert started.status_code == 201, started.text
    return dict(started.json())


async def _revision(runtime: Runtime, run: str) -> int:
    document = await runtime.store.load(run)
    assert document is not None
    return document.revision


async def test_a_run_started_over_http_is_driven_by_a_worker_and_approved_by_an_operator(
        client: httpx.AsyncClient, runtime: Runtime, tmp_path: Path) -> None:
    run = await _start(client, "ship", input={"version": "2.0"})
    assert run["status"] == "running" and run["waiting"] == "worker" and run["tenant"] == "acme"
    assert run["waiting_on"] == [{"kind": "worker", "nodes": ["build"]}]
    assert {node["id"]: node["kind"] for node in run["nodes"]} == {"build": "function", "sign": "gate"}
    assert run["input"] == {"version": "2.0"}
    rid = run["run"]

    assert await drive_stored_runs(runtime.store, once=True) == 1  # what `tether worker` does with it
    assert (tmp_path / "work" / "built.txt").read_text() == "built\n"
    waiting = (await client.get(RUNS, params={"waiting": "approval"}, headers=ACME)).json()["runs"]
    assert [(r["run"], r["status"]) for r in waiting] == [(rid, "waiting")]
    assert waiting[0]["waiting_on"][0] | {"schema": None} == {
        "kind": "approval", "node": "sign", "summary": "Ship it?", "approval": "gate", "schema": None,
        "decision": None}

    refused = await client.post(f"{RUNS}/{rid}/nodes/sign/approve", json={}, headers=ACME)
    assert refused.status_code == 403 and refused.json()["code"] == "operator-only"  # a client key reads, no more
    approved = await client.post(f"{RUNS}/{rid}/nodes/sign/approve", json={"by": "Ann", "feedback": "go"},
                                 headers=ANN)
    assert approved.status_code == 200, approved.text
    page = approved.json()
    assert page["status"] == "complete" and page["waiting"] is None
    sign = next(node for node in page["nodes"] if node["id"] == "sign")
    assert sign["status"] == "complete" and sign["approval"]["decided_by"] == "Ann"
    actions = [{k: v for k, v in e["data"].items() if k != "at"} for e in page["events"]
               if e["type"] == "workflow.action"]
    assert actions == [{"type": "workflow.action", "action": "approve", "node": "sign", "by": "Ann",
                        "feedback": "go", "run_id": rid}]
    build = next(node for node in page["nodes"] if node["id"] == "build")
    assert build["attempts"][0]["exit_code"] == 0  # attempts (and a check's verdicts) are on the node


async def test_runs_are_scoped_by_tenant_and_another_tenants_run_is_a_404(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    rid = (await _start(client, "ship"))["run"]
    other = (await _start(client, "flaky", headers=GLOBEX))["run"]
    assert [r["run"] for r in (await client.get(RUNS, headers=ACME)).json()["runs"]] == [rid]
    assert [r["run"] for r in (await client.get(RUNS, headers=GLOBEX)).json()["runs"]] == [other]
    before = await _revision(runtime, rid)
    for method, path in (("GET", f"{RUNS}/{rid}"), ("POST", f"{RUNS}/{rid}/cancel"),
                         ("POST", f"{RUNS}/{rid}/nodes/build/retry")):
        answer = await client.request(method, path, headers=BOB)
        assert answer.status_code == 404 and answer.json()["code"] == "run-not-found", path
    assert await _revision(runtime, rid) == before
    assert (await client.get(RUNS, headers={"Authorization": "Bearer nope"})).status_code == 401
    # a session route does not serve a run either
    assert (await client.get(f"/v1/agents/workflow:ship/sessions/{rid}", headers=ACME)).status_code == 404


async def test_a_refused_action_answers_a_clear_4xx_and_changes_nothing(
        client: httpx.AsyncClient, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.server import workflow_runs

    # the run's lease is held for the whole busy request below: how long the route waits for it
    # before it answers run-busy (ACT_WAIT, 2 s) changes nothing here
    monkeypatch.setattr(workflow_runs, "act_on_run", functools.partial(act_on_run, wait=0.2))
    rid = (await _start(client, "ship"))["run"]
    await drive_stored_runs(runtime.store, once=True)
    before = await _revision(runtime, rid)
    events = len(await runtime.store.events(rid))
    cases: list[tuple[str, dict[str, Any] | None, int, str]] = [
        (f"{RUNS}/nope/nodes/sign/approve", {}, 404, "run-not-found"),
        (f"{RUNS}/{rid}/nodes/nope/approve", {}, 404, "node-not-found"),
        (f"{RUNS}/{rid}/nodes/build/approve", {}, 409, "no-pending-approval"),
        (f"{RUNS}/{rid}/nodes/sign/input", {"response": "x"}, 409, "no-pending-input"),
        (f"{RUNS}/{rid}/nodes/sign/retry", None, 409, "node-not-retryable"),
        (f"{RUNS}/{rid}/nodes/sign/reject", {"by": "Ann"}, 422, "invalid-body"),  # no feedback
        (f"{RUNS}/{rid}/nodes/sign/reject", {"feedback": ""}, 422, "invalid-body"),
        (f"{RUNS}/{rid}/nodes/sign/approve", {"surprise": 1}, 422, "invalid-body"),
        (f"{RUNS}/{rid}/nodes/sign/input", {}, 422, "invalid-body"),
    ]
    for path, body, status, code in cases:
        answer = await client.post(path, json=body, headers=ANN)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (path, body, answer.text)
        assert answer.json()["message"]
    async with runtime.store.lease(rid):  # a process drives the run right now
        busy = await client.post(f"{RUNS}/{rid}/nodes/sign/approve", json={}, headers=ANN)
    assert busy.status_code == 409 and busy.json()["code"] == "run-busy"
    assert await _revision(runtime, rid) == before and len(await runtime.store.events(rid)) == events


async def test_reject_with_feedback_keeps_the_gate_parked_with_the_reason(
        client: httpx.AsyncClient, runtime: Runtime) -> None:
    rid = (await _start(client, "ship"))["run"]
    await drive_stored_runs(runtime.store, once=True)
    rejected = await client.post(f"{RUNS}/{rid}/nodes/sign/reject", json={"feedback": "not on a Friday", "by": "Ann"},
                                 headers=ANN)
    assert rejected.status_code == 200, rejected.text
    sign = next(node for node in rejected.json()["nodes"] if node["id"] == "sign")
    assert sign["status"] == "awaiting_approval" and sign["approval"]["decision"] == "rejected"
    assert sign["approval"]["feedback"] == "not on a Friday"
    assert rejected.json()["waiting_on"][0]["decision"] == "rejected"
    again = await client.post(f"{RUNS}/{rid}/nodes/sign/approve", json={}, headers=ANN)
    assert again.status_code == 409 and again.json()["code"] == "no-pending-approval"


async def test_retry_a_failed_node_and_cancel_a_run(client: httpx.AsyncClient, runtime: Runtime,
                                                     tmp_path: Path) -> None:
    rid = (await _start(client, "flaky"))["run"]
    await drive_stored_runs(runtime.store, once=True)
    failed = (await client.get(f"{RUNS}/{rid}", headers=ACME)).json()
    assert failed["status"] == "failed" and failed["waiting"] == "failed"
    assert failed["waiting_on"][0]["node"] == "probe" and failed["waiting_on"][0]["retryable"] is True
    assert [r["run"] for r in (await client.get(RUNS, params={"status": "failed"}, headers=ACME)).json()["runs"]] \
        == [rid]
    (tmp_path / "work" / "ok").write_text("")
    retried = await client.post(f"{RUNS}/{rid}/nodes/probe/retry", json={"by": "Ann"}, headers=ANN)
    assert retried.status_code == 200 and retried.json()["waiting"] == "worker"
    await drive_stored_runs(runtime.store, once=True)
    assert (await client.get(f"{RUNS}/{rid}", headers=ACME)).json()["status"] == "complete"

    other = (await _start(client, "ship"))["run"]
    cancelled = await client.post(f"{RUNS}/{other}/cancel", json={"reason": "wrong version", "by": "Ann"}, headers=ANN)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = await client.post(f"{RUNS}/{other}/cancel", headers=ANN)
    assert again.status_code == 409 and again.json()["code"] == "run-ended"
    assert await drive_stored_runs(runtime.store, once=True) == 0  # a worker leaves it alone


async def test_an_operator_answers_an_input_request(client: httpx.AsyncClient, runtime: Runtime) -> None:
    rid = (await _start(client, "ask"))["run"]
    calls = [ModelResponse(tool_calls=(ToolCall(id=f"c{i}", name=name, arguments=args),), finish_reason="tool_calls")
             for i, (name, args) in enumerate([("start_node", {"node_id": "ask"}),
                                               ("request_input", {"node_id": "ask", "prompt": "Whose name?",
                                                                  "schema": {"kind": "text"}})])]
    async with runtime.store.lease(rid):  # the agent's driver asks
        run = await WorkflowRun.load(runtime.store, rid, model=ScriptedModel(agent=[*calls, "asked"]))
        await run.advance()
    listed = (await client.get(RUNS, params={"waiting": "input"}, headers=ACME)).json()["runs"]
    assert [r["run"] for r in listed] == [rid]
    assert listed[0]["waiting_on"][0]["prompt"] == "Whose name?"
    answered = await client.post(f"{RUNS}/{rid}/nodes/ask/input", json={"response": "Grace", "by": "Ann"},
                                 headers=ANN)
    assert answered.status_code == 200, answered.text
    ask = next(node for node in answered.json()["nodes"] if node["id"] == "ask")
    assert ask["status"] == "running" and ask["input_request"]["response"] == "Grace"
    assert ask["input_request"]["provided_by"] == "Ann" and answered.json()["waiting"] == "agent"


async def test_starting_a_run_refuses_what_it_cannot_start(client: httpx.AsyncClient, runtime: Runtime) -> None:
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        ("nope", {}, 404, "workflow-not-found"),
        (".ship", {}, 404, "workflow-not-found"),
        ("broken", {}, 409, "invalid-workflow"),
        ("ship", {"input": {"colour": "red"}}, 422, "invalid-input"),
        ("ship", {"input": "x"}, 422, "invalid-body"),
    ]
    for name, body, status, code in cases:
        answer = await client.post(f"/v1/workflows/{name}/runs", json=body, headers=ACME)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (name, answer.text)
    assert (await client.post("/v1/workflows/..%2Fship/runs", json={}, headers=ACME)).status_code == 404
    await _start(client, "ship", run="r-1")
    duplicate = await client.post("/v1/workflows/ship/runs", json={"run": "r-1"}, headers=ACME)
    assert duplicate.status_code == 409 and duplicate.json()["code"] == "run-exists"
    assert len((await client.get(RUNS, headers=ACME)).json()["runs"]) == 1
    listed = (await client.get("/v1/workflows", headers=ACME)).json()["workflows"]
    assert [(w["id"], "error" in w) for w in listed] == [("ask", False), ("broken", True), ("flaky", False),
                                                          ("ship", False)]


async def test_the_list_pages_newest_first_and_filters(client: httpx.AsyncClient, runtime: Runtime) -> None:
    made = []
    for _ in range(5):
        made.append((await _start(client, "flaky"))["run"])
        runtime.clock.advance("1s")  # type: ignore[attr-defined]
    seen: list[str] = []
    params = {"limit": "2"}
    while True:
        page = (await client.get(RUNS, params=params, headers=ACME)).json()
        seen += [r["run"] for r in page["runs"]]
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert seen == made[::-1]
    assert (await client.get(RUNS, params={"workflow": "ship"}, headers=ACME)).json()["runs"] == []
    for bad in ({"waiting": "lunch"}, {"status": "sleeping"}, {"after": "x"}, {"limit": "0"}):
        answer = await client.get(RUNS, params=bad, headers=ACME)
        assert answer.status_code == 422 and answer.json()["code"] == "invalid-query", bad


async def test_a_server_without_a_workflows_directory_starts_no_run(runtime: Runtime) -> None:
    async for c in app_client(create_app(runtime, api_keys=KEYS, scheduler=False)):
        answer = await c.post("/v1/workflows/ship/runs", json={}, headers=ACME)
        assert answer.status_code == 404 and "--workflows" in answer.json()["message"]
        assert (await c.get("/v1/workflows", headers=ACME)).json() == {"workflows": []}


async def test_a_lone_surrogate_in_a_run_id_or_a_name_is_a_422(client: httpx.AsyncClient, runtime: Runtime) -> None:
    bad = {"Content-Type": "application/json", **ACME}
    started = await client.post("/v1/workflows/ship/runs", content=b'{"run": "r\\ud800"}', headers=bad)
    assert started.status_code == 422, started.text
    rid = (await _start(client, "ship"))["run"]
    await drive_stored_runs(runtime.store, once=True)
    before = await _revision(runtime, rid)
    for body in (b'{"by": "\\udc00"}', b'{"feedback": "x\\ud800"}', b'{"response": "\\ud800"}'):
        answer = await client.post(f"{RUNS}/{rid}/nodes/sign/approve", content=body,
                                   headers={"Content-Type": "application/json", **ANN})
        assert answer.status_code == 422, (body, answer.text)
    assert await _revision(runtime, rid) == before


async def test_a_filter_few_runs_match_reads_a_bounded_number_of_runs_per_page(
        client: httpx.AsyncClient, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.server import workflow_runs

    monkeypatch.setattr(workflow_runs, "_SCAN", 3)  # the runs one request reads
    made = []
    for index in range(7):
        made.append((await _start(client, "ship" if index in (1, 5) else "flaky"))["run"])
        runtime.clock.advance("1s")  # type: ignore[attr-defined]
    pages: list[list[str]] = []
    params = {"waiting": "worker", "limit": "5"}
    while True:
        page = (await client.get(RUNS, params={**params, "workflow": "ship"}, headers=ACME)).json()
        pages.append([r["run"] for r in page["runs"]])
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert [run for page in pages for run in page] == [made[5], made[1]]
    assert len(pages) == 1  # the workflow's own runs: the store lists only them

    params = {"waiting": "approval"}
    reads = 0
    while True:
        page = (await client.get(RUNS, params=params, headers=ACME)).json()
        assert page["runs"] == []
        reads += 1
        if page["next"] is None:
            break
        params["after"] = page["next"]
    assert reads == 3  # 7 runs, 3 a request
