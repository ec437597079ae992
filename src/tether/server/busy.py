"""The agent's ``on_busy`` policy for a message arriving while a turn of the same session runs.

``queue`` (the default) lets the runtime's per-session FIFO lock order it behind the running
turn. ``reject`` answers 409 ``session-busy`` at once. ``interrupt`` sets the barge-in of the
turns of that session this server is running (``TurnOptions.barge_in``: the reply being spoken
stops where it is and its node runs again on the next message), then queues the new message.

"Running" means a request of this process holds or waits for the session's lock: a turn another
server process runs is not seen here (that message waits for the store's lease instead).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tether.agent import Agent
from tether.engine.core.inputs import TurnOptions
from tether.runtime.runtime import Runtime
from tether.server.problems import ApiError

__all__ = ["Admitted", "BusyGate"]


@dataclass(eq=False)
class Admitted:
    """A message turn admitted by :meth:`BusyGate.admit`: run it with ``options``. ``barge_in``
    is the event a later message sets under ``interrupt`` (None under the other policies)."""

    barge_in: asyncio.Event | None
    options: TurnOptions | None


class BusyGate:
    """Admits message turns under their agent's ``on_busy`` policy."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._turns: dict[str, list[Admitted]] = {}

    def admit(self, agent: Agent, session_id: str) -> Admitted:
        """Admit a message to ``session_id``; call :meth:`done` when its turn ends. Raises
        ``ApiError`` 409 ``session-busy`` under ``reject`` when a turn of the session runs here
        (admitted and not done, or holding the session's lock)."""
        running = self._turns.setdefault(session_id, [])
        if agent.on_busy == "reject" and (running or self.runtime.locks.busy(session_id)):
            if not running:
                del self._turns[session_id]
            raise ApiError(409, "session-busy",
                           f"session {session_id!r} is running a turn (agent {agent.id!r} rejects messages meanwhile)")
        if agent.on_busy != "interrupt":
            turn = Admitted(None, None)
        else:
            for earlier in running:
                if earlier.barge_in is not None:
                    earlier.barge_in.set()
            barge_in = asyncio.Event()
            turn = Admitted(barge_in, TurnOptions(barge_in=barge_in))
        running.append(turn)
        return turn

    def done(self, session_id: str, turn: Admitted) -> None:
        """Forget a turn that ended."""
        running = self._turns.get(session_id, [])
        if turn in running:
            running.remove(turn)
        if not running:
            self._turns.pop(session_id, None)

    def running(self, session_id: str) -> int:
        """How many admitted message turns of ``session_id`` run or wait here."""
        return len(self._turns.get(session_id, ()))
