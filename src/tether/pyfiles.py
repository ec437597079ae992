"""Importing a Python file by its path, as a named module (an app file, a flow file's ``code``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["import_python_file"]


def import_python_file(name: str, path: Path) -> ModuleType | None:
    """Run the file at ``path`` as the module ``name`` and return it (None when Python cannot
    load it as a module). The module is in ``sys.modules`` while it runs, so it can import itself
    and define dataclasses; when running it raises, it is removed again and the error propagates."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
