"""The README's ``async def test_ship()`` passes in a fresh project configured as the README says
(pytest-asyncio's ``asyncio_mode = "auto"`` and its loop scope, with no warning), and does not
without that setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from doc_samples import ROOT, saved_files


def _project(where: Path, pyproject: str) -> Path:
    files = saved_files(ROOT / "README.md")  # the agent and its test, in the files the README names
    where.mkdir()
    (where / "pyproject.toml").write_text(pyproject)
    for name in ("shipping_bot.py", "test_shipping_bot.py"):
        (where / name).write_text(files[name])
    return where


def _pytest(project: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shipping_bot.py"],
                          cwd=project, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_the_readme_test_passes_with_the_setting_it_names(tmp_path: Path) -> None:
    project = _project(tmp_path / "fresh", '[tool.pytest.ini_options]\nasyncio_mode = "auto"\n'
                       'asyncio_default_fixture_loop_scope = "function"\n')
    output = _pytest(project)
    assert "1 passed" in output and "warning" not in output, output


def test_without_the_setting_it_does_not_run(tmp_path: Path) -> None:
    project = _project(tmp_path / "bare", "[tool.pytest.ini_options]\n")
    output = _pytest(project)
    assert "1 passed" not in output and "async def functions are not natively supported" in output
