"""``did you mean 'x'?``: the hint a definition problem gets when a name is a near miss of one
that exists (a node id, a field, a tool, an option's value)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["did_you_mean"]


def did_you_mean(name: Any, known: Iterable[Any]) -> str | None:
    """``did you mean 'x'?`` for the name in ``known`` nearest ``name``, or None (no near one)."""
    if not isinstance(name, str):
        return None
    close = difflib.get_close_matches(name, sorted({k for k in known if isinstance(k, str)}), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None
