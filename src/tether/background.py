"""``BackgroundTask``: one asyncio task a runtime or server keeps running beside its requests (the
wake scheduler, the stored flow refresh, the workflow run queue), started in the running loop and
stopped by cancelling it. A subclass gives its ``name`` and its ``_loop``; the loop logs its
errors, it never raises them."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["BackgroundTask"]


class BackgroundTask:
    """One named background task: ``start`` it in the running loop, ``stop`` it."""

    name = "tether-background"

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """True while the task runs."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the task in the running event loop (no-op when it runs already)."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait for it."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        raise NotImplementedError
