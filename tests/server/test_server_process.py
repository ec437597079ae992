"""``tether serve`` as a real subprocess on a free 127.0.0.1 port (uvicorn picks it: port 0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue

import httpx
import pytest

TETHER = Path(sys.executable).with_name("tether")
HERE = Path(__file__).resolve().parent


def _app_file(tmp_path: Path) -> Path:
    app = tmp_path / "app.py"
    app.write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom server_agents import echo_agent\n"
                   "agent = echo_agent()\n")
    return app


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A running ``tether serve`` with one key; yields its base URL and the lines it printed."""
    env = {**os.environ, "TETHER_API_KEYS": "acme:k1"}
    process = subprocess.Popen([str(TETHER), "serve", str(_app_file(tmp_path)), "--store", str(tmp_path / "s.db"),
                                "--port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=tmp_path)
    lines: Queue[str] = Queue()
    assert process.stderr is not None
    stderr = process.stderr
    threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=60)
            except Empty:
                pytest.fail(f"tether serve did not start: {seen}")
            seen.append(line)
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                yield found.group(1), seen
                break
    finally:
        process.terminate()
        process.wait(timeout=30)
        stderr.close()


def test_tether_serve_answers_over_a_real_socket(server: tuple[str, list[str]]) -> None:
    base, printed = server
    assert any("1 API key(s) configured" in line for line in printed)
    with httpx.Client(base_url=base, headers={"Authorization": "Bearer k1"}) as client:
        assert client.get("/readyz").json()["status"] == "ready"
        assert client.get("/v1/agents", headers={"Authorization": "Bearer nope"}).status_code == 401
        sid = client.post("/v1/agents/Echo/sessions").json()["session"]
        answer = client.post(f"/v1/agents/Echo/sessions/{sid}/messages", json={"text": "over tcp"})
        assert answer.json()["message"] == "reply 1: over tcp"


def test_tether_serve_without_keys_refuses_a_public_address(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TETHER_API_KEYS"}
    done = subprocess.run([str(TETHER), "serve", str(_app_file(tmp_path)), "--host", "0.0.0.0"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "refusing to bind 0.0.0.0 with no API keys" in done.stderr
