"""``StepView``: the executing agent step's view of the turn (what ``ctx`` reads and writes), the
execution frame of a child step, and how hooks are called.

The nesting calls (``ctx.run_step``, ``ctx.run_steps``, ``ctx.batch``) are added by
:class:`tether.engine.step.context.StepContext`, above the modules that run nested steps: the
modules below them see a step through this class only, so their imports point down."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from tether.errors import NodeFailedError, ToolError

if TYPE_CHECKING:
    from tether.engine.core.effects import Effects
    from tether.engine.core.session import MemorySpace, Run
    from tether.engine.core.state import TurnState
    from tether.flow.flow import Flow
    from tether.flow.steps import AgentNode

__all__ = ["Frame", "ParallelMutationError", "StepView", "call_hook"]


class ParallelMutationError(NodeFailedError):
    """A parallel child step tried to change what only its owner may (completion); the step fails."""

    code = "parallel-mutation"


@dataclass
class Frame:
    """A child step's execution frame (``ctx.run_step`` / ``ctx.run_steps``).

    ``depth`` counts nesting from the owning top-level step (1 for its children). A parallel child
    has a private ``memory`` and reads ``snapshot`` overlaid with its own ``writes``; a sequential
    child (``snapshot`` None) reads and writes the run's state and its namespace's memory.
    """

    depth: int
    key: str
    memory: MemorySpace | None = None
    snapshot: dict[str, Any] | None = None
    writes: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    commit: bool = True

    @property
    def parallel(self) -> bool:
        return self.snapshot is not None


async def call_hook(fn: Callable[..., Any] | None, *args: Any) -> Any:
    """Call a hook or handler (sync or async); None when there is none."""
    if fn is None:
        return None
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class StepView:
    """The executing step's view of the turn.

    Attributes:
        node: the executing step's id; ``flow``: its flow's id.
    """

    def __init__(self, ts: TurnState, run: Run, flow: Flow, node: AgentNode, effects: Effects | None = None,
                 frame: Frame | None = None) -> None:
        self._ts, self._run, self._flow, self._node = ts, run, flow, node
        self._frame = frame
        self._effects = effects
        """The journal of the step's model loop (set while it runs: ``ctx.tool`` journals there)."""
        self.node = node.id
        self.flow = flow.id

    @property
    def state(self) -> dict[str, Any]:
        """The run's state (session fields overlaid with the run's own); a copy. A parallel child
        reads its snapshot overlaid with its own writes."""
        if self._frame is not None and self._frame.snapshot is not None:
            return {**self._frame.snapshot, **self._frame.writes}
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
    def input(self) -> Any:
        """The run's input (what started its flow: ``Start(flow, input=...)``, ``ctx.batch``)."""
        return self._run.input

    @property
    def session_id(self) -> str:
        return self._ts.session.id

    @property
    def now(self) -> datetime:
        """The turn's time (aware UTC, from the agent's clock): what ``${today}`` reads, the same
        for every hook and handler of the turn ("is this check-in date in the past?")."""
        return self._ts.now

    async def tool(self, name: str, **arguments: Any) -> Any:
        """Call the agent tool ``name``, journaled: a re-dispatch of the turn returns the recorded
        result and the tool does not run twice (a ``ToolResult``'s data is written to the state)."""
        tool = self._ts.agent.tools_by_name.get(name)
        if tool is None:
            raise ToolError(f"flow {self.flow!r}, node {self.node!r}: ctx.tool({name!r}): the agent has no such tool")
        if self._effects is None:
            raise ToolError(f"flow {self.flow!r}, node {self.node!r}: ctx.tool() is for tool handlers and "
                            "on_response, not for step hooks")
        return await self._effects.tool(tool, arguments, lambda data: self._run.state.update(data))

    def set(self, **fields: Any) -> None:
        """Write fields into the run's state (saved with the turn); a parallel child writes its
        private state, published when the children join."""
        if self._frame is not None and self._frame.snapshot is not None:
            self._frame.writes.update(fields)
        else:
            self._run.state.update(fields)

    def complete(self) -> None:
        """Mark the session completed (a later request with its id starts a new session)."""
        if self._frame is not None and self._frame.parallel:
            raise ParallelMutationError(f"flow {self.flow!r}, node {self.node!r}: a parallel child step cannot "
                                        "complete the session", flow=self.flow, node=self.node)
        self._ts.session.status = "completed"

    def at(self, node: AgentNode, frame: Frame | None = None) -> Self:
        """A view of the same kind (a ``StepContext`` stays one) for ``node`` of this run,
        executing in ``frame`` (None: at top level)."""
        return type(self)(self._ts, self._run, self._flow, node, frame=frame)
