"""The ``tether check`` and ``tether graph`` commands that README.md and docs/ show on the examples
run and succeed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doc_samples import PAGES, ROOT
from typer.testing import CliRunner

from tether.cli._app import app

SHELL = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.DOTALL | re.MULTILINE)
COMMAND = re.compile(r"^(?:\.venv/bin/)?tether ((?:check|graph) examples/.*?)(?:\s+#.*)?$", re.MULTILINE)


def commands() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page in PAGES:
        for block in SHELL.findall(page.read_text()):
            found.extend((str(page.relative_to(ROOT)), line) for line in COMMAND.findall(block))
    return found


def test_the_pages_show_commands_on_the_examples() -> None:
    assert len(commands()) >= 4


@pytest.mark.parametrize(("page", "command"), commands(), ids=lambda value: value)
def test_a_shown_command_succeeds(page: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, shlex.split(command))
    assert done.exit_code == 0, f"{page}: tether {command}\n{done.output}"
