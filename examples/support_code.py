"""The code support.yaml names: its registered actions (a flow file holds no code).

They are support.py's own functions over its bundled order table, registered by name: a
registered action gets the state (merged with the node's ``args``) and the action context.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from tether.dialect import Registry


def _support_module() -> object:
    name = "_tether_example_support"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("support.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


support = _support_module()

registry = Registry.of(actions={
    "lookup": support.lookup,  # type: ignore[attr-defined]
    "known_order": support.known_order,  # type: ignore[attr-defined]
    "change_address": support.change_address,  # type: ignore[attr-defined]
    "refundable": support.refundable,  # type: ignore[attr-defined]
    "open_refund": support.open_refund,  # type: ignore[attr-defined]
})
