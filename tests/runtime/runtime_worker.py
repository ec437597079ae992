"""A worker process for the multi-process runtime tests (run as a script, not collected).

    python runtime_worker.py wakes   <postgres-url> <schema> <now-iso>
    python runtime_worker.py blocker <sqlite-path> <session-id> <marker-path>
    python runtime_worker.py relay   <sqlite-path> <session-id> <marker-path>

``wakes`` prints ``ready``, waits for a line on stdin (so every worker starts at once), fires due
wakes until none is left and prints one JSON line: the ``[session_id, key]`` pairs it fired.
``blocker`` runs one committed turn on the session (prints ``committed``), then a turn whose
action writes the marker file and sleeps: the parent kills the process during that turn.
``relay`` runs a ``relay_agent`` turn whose second node (``hold``, reached after the checkpoint
of the move prep -> hold) writes the marker file and sleeps: the parent kills it there.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_helpers import counter_agent, relay_agent, waiting_agent

from tether import Message, TurnOptions
from tether.runtime import RunResponse, Runtime
from tether.stores import PostgresStore, SQLiteStore
from tether.testing import FakeClock


class CountingRuntime(Runtime):
    """Remembers every wake it ran."""

    fired: list[list[str]]

    async def run(self, agent_id: str, message: Any = None, **kwargs: Any) -> RunResponse:
        response = await super().run(agent_id, message, **kwargs)
        if kwargs.get("wake"):
            self.fired.append([str(kwargs.get("session_id")), str(kwargs["wake"])])
        return response


async def wakes(url: str, schema: str, now: str) -> None:
    runtime = CountingRuntime(waiting_agent(), store=PostgresStore(url, schema=schema, pool_size=2),
                              clock=FakeClock(now))
    runtime.fired = []
    await runtime.store.list(limit=1)  # connect before the start signal
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        while await runtime.fire_due_wakes(limit=3):
            pass
    finally:
        await runtime.close()
    print(json.dumps({"fired": runtime.fired}), flush=True)


async def blocker(path: str, session_id: str, marker: str) -> None:
    async def block(tag: str) -> None:
        if tag == "block":
            Path(marker).write_text("in flight")
            await asyncio.sleep(120)

    runtime = Runtime(counter_agent(on_work=block), store=SQLiteStore(path), clock=FakeClock())
    committed = await runtime.run("Counter", Message("child", id="child-1"), session_id=session_id)
    assert committed.success and committed.session == session_id, committed
    print("committed", flush=True)
    await runtime.run("Counter", Message("blocked", id="child-2"), session_id=session_id,
                      options=TurnOptions(context={"tag": "block"}))
    print("not killed", flush=True)


async def relay(path: str, session_id: str, marker: str) -> None:
    async def hold(tag: str) -> None:
        if tag == "block":
            Path(marker).write_text("in flight")
            await asyncio.sleep(120)

    runtime = Runtime(relay_agent(on_hold=hold), store=SQLiteStore(path), clock=FakeClock())
    await runtime.run("Relay", Message("blocked", id="child-1"), session_id=session_id,
                      options=TurnOptions(context={"tag": "block"}))
    print("not killed", flush=True)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    asyncio.run({"wakes": wakes, "blocker": blocker, "relay": relay}[mode](*args))
