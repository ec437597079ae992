"""``ctx.batch``: one new session per item, in sequential batches, each batch at once (seed 004's
concurrent steps, through the host rather than an HTTP call to itself).

Before the first batch the owner's session is saved (the pre-run checkpoint). Each item starts
``flow`` in a new session of the same agent, with ``input=item`` and the config
``config(item)`` (none by default). A failed item is logged (``error``) and reported, never
retried. The batch's result is journaled: a re-dispatch of the same turn returns it without
spawning again (a worker that dies mid-batch spawns the whole batch again: at least once).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.engine.step.children import gather
from tether.errors import NodeFailedError

if TYPE_CHECKING:
    from tether.engine.core.session import Run
    from tether.engine.core.state import TurnState
    from tether.engine.step.view import StepView
    from tether.flow.flow import Flow

__all__ = ["DEFAULT_BATCH_SIZE", "BatchItem", "BatchResult", "run_batch"]

DEFAULT_BATCH_SIZE = 10


@dataclass(frozen=True)
class BatchItem:
    """What one item's session did: its ``session`` id, ``success`` and reply ``message``, or
    the ``error`` that kept it from running."""

    index: int
    session: str
    success: bool
    message: str
    error: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """Every item's outcome, in item order."""

    items: tuple[BatchItem, ...]

    @property
    def failed(self) -> list[BatchItem]:
        return [item for item in self.items if not item.success]


async def run_batch(ts: TurnState, run: Run, flow: Flow, owner: StepView, items: Sequence[Any], target: str, *,
                    batch_size: int, config: Callable[[Any], Mapping[str, Any]] | None) -> BatchResult:
    where = f"flow {flow.id!r}, node {owner.node!r}"
    spawn = ts.options.spawn
    if spawn is None:
        raise NodeFailedError(f"{where}: batch() starts sessions through the runtime; run the agent in a Runtime",
                              flow=flow.id, node=owner.node)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise NodeFailedError(f"{where}: batch_size must be a positive integer, got {batch_size!r}", flow=flow.id,
                              node=owner.node)
    if target not in ts.agent.flows_by_id:
        raise NodeFailedError(f"{where}: batch() names flow {target!r}, which the agent does not have",
                              flow=flow.id, node=owner.node)
    effects = owner._effects
    if effects is None:
        raise NodeFailedError(f"{where}: batch() is for tool handlers and on_response", flow=flow.id, node=owner.node)

    async def spawn_all() -> list[dict[str, Any]]:
        await ts.checkpoint()  # the pre-run checkpoint
        return await _spawn_all(ts, spawn, list(items), target, batch_size, config)

    recorded = await effects.computed("batch", target, spawn_all)
    return BatchResult(tuple(BatchItem(**entry) for entry in recorded))


async def _spawn_all(ts: TurnState, spawn: Callable[..., Awaitable[Any]], items: list[Any], target: str,
                     batch_size: int, config: Callable[[Any], Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    outcomes: list[dict[str, Any]] = [{} for _ in items]
    chunks = [list(range(start, min(start + batch_size, len(items)))) for start in range(0, len(items), batch_size)]
    for number, chunk in enumerate(chunks, 1):
        ts.log("log", f"Processing batch {number}/{len(chunks)} (batch size:{len(chunk)})")

        def one(index: int) -> Callable[[], Awaitable[None]]:
            async def go() -> None:
                try:
                    response = await spawn(target, items[index], dict(config(items[index])) if config else None)
                    outcomes[index] = {"index": index, "session": str(response.session),
                                       "success": bool(response.success), "message": str(response.message),
                                       "error": None if response.success else str(response.message)}
                except Exception as exc:  # logged and reported, not retried
                    outcomes[index] = {"index": index, "session": "", "success": False, "message": "",
                                       "error": f"{type(exc).__name__}: {exc}"}
                if not outcomes[index]["success"]:
                    ts.log("error", f"batch item {index} failed: {outcomes[index]['error']}", flow=target)

            return go

        await gather(ts, [one(index) for index in chunk], None)
        ts.log("log", f"Batch {number} completed.")
    return outcomes
