"""Why a run's loop stops without leaving the flow, and statically declared targets: the small
values every node handler returns to the loop (:mod:`tether.engine.graph.runner`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ASKING", "ENDED", "Pause", "Static"]


@dataclass(frozen=True)
class Pause:
    """Why a run's loop stopped without leaving the flow."""

    kind: Literal["asking", "speak", "waiting", "ended"]


ENDED = Pause("ended")
ASKING = Pause("asking")


@dataclass(frozen=True)
class Static:
    """A statically declared target of node options (``then``, ``else_``, ``on_fail``, branch
    ``then``...): a node id, a registered node, ``NEXT``, ``"end"`` or a transition."""

    target: Any
