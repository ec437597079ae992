"""The applied reading of an understand reply (what Decide acts on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Judgement"]


@dataclass
class Judgement:
    """The applied reading of the understand reply."""

    flows: dict[str, float] = field(default_factory=dict)
    mentions: dict[str, bool] = field(default_factory=dict)
    extract: dict[str, dict[str, Any]] = field(default_factory=dict)
    branches: dict[tuple[str, str, int], bool] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    collect: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """Per ``(run or flow, node)``: the values read for a step's fields; ``None`` where the model
    said the message does not give that field (an explicit null)."""
    asks: bool | None = None
    intent: str | None = None
    """A repair intent the message carries (``cancel``, ``chitchat``, ``completed``, ``skip``)."""
    called: bool = False
