"""The inspector's workflow runs in a real browser (Debian's chromium through Playwright) against a
real ``tether serve --workflows DIR`` and real ``tether worker`` processes on its store: a run
started from the page, listed by what it waits on, approved, rejected with feedback, answered,
retried and cancelled from its page. Screenshots go to ``test-artifacts/inspector/``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from inspector_browser import TETHER, find_chromium, inspector_page, shot, tether_serve

from tether.models.types import ModelResponse, ToolCall
from tether.stores import SQLiteStore
from tether.testing import ScriptedModel
from tether.workflow_host import WorkflowRun

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
expect = playwright_api.expect

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium found (apt-get install -y chromium)")

KEY = "runs-key"
HERE = Path(__file__).resolve().parent
WAIT = 20_000  # ms


def _node(node_id: str, run: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "label": node_id.title(), "description": f"the {node_id} step", "run": run}


def _workflow(workflow_id: str, nodes: list[dict[str, Any]], edges: list[tuple[str, str]], **fields: Any
              ) -> dict[str, Any]:
    return {"schemaVersion": 2, "id": workflow_id, "version": "1", "name": workflow_id, "nodes": nodes,
            "edges": [{"id": f"{s}->{t}", "source": s, "target": t, "type": "flow"} for s, t in edges], **fields}


class Server:
    def __init__(self, url: str, store: Path) -> None:
        self.url, self.store = url, store

    def start(self, workflow: str) -> str:
        with httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {KEY}"}) as api:
            started = api.post(f"/v1/workflows/{workflow}/runs", json={})
            assert started.status_code == 201, started.text
            return str(started.json()["run"])

    def worker(self) -> None:
        """``tether worker --once`` on the server's store: drives every run with work until it waits."""
        done = subprocess.run([str(TETHER), "worker", "--db", str(self.store), "--once"], capture_output=True,
                              text=True, timeout=120, cwd=self.store.parent)
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("runs")
    flows = root / "workflows"
    flows.mkdir()
    files = {
        "ship": _workflow("ship", [_node("build", {"kind": "function", "command": "echo built > built.txt"}),
                                   _node("sign", {"kind": "gate", "prompt": "Ship it?", "schema": {"kind": "text"}})],
                          [("build", "sign")], input={"version": "1.0"}),
        "flaky": _workflow("flaky", [_node("probe", {"kind": "function", "command": "test -f ok"})], []),
        "ask": _workflow("ask", [_node("ask", {"kind": "agent", "instruction": "ask for the name"})], []),
    }
    for name, data in files.items():
        (flows / f"{name}.json").write_text(json.dumps(data))
    store = root / "sessions.db"
    with tether_serve(HERE / "inspector_app.py", store, {"TETHER_API_KEYS": f"acme:{KEY}"},
                      "--workflows", str(flows)) as url:
        yield Server(url, store)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    with inspector_page(browser, server.url, {"tether.inspector.key": KEY, "tether.inspector.operator": "Ann"}) as page:
        yield page


def node_row(page: Any, node: str) -> Any:
    return page.locator(f'#r-nodes tbody tr[data-node="{node}"]')


def test_a_run_started_from_the_page_is_driven_and_approved(page: Any, server: Server) -> None:
    page.goto("/inspect/workflow-runs")
    page.select_option("#start-run select[name=workflow]", "ship")
    page.fill("#start-run textarea[name=input]", '{"version": "2.0"}')
    page.click("#start-run button[type=submit]")
    page.wait_for_url("**/inspect/workflow-runs/*", timeout=WAIT)
    expect(page.locator("#r-io")).to_contain_text('"version":"2.0"')
    server.worker()  # the server drives its queued runs too: whichever takes the run first drives it
    approval = page.locator('#r-waiting .approval[data-node="sign"]')
    expect(approval).to_contain_text("Ship it?", timeout=WAIT)
    expect(node_row(page, "build")).to_contain_text("exit 0")
    shot(page, "workflow-run-approval")
    approval.locator("textarea[name=feedback]").fill("looks good")
    approval.locator("button.approve").click()
    expect(page.locator("#r-status")).to_have_text("complete", timeout=WAIT)
    expect(page.locator("#r-events")).to_contain_text("approve · sign · by Ann · looks good")
    expect(page.locator("#r-cancel")).to_be_hidden()


