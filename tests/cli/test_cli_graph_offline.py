"""``tether graph --format html`` draws its charts with no network: the page, opened from a file
in chromium with every network request refused, renders an SVG per chart."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES, child_env

TETHER = Path(sys.executable).with_name("tether")
CHROMIUM = os.environ.get("TETHER_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium found (apt-get install -y chromium)")]


def test_the_html_graph_renders_offline(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "support.html"
    done = subprocess.run([str(TETHER), "graph", str(EXAMPLES / "support.py"), "--format", "html", "-o",
                           str(page_file)], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    asked: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()

            def refuse(route: object) -> None:
                request = route.request  # type: ignore[attr-defined]
                if request.url.startswith("file://"):
                    route.continue_()  # type: ignore[attr-defined]
                else:
                    asked.append(request.url)
                    route.abort()  # type: ignore[attr-defined]

            page.route("**/*", refuse)
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
            drawn = page.locator("pre.mermaid svg").count()
            text = page.locator("pre.mermaid svg").first.text_content() or ""
        finally:
            browser.close()
    assert asked == []
    assert drawn == 1  # one chart: the agent's
    assert "refund_reason" in text and "address_save" in text
