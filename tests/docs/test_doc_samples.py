"""Every python sample of README.md and docs/ runs.

The blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), in a scratch directory. A top-level ``await`` is awaited, and so is every ``async def``
a block defines that takes no arguments (a sample's ``async def test_...():``). A block that is a
fragment says so on the line before its fence, with the reason, which the skip shows::

    <!-- not-run: needs a PostgreSQL server -->

Models are blocked here as in the whole suite: a sample runs with no model, or a scripted one.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from doc_samples import PAGES, Sample, page_id, samples


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
        if before.get(name) != id(value) and inspect.iscoroutinefunction(value) and _no_arguments(value):
            await value()


RUNNABLE = [page for page in PAGES if any(s.not_run is None for s in samples(page))]
FRAGMENTS = [s for page in PAGES for s in samples(page) if s.not_run is not None]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
async def test_the_samples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    namespace: dict[str, Any] = {"__name__": f"sample_{page.stem}"}
    for sample in samples(page):
        if sample.not_run is None:
            try:
                await run_sample(sample, namespace)
            except Exception as exc:
                raise AssertionError(f"the sample at {sample.where} fails: {type(exc).__name__}: {exc}. Make it "
                                     "run, or mark a fragment with <!-- not-run: why --> on the line before "
                                     "its fence") from exc


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
