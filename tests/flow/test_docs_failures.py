"""docs/failures.md stays true: every python block runs, in order, in one namespace (an
``async def`` a block defines is awaited)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "failures.md"


async def test_every_python_block_of_the_failures_doc_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 3
    namespace: dict[str, Any] = {}
    awaited: list[str] = []
    for block in blocks:
        before = set(namespace)
        exec(compile(block, str(DOC), "exec"), namespace)
        for name in sorted(set(namespace) - before):
            if inspect.iscoroutinefunction(namespace[name]) and name.startswith("the_"):
                await namespace[name]()
                awaited.append(name)
    assert awaited == ["the_order_fails_loudly", "the_address_is_asked_again"]
