"""A worker process for the crash tests (run as a script, not collected).

    python crash_worker.py <sqlite|postgres> <target> <schema> <session-id> <text> <message-id> <kill-at> <dir>

Runs one ``pay_agent`` message turn on the session. The agent blocks (after writing ``<dir>/marker``)
at the effect boundary named ``kill-at`` so the parent can SIGKILL it there:

- ``before``: in the charge action, before ``ctx.tool`` (before the started record);
- ``started``: inside the tool, before the charge (between the started record and the effect);
- ``effect``: inside the tool, after the charge (between the effect and its result record);
- ``after``: in the charge action, after ``ctx.tool`` returned (after the result record).

The charge tool appends every call to ``<dir>/ledger.jsonl`` (outside any process): its
idempotency key, the amount, and whether it was applied. Like a payment API it applies a key once.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tether import Agent, Flow, Message, action, end, on_message, reply, tool
from tether.runtime import Runtime
from tether.stores import PostgresStore, SQLiteStore, Store
from tether.testing import FakeClock

BOUNDARIES = ("before", "started", "effect", "after")


def pay_agent(directory: Path, kill_at: str = "") -> Agent:
    """``pay <n>``: ``parse`` reads the amount, ``charge`` charges it (one journaled tool call) and
    ``done`` answers ``paid <n>`` verbatim. Two moves, so two checkpoints, around the effect's writes."""
    ledger = directory / "ledger.jsonl"

    def boundary(name: str) -> None:
        if name == kill_at:
            (directory / "marker").write_text(name)
            time.sleep(120)  # the parent kills the process here

    @tool
    def charge(amount: int, idempotency_key: str) -> dict[str, Any]:
        """Charge ``amount`` (idempotent on the key, like a payment API)."""
        boundary("started")
        lines = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
        applied = not any(line["key"] == idempotency_key and line["applied"] for line in lines)
        with ledger.open("a") as out:
            out.write(json.dumps({"key": idempotency_key, "amount": amount, "applied": applied,
                                  "pid": os.getpid()}) + "\n")
        boundary("effect")
        return {"charge_id": f"ch_{amount}", "amount": amount}

    @action("parse")
    async def parse(state: dict[str, Any], ctx: Any) -> None:
        ctx.set(amount=int(str(ctx.message).split()[-1]))

    @action("charge")
    async def charge_step(state: dict[str, Any], ctx: Any) -> None:
        boundary("before")
        receipt = await ctx.tool("charge", amount=state["amount"])
        ctx.set(charged=receipt["amount"])
        boundary("after")

    done = reply("done", response=lambda state: f"paid {state['charged']}", next=end("paid"))
    flow = Flow("pay", start=parse, nodes=[parse, charge_step, done], on=[on_message(repeat="always")])
    return Agent("Payer", flows=[flow], tools=[charge])


def open_store(kind: str, target: str, schema: str) -> Store:
    return SQLiteStore(target) if kind == "sqlite" else PostgresStore(target, schema=schema, pool_size=2)


async def main(kind: str, target: str, schema: str, session_id: str, text: str, message_id: str, kill_at: str,
               directory: str) -> None:
    runtime = Runtime(pay_agent(Path(directory), kill_at), store=open_store(kind, target, schema), clock=FakeClock())
    try:
        response = await runtime.run("Payer", Message(text, id=message_id), session_id=session_id)
    finally:
        await runtime.close()
    print(json.dumps({"success": response.success, "message": response.message}), flush=True)


if __name__ == "__main__":
    # run the module's own copy (not ``__main__``'s): the flow's digest names its functions by module,
    # and the restarted runtime in the parent imports them from ``crash_worker``
    import crash_worker

    asyncio.run(crash_worker.main(*sys.argv[1:]))
