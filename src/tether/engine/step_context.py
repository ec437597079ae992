"""``StepContext``: what an agent step's hooks and tool handlers see (``ctx``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.engine.effects import Effects
    from tether.engine.session import Run
    from tether.engine.state import TurnState
    from tether.flow.flow import Flow
    from tether.flow.steps import AgentNode

__all__ = ["StepContext", "call_hook"]


async def call_hook(fn: Callable[..., Any] | None, *args: Any) -> Any:
    """Call a hook or handler (sync or async); None when there is none."""
    if fn is None:
        return None
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class StepContext:
    """The executing step's view of the turn.

    Attributes:
        node: the executing step's id; ``flow``: its flow's id.
    """

    def __init__(self, ts: TurnState, run: Run, flow: Flow, node: AgentNode, effects: Effects | None = None) -> None:
        self._ts, self._run, self._flow, self._node = ts, run, flow, node
        self._effects = effects
        """The journal of the step's model loop (set while it runs: ``ctx.tool`` journals there)."""
        self.node = node.id
        self.flow = flow.id

    @property
    def state(self) -> dict[str, Any]:
        """The run's state (session fields overlaid with the run's own); a copy."""
        return self._ts.state_view(self._run)

    @property
    def config(self) -> Mapping[str, Any]:
        """The request ``config`` the session was created with. A later request's config does not
        reconfigure a running session: the stored one wins (seed 004)."""
        stored = self._ts.session.metadata.get("config")
        return dict(stored) if isinstance(stored, Mapping) else {}

    @property
    def message(self) -> str | None:
        """This turn's customer message, if there is one."""
        return self._ts.message.text if self._ts.message is not None else None

    @property
    def session_id(self) -> str:
        return self._ts.session.id

    async def tool(self, name: str, **arguments: Any) -> Any:
        """Call the agent tool ``name``, journaled: a re-dispatch of the turn returns the recorded
        result and the tool does not run twice (a ``ToolResult``'s data is written to the state)."""
        from tether.errors import ToolError

        tool = self._ts.agent.tools_by_name.get(name)
        if tool is None:
            raise ToolError(f"flow {self.flow!r}, node {self.node!r}: ctx.tool({name!r}): the agent has no such tool")
        if self._effects is None:
            raise ToolError(f"flow {self.flow!r}, node {self.node!r}: ctx.tool() is for tool handlers and "
                            "on_response, not for step hooks")
        return await self._effects.tool(tool, arguments, lambda data: self._run.state.update(data))

    def set(self, **fields: Any) -> None:
        """Write fields into the run's state (saved with the turn)."""
        self._run.state.update(fields)

    def complete(self) -> None:
        """Mark the session completed (a later request with its id starts a new session)."""
        self._ts.session.status = "completed"
