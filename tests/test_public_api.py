"""The curated public surface: ``__all__`` lists exactly the public names, sorted, all importable."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["tether", "tether.flow", "tether.engine", "tether.durable", "tether.models", "tether.testing",
            "tether.errors", "tether.stores", "tether.runtime", "tether.executors", "tether.workflow",
            "tether.workflow_host"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(getattr(module, "__all__", []))
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ names {item!r}, which it does not define"


def test_top_level_exports_are_exactly_the_public_names() -> None:
    import tether

    public = {n for n in vars(tether) if not n.startswith("_")}
    submodules = {n for n in public if type(getattr(tether, n)).__name__ == "module"}
    assert set(tether.__all__) == public - submodules
