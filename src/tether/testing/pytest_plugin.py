"""A pytest plugin that collects ``*.scenario.yaml`` files as tests.

Enable it with ``-p tether.testing.pytest_plugin`` (or ``pytest_plugins = ["tether.testing.pytest_plugin"]``
in a ``conftest.py``). Each scenario is one test (a file of several, a suite, is one test per
scenario, named by it); a failure shows every mismatched expectation with its diff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.testing.scenarios import SCENARIO_SUFFIX, ScenarioResult, read_scenarios, run_scenario

__all__ = ["ScenarioFile", "ScenarioItem", "pytest_collect_file"]


class ScenarioFailed(AssertionError):
    """The scenario ran, and some expectation did not hold."""

    def __init__(self, result: ScenarioResult) -> None:
        super().__init__(result.report())
        self.result = result


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(SCENARIO_SUFFIX):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        scenarios = read_scenarios(self.path)
        if len(scenarios) == 1:
            yield ScenarioItem.from_parent(self, name=self.path.name.removesuffix(SCENARIO_SUFFIX))
            return
        for scenario in scenarios:
            yield ScenarioItem.from_parent(self, name=scenario.scenario, scenario=scenario.scenario)


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario  # its name in a file of several (None: the file's one scenario)

    def runtest(self) -> None:
        result = asyncio.run(run_scenario(self.path, self.scenario))
        if not result.passed:
            raise ScenarioFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return f"scenario {excinfo.value.result.name!r} failed:\n{excinfo.value.result.report()}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario: {self.name}"
