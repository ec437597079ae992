"""The README's ``async def test_ship()`` passes in a fresh project configured as the README says
(pytest-asyncio's ``asyncio_mode = "auto"``), and does not without that setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from doc_samples import ROOT, samples


def _project(where: Path, pyproject: str) -> Path:
    blocks = [s.code for s in samples(ROOT / "README.md")]
    agent = next(code for code in blocks if "agent = Agent(" in code)
    test = next(code for code in blocks if "async def test_ship" in code)
    where.mkdir()
    (where / "pyproject.toml").write_text(pyproject)
    (where / "test_shippy.py").write_text(agent + "\n\n" + test)
    return where


def _pytest(project: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shippy.py"],
                          cwd=project, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_the_readme_test_passes_with_the_setting_it_names(tmp_path: Path) -> None:
    project = _project(tmp_path / "fresh", '[tool.pytest.ini_options]\nasyncio_mode = "auto"\n')
    assert "1 passed" in _pytest(project)


def test_without_the_setting_it_does_not_run(tmp_path: Path) -> None:
    project = _project(tmp_path / "bare", "[tool.pytest.ini_options]\n")
    output = _pytest(project)
    assert "1 passed" not in output and "async def functions are not natively supported" in output