def test_the_list_filters_by_what_runs_wait_on_and_a_rejection_keeps_its_feedback(page: Any, server: Server) -> None:
    waiting = server.start("ship")
    failing = server.start("flaky")
    server.worker()
    page.goto("/inspect/workflow-runs")
    expect(page.locator(f'#wf-runs tr[data-run="{failing}"]')).to_contain_text("failed at probe", timeout=WAIT)
    page.select_option("#run-filters select[name=waiting]", "approval")
    page.click("#run-filters button")
    row = page.locator(f'#wf-runs tr[data-run="{waiting}"]')
    expect(row).to_contain_text("approval at sign: Ship it?", timeout=WAIT)
    expect(page.locator(f'#wf-runs tr[data-run="{failing}"]')).to_have_count(0)
    shot(page, "workflow-runs")
    row.locator("a").click()
    approval = page.locator('#r-waiting .approval[data-node="sign"]')
    approval.locator("button.reject").click()  # no feedback: refused in the page
    expect(page.locator("#banner")).to_contain_text("feedback-needed")
    approval.locator("textarea[name=feedback]").fill("not on a Friday")
    approval.locator("button.reject").click()
    expect(page.locator("#r-waiting")).to_contain_text("rejected: waiting for a fresh request", timeout=WAIT)
    expect(node_row(page, "sign")).to_contain_text("not on a Friday")


def test_a_failed_node_is_retried_and_a_run_cancelled_from_the_page(page: Any, server: Server) -> None:
    failing = server.start("flaky")
    server.worker()
    page.goto(f"/inspect/workflow-runs/{failing}")
    expect(page.locator("#r-status")).to_have_text("failed", timeout=WAIT)
    (server.store.parent / "ok").write_text("")
    node_row(page, "probe").locator("button.retry").click()
    server.worker()
    expect(page.locator("#r-status")).to_have_text("complete", timeout=WAIT)

    other = server.start("ship")
    page.goto(f"/inspect/workflow-runs/{other}")
    page.once("dialog", lambda dialog: dialog.accept("wrong version"))
    page.click("#r-cancel")
    expect(page.locator("#r-status")).to_have_text("cancelled", timeout=WAIT)
    expect(page.locator("#r-events")).to_contain_text("cancel · by Ann · wrong version")


def test_an_input_request_is_answered_from_the_page(page: Any, server: Server) -> None:
    run_id = server.start("ask")

    async def ask() -> None:  # an agent's driver (a scripted model) asks for the name
        store = SQLiteStore(server.store)
        calls = [ModelResponse(tool_calls=(ToolCall(id=f"c{i}", name=name, arguments=arguments),),
                               finish_reason="tool_calls")
                 for i, (name, arguments) in enumerate([
                     ("start_node", {"node_id": "ask"}),
                     ("request_input", {"node_id": "ask", "prompt": "Whose name?", "schema": {"kind": "text"}})])]
        try:
            async with store.lease(run_id):
                run = await WorkflowRun.load(store, run_id, model=ScriptedModel(agent=[*calls, "asked"]))
                await run.advance()
        finally:
            await store.close()

    # on a thread of its own: Playwright's sync API runs an event loop on this one
    failed: list[BaseException] = []

    def drive() -> None:
        try:
            asyncio.run(ask())
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)

    worker = threading.Thread(target=drive)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive() and failed == []
    page.goto(f"/inspect/workflow-runs/{run_id}")
    form = page.locator('#r-waiting form.input[data-node="ask"]')
    expect(form).to_contain_text("Whose name?", timeout=WAIT)
    form.locator("[name=response]").fill("Grace")
    form.locator("button[type=submit]").click()
    expect(node_row(page, "ask")).to_contain_text('Whose name? → "Grace"', timeout=WAIT)
    expect(page.locator("#r-waiting")).to_contain_text("agent work at ask")
