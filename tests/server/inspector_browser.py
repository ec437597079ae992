"""Helpers of the inspector's browser tests: ``tether serve`` as a subprocess on a free port, and
Debian's chromium driven by Playwright (no browser download: ``executable_path``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from typing import Any

TETHER = Path(sys.executable).with_name("tether")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "inspector"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The chromium to drive: ``TETHER_TEST_CHROMIUM``, else the first chromium on PATH."""
    named = os.environ.get("TETHER_TEST_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def tether_serve(app: Path, store: Path, env: dict[str, str], *options: str) -> Iterator[str]:
    """``tether serve APP [OPTIONS]`` on a free 127.0.0.1 port (in the store's directory); yields its
    base URL, stops it on exit."""
    process = subprocess.Popen([str(TETHER), "serve", str(app), "--store", str(store), "--port", "0", *options],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **env}, cwd=store.parent)
    assert process.stderr is not None
    stderr = process.stderr
    lines: Queue[str] = Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=60)
            except Empty:
                raise AssertionError(f"tether serve did not start: {''.join(seen)}") from None
            seen.append(line)
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                break
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=10)  # it reads to the end of the pipe: closing under it would raise in the thread
        if not reader.is_alive():
            stderr.close()


@contextmanager
def inspector_page(browser: Any, base_url: str, storage: dict[str, str]) -> Iterator[Any]:
    """A page of the inspector at ``base_url`` with ``storage`` already in its sessionStorage (the
    API key, an operator's name); a script error in the page fails the test that used it."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=base_url)
    context.add_init_script("".join(f"sessionStorage.setItem({key!r}, {value!r});" for key, value in storage.items()))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], f"script errors in the page: {errors}"


def shot(page: Any, name: str) -> None:
    """A full-page screenshot of ``page`` under ARTIFACTS."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
