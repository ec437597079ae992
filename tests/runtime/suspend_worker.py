"""A worker process for the suspend tests (run as a script, not collected).

    python suspend_worker.py <refund|pay> <sqlite|postgres> <target> <schema>

Runs one message turn of ``refund_agent`` (parks on an approval) or ``payment_agent`` (parks on a
signal) in a new session, prints ``{"session": ...}`` and exits: the parent decides in another
process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crash_worker import open_store
from journal_agents import payment_agent, refund_agent

from tether import Message
from tether.runtime import Runtime
from tether.testing import FakeClock


async def main(mode: str, kind: str, target: str, schema: str) -> None:
    agent = refund_agent([]) if mode == "refund" else payment_agent()
    runtime = Runtime(agent, store=open_store(kind, target, schema), clock=FakeClock())
    try:
        response = await runtime.run(agent.id, Message("please", id="w1"))
    finally:
        await runtime.close()
    print(json.dumps({"session": response.session, "success": response.success}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
