"""Loading an example module by file name (examples/ is not a package)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from example_modules import load_example


@pytest.fixture
def example() -> Callable[[str], ModuleType]:
    """``example("hotel")``: the example module, freshly imported."""
    return load_example
