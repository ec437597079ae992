"""What the drivers of one workflow run use of it: :class:`RunHost`.

The agent driver, the sub-flow host and the subprompt runner each work on a run
(:class:`tether.workflow_host._run.WorkflowRun` is the one implementation) through this Protocol,
so they sit below the run, which calls them; a sub-flow's child run is made by a callable the
run passes down (:class:`tether.workflow_host._subflow.SubflowHost`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from tether.executors.provenance import Binding
    from tether.models.types import Model, Usage
    from tether.workflow import NodeState, WorkflowGraph, WorkflowSnapshot, ops

__all__ = ["RunHost"]


class RunHost(Protocol):
    """One workflow run as its drivers see it."""

    @property
    def graph(self) -> WorkflowGraph: ...
    @property
    def snapshot(self) -> WorkflowSnapshot: ...
    @property
    def run_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def ancestry(self) -> tuple[str, ...]: ...
    @property
    def max_tool_rounds(self) -> int: ...
    @property
    def journal(self) -> list[dict[str, Any]]: ...
    @property
    def aborts(self) -> dict[str, asyncio.Event]: ...

    def node(self, node_id: str) -> NodeState:
        """The state of ``node_id``."""
        ...

    def model_for(self, tier: str) -> Model | None:
        """The model of ``tier`` (``None``: no default configured)."""
        ...

    def resolve(self, flow: str) -> WorkflowGraph:
        """The workflow ``flow`` for a sub-flow node (``KeyError`` when unknown)."""
        ...

    async def count_model_call(self, usage: Usage) -> None:
        """Count one model call and its tokens on the run (and on a sub-flow's parent)."""
        ...

    async def apply(self, *changes: ops.Change) -> WorkflowSnapshot:
        """Apply ``changes`` in order, saving after each."""
        ...

    async def flush_journal(self) -> None:
        """Save the journal entries waiting for the next change now."""
        ...

    async def resolve_or_fail(self, node_id: str) -> dict[str, Binding] | None:
        """The node's bindings; ``None`` when the node waits or was just failed."""
        ...

    async def drain(self) -> WorkflowSnapshot:
        """Advance until only human or agent work (or nothing) is left."""
        ...

    async def advance(self, *, max_turns: int = 50) -> WorkflowSnapshot:
        """Drain, then give the agent turns until it waits for a human or has nothing to do."""
        ...

    async def apply_approval(self, node_id: str, decision: Literal["approved", "rejected"], *,
                             feedback: str | None = None, decided_by: str | None = None,
                             response: Any = None) -> WorkflowSnapshot:
        """Decide the pending approval of ``node_id``."""
        ...

    async def request_approval(self, node_id: str, summary: str | None = None) -> WorkflowSnapshot:
        """A fresh approval request on a gate whose last request was rejected."""
        ...

    async def apply_input(self, node_id: str, response: Any, *, provided_by: str | None = None) -> WorkflowSnapshot:
        """Answer ``node_id``'s input request."""
        ...
