"""Every python sample of README.md and docs/ runs.

The blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), in a scratch directory that holds the files the page tells the reader to save
(``<!-- file: coffee.py -->`` before a fence). A top-level ``await`` is awaited, and so is every
``async def`` a block defines that takes no arguments, except tests. A test sample is run the way
its reader runs it: every sample that defines a ``test_`` function is (part of) a file the page
names (``<!-- file: test_coffee.py -->``), and ``pytest`` runs those files in the scratch directory,
with the page's ``pyproject.toml`` and ``conftest.py`` when it shows them, warnings counted as
failures. A block that is a fragment says so on the line before its fence, with the reason, which
the skip shows::

    <!-- not-run: needs a PostgreSQL server -->

Models are blocked here as in the whole suite: a sample runs with no model, or a scripted one.
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from doc_samples import PAGES, ROOT, Sample, page_id, samples, saved_files


def _no_arguments(fn: Any) -> bool:
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(fn).parameters.values())


async def run_sample(sample: Sample, namespace: dict[str, Any]) -> None:
    before = {name: id(value) for name, value in namespace.items()}
    padded = "\n" * (sample.line - 1) + sample.code  # tracebacks point at the page's own line numbers
    code = compile(padded, str(sample.page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    outcome = eval(code, namespace)
    if inspect.iscoroutine(outcome):
        await outcome
    for name, value in list(namespace.items()):
        if before.get(name) != id(value) and inspect.iscoroutinefunction(value) and _no_arguments(value) \
                and not name.startswith("test_"):  # tests run under pytest, from the files the page names
            await value()


RUNNABLE = [page for page in PAGES if any(s.not_run is None for s in samples(page))]
FRAGMENTS = [s for page in PAGES for s in samples(page) if s.not_run is not None]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
async def test_the_samples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))  # the files the page saves import each other
    _save(page, tmp_path)
    namespace: dict[str, Any] = {"__name__": f"sample_{page.stem}"}
    modules = set(sys.modules)
    try:
        for sample in samples(page):
            if sample.not_run is None:
                try:
                    await run_sample(sample, namespace)
                except Exception as exc:
                    raise AssertionError(f"the sample at {sample.where} fails: {type(exc).__name__}: {exc}. Make "
                                         "it run, or mark a fragment with <!-- not-run: why --> on the line before "
                                         "its fence") from exc
    finally:
        for name in set(sys.modules) - modules:  # a page's own modules (coffee) are not another page's
            if str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(tmp_path)):
                del sys.modules[name]


def _save(page: Path, directory: Path) -> list[Path]:
    """Write the files ``page`` tells the reader to save into ``directory``; the test files among them.
    A page that shows no ``pyproject.toml`` gets the one the Testing page sets pytest up with."""
    tests = []
    files = saved_files(page)
    files.setdefault("pyproject.toml", saved_files(ROOT / "docs" / "testing.md")["pyproject.toml"])
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if path.name.startswith("test_") and path.suffix == ".py":
            tests.append(path)
    return tests


TESTED = [page for page in PAGES if any(s.is_test_file for s in samples(page))]


@pytest.mark.slow
@pytest.mark.parametrize("page", TESTED, ids=page_id)
def test_the_test_files_of_a_page_pass_under_pytest(page: Path, tmp_path: Path) -> None:
    tests = _save(page, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "OPENAI_", "ANTHROPIC_", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *(path.name for path in tests)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, f"{page_id(page)}: pytest {[p.name for p in tests]} fails:\n{done.stdout}{done.stderr}"
    assert "warning" not in summary, f"{page_id(page)}: pytest warns:\n{done.stdout}"


def test_every_test_sample_is_in_a_file_the_page_names() -> None:
    loose = [sample.where for page in PAGES for sample in samples(page)
             if sample.not_run is None and not sample.is_test_file
             and any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
                     for node in ast.walk(ast.parse(sample.code)))]
    assert loose == [], "mark each test sample with <!-- file: test_NAME.py --> and say in the page where it goes"


@pytest.mark.parametrize("sample", FRAGMENTS, ids=lambda s: s.where)
def test_a_fragment_says_why_it_does_not_run(sample: Sample) -> None:
    assert len(sample.not_run or "") >= 10, f"{sample.where}: say why the sample does not run"
    pytest.skip(f"{sample.where} is not run: {sample.not_run}")


def test_the_runner_finds_the_samples_and_their_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\n<!-- not-run: needs a server -->\n```python\nserve()\n```\n"
                    "\n```sh\nls\n```\n")
    found = samples(page)
    assert [(s.line, s.code, s.not_run) for s in found] == [(4, "x = 1\n", None), (9, "serve()\n", "needs a server")]


async def test_the_runner_awaits_what_a_sample_defines(tmp_path: Path) -> None:
    sample = Sample(tmp_path / "page.md", 3, "async def check():\n    raise ValueError('ran')\n", None)
    with pytest.raises(ValueError, match="ran"):
        await run_sample(sample, {})
    top_level = Sample(tmp_path / "page.md", 3, "import asyncio\nawait asyncio.sleep(0)\nraise KeyError('x')\n", None)
    with pytest.raises(KeyError):
        await run_sample(top_level, {})
