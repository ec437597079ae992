"""``StepContext``: what an agent step's hooks and tool handlers see (``ctx``): the step's view
of the turn (:class:`~tether.engine.step.view.StepView`) and its nested work, child steps
(:mod:`tether.engine.step.children`) and batches of sessions (:mod:`tether.engine.step.batch`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tether.engine.step.batch import BatchResult, run_batch
from tether.engine.step.children import ParallelResult, run_child, run_children
from tether.engine.step.view import StepView

__all__ = ["StepContext"]


class StepContext(StepView):
    """The executing step's ``ctx``: its view of the turn, and the calls that run nested work.

    Attributes:
        node: the executing step's id; ``flow``: its flow's id.
    """

    async def run_step(self, step: Any, message: str | None = None) -> Any:
        """Run the agent step ``step`` (a node of this flow, or its id) as a child: its reply's
        content comes back. It cannot move the cursor; its state persists with this turn."""
        return await run_child(self._ts, self._run, self._flow, self, step, message)

    async def batch(self, items: Sequence[Any], flow: str, *, batch_size: int = 10,
                    config: Callable[[Any], Mapping[str, Any]] | None = None) -> BatchResult:
        """Start ``flow`` in one new session per item (``input=item``, config ``config(item)``),
        in sequential batches of ``batch_size``, each batch at once (see
        :mod:`tether.engine.step.batch`)."""
        return await run_batch(self._ts, self._run, self._flow, self, items, flow, batch_size=batch_size,
                               config=config)

    async def run_steps(self, requests: Sequence[Any], *, failure_policy: str = "retain-successes",
                        max_concurrency: int | None = None,
                        reducers: Mapping[str, Any] | None = None) -> ParallelResult:
        """Run child steps in parallel (see :mod:`tether.engine.step.children`): results in
        request order."""
        return await run_children(self._ts, self._run, self._flow, self, requests, failure_policy=failure_policy,
                                  max_concurrency=max_concurrency, reducers=reducers or {})
