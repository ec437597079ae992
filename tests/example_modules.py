"""Importing an example module by file name (``examples/`` is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str, *, as_name: str | None = None) -> ModuleType:
    """Import ``examples/<name>.py`` afresh, as module ``as_name`` (default ``example_<name>``)."""
    spec = importlib.util.spec_from_file_location(as_name or f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
