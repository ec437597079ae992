"""``tether serve`` as a real subprocess on a free 127.0.0.1 port (uvicorn picks it: port 0)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue

import pytest

TETHER = Path(sys.executable).with_name("tether")
HERE = Path(__file__).resolve().parent


def app_file(tmp_path: Path, factory: str = "echo_agent()") -> Path:
    """A file defining ``agent = <factory>`` from tests/server/server_agents.py."""
    app = tmp_path / "app.py"
    app.write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport server_agents\n"
                   f"agent = server_agents.{factory}\n")
    return app


class Served:
    """A running ``tether serve``: its base URL, every line it printed on stderr so far, and its process."""

    def __init__(self, base: str, lines: list[str], process: subprocess.Popen[str]) -> None:
        self.base = base
        self.lines = lines
        self.process = process


@contextlib.contextmanager
def tether_serve(args: list[str], *, cwd: Path, env: dict[str, str] | None = None,
                 workers: int = 1) -> Iterator[Served]:
    """Run ``tether serve ARGS --port 0`` until the body ends (then terminate it and wait); the
    body starts once the address is printed and each of ``workers`` processes has started up."""
    process = subprocess.Popen([str(TETHER), "serve", *args, "--port", "0"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    queue: Queue[str] = Queue()
    assert process.stderr is not None
    stderr = process.stderr
    reader = threading.Thread(target=lambda: [queue.put(line) for line in stderr], daemon=True)
    reader.start()
    lines: list[str] = []

    def drain() -> None:
        while True:
            try:
                lines.append(queue.get_nowait())
            except Empty:
                return

    base = ""
    try:
        while (not base or sum("Application startup complete" in line for line in lines) < workers
               or not any("/inspect" in line for line in lines)):  # the banner, printed once bound
            try:
                line = queue.get(timeout=60)
            except Empty:
                pytest.fail(f"tether serve did not start: {lines}")
            lines.append(line)
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                base = found.group(1)
        served = Served(base, lines, process)
        yield served
    finally:
        process.terminate()
        process.wait(timeout=60)
        reader.join(timeout=10)  # it reads to the end of the pipe: closing under it would raise in the thread
        drain()
        if not reader.is_alive():
            stderr.close()
