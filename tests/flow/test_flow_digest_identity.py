"""A flow's digest describes the flow, not where its code was imported from: the same source
imported under two module names (another folder, a package path) has one digest; a change of
structure changes it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SOURCE = '''
from tether import Flow, action, collect, end, goto, on_message, reply, router

def lookup(state, ctx):
    return goto("found") if state.get("number") else goto("{missing}")

flow = Flow("orders", nodes=[
    collect("ask", fields=["number"], ask="${question}", on_complete=lambda data, state: goto("lookup")),
    action("lookup", lookup, targets=["found", "{missing}"]),
    router("found", when=lambda run: True, then="{missing}"),
    reply("{missing}", response="Not found.", next=end("done")),
], on=[on_message("order")])
'''


@pytest.fixture
def imported() -> Iterator[list[str]]:
    """Module names the test imported; forgotten afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def load(tmp_path: Path, folder: str, name: str, names: list[str], *, question: str = "Which order?",
         missing: str = "not_found") -> ModuleType:
    path = tmp_path / folder / "orders.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SOURCE.replace("{question}", question).replace("{missing}", missing))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    names.append(name)
    spec.loader.exec_module(module)
    return module


def test_the_same_code_under_another_folder_and_module_name_has_the_same_digest(tmp_path: Path,
                                                                               imported: list[str]) -> None:
    one = load(tmp_path, "release1", "_tether_app_orders_1a2b", imported)
    two = load(tmp_path, "release2/pkg", "pkg.orders", imported)
    assert one.flow.digest == two.flow.digest


def test_a_changed_structure_or_wording_changes_the_digest(tmp_path: Path, imported: list[str]) -> None:
    base = load(tmp_path, "a", "digest_a", imported).flow.digest
    assert load(tmp_path, "b", "digest_b", imported, question="Your order?").flow.digest != base
    assert load(tmp_path, "c", "digest_c", imported, missing="unknown").flow.digest != base
