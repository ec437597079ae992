"""README.md's shell samples: one way of running tether throughout (``.venv/bin/tether``, as the
install section sets it up), and the echo workflow's command keeps its files in a workspace."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from doc_samples import ROOT

README = ROOT / "README.md"
SHELL = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.DOTALL | re.MULTILINE)
TETHER = Path(sys.executable).with_name("tether")


def shell_lines() -> list[str]:
    return [line for block in SHELL.findall(README.read_text()) for line in block.splitlines()]


def test_every_tether_command_runs_the_venv_script() -> None:
    commands = [line.split(" #", 1)[0] for line in shell_lines()]
    assert sum(".venv/bin/tether " in line for line in commands) > 20
    assert [line for line in commands if re.search(r"(^|\s)tether\s", line)] == []  # a bare `tether` command


def test_the_echo_workflow_command_writes_into_its_workspace(tmp_path: Path) -> None:
    line = next(line for line in shell_lines() if "echo_workflow.yaml" in line and "--script" in line)
    words = shlex.split(line.split("#", 1)[0])
    assert words[0] == ".venv/bin/tether"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    done = subprocess.run([str(TETHER), *words[1:]], input="Ada\na\n\n", capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "complete" in done.stdout
    workspace = tmp_path / words[words.index("--workspace") + 1]
    assert (workspace / "greeting.txt").read_text().startswith("Hello, Ada!")
    assert not (tmp_path / "greeting.txt").exists()
