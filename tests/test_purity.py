"""The pure packages (tether.flow, tether.engine, tether.workflow) import no I/O and read no clock or randomness.

Time and ids reach them through the injected Clock and Ids ports. This walks the AST of every
module they contain, and of every tether module they import, and fails on a forbidden import or
call.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PURE_ROOTS = ("tether/flow", "tether/engine", "tether/durable", "tether/workflow", "tether/dialect")
# tether modules outside the pure packages that they may import (themselves checked too).
PURE_SHARED = {"tether.errors", "tether.pydantic_issues", "tether.models.types", "tether.models.parsing",
               "tether.executors.provenance",
               "tether.executors.values", "tether.spoken", "tether.syntax_errors", "tether.cel",
               "tether.templating", "tether.json_schemas"}
# The thin outer layer of a pure package: reads files and imports code, never imported by a pure module.
OUTER_LAYERS = {"tether.dialect", "tether.dialect.files"}
FORBIDDEN_MODULES = {
    "socket", "ssl", "select", "selectors", "sqlite3", "psycopg", "psycopg_pool", "httpx", "requests",
    "urllib", "http", "subprocess", "multiprocessing", "threading", "random", "secrets", "uuid", "os",
    "shutil", "pathlib", "tempfile", "time", "openai", "anthropic", "asyncio", "signal",
}
FORBIDDEN_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
                   ("time", "time"), ("uuid", "uuid4"), ("os", "getenv")}
FORBIDDEN_ATTRS = {("os", "environ")}


def _module_file(name: str) -> Path:
    base = SRC / name.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _pure_modules() -> list[str]:
    names: set[str] = set(PURE_SHARED)
    for root in PURE_ROOTS:
        for path in (SRC / root).rglob("*.py"):
            rel = path.relative_to(SRC).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.add(".".join(parts))
    return sorted(n for n in names if _module_file(n).exists() and n not in OUTER_LAYERS)


def _is_pure(name: str) -> bool:
    if name in OUTER_LAYERS:
        return False
    return name in PURE_SHARED or any(name == r.replace("/", ".") or name.startswith(r.replace("/", ".") + ".")
                                      for r in PURE_ROOTS)


def _problems(module: str) -> list[str]:
    tree = ast.parse(_module_file(module).read_text())
    found: list[str] = []
    for node in ast.walk(tree):
        imported: list[str] = []
        if isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in imported:
            top = name.split(".")[0]
            if top in FORBIDDEN_MODULES:
                found.append(f"{module}:{node.lineno} imports {name}")
            if top == "tether" and not _is_pure(name) and _module_file(name).exists():
                found.append(f"{module}:{node.lineno} imports impure tether module {name}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pair = (node.value.id, node.attr)
            if pair in FORBIDDEN_CALLS or pair in FORBIDDEN_ATTRS:
                found.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("module", _pure_modules())
def test_pure_module_has_no_io(module: str) -> None:
    assert _problems(module) == []


def test_the_checker_catches_io(tmp_path: Path) -> None:
    bad = SRC / "tether" / "engine" / "_purity_probe.py"
    bad.write_text("import os\nfrom datetime import datetime\nx = datetime.now()\ny = os.environ\n")
    try:
        problems = _problems("tether.engine._purity_probe")
    finally:
        bad.unlink()
    assert any("imports os" in p for p in problems)
    assert any("datetime.now" in p for p in problems)
    assert any("os.environ" in p for p in problems)
