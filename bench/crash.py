"""The crash measurement of issue 18: a charge behind an action, the worker SIGKILLed mid-turn.

For each store, ``--kills`` times: a worker process runs ``pay <n>`` (a fresh message id) on one
shared session and is SIGKILLed at an effect boundary (cycling through: before the started
record, between it and the charge, between the charge and its result record, after the result).
After each kill a restarted runtime either retries the same message id or sends the next message
(alternating). At the end every message is checked against the ledger the charge tool writes
outside every process (it applies an idempotency key once, like a payment API) and the transcript:

* charged twice: a message applied more than once;
* acknowledged, never charged: a message whose client got a success reply, not applied;
* replies to another message: a client's reply that is not ``paid <its n>``, or a ``paid <n>`` in
  the transcript that does not follow its own ``pay <n>``;
* charge calls repeated with the same key: the at-least-once window between the charge and its
  result record (applied once all the same: the key makes the retry harmless).

A killed message its client gave up on is completed by the next request (it is applied once, and
its reply is recorded in the transcript, after its own message); a worker killed while completing
another message's unfinished turn never took its own message.

    python bench/crash.py [--kills 24]
    TETHER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/crash.py
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "runtime"))

from crash_worker import BOUNDARIES, open_store, pay_agent

from tether import Message
from tether.runtime import Runtime
from tether.testing import FakeClock

WORKER = Path(__file__).resolve().parents[1] / "tests" / "runtime" / "crash_worker.py"


async def _kill(args: list[str], marker: Path) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WORKER), *args,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    while not marker.exists():
        if proc.returncode is not None:
            raise RuntimeError(f"worker exited: {(await proc.communicate())[1].decode()[-2000:]}")
        await asyncio.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    marker.unlink()


async def measure(kind: str, kills: int) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if kind == "sqlite":
            target, schema = str(directory / "tether.db"), ""
        else:
            target, schema = os.environ["TETHER_TEST_POSTGRES_URL"], f"tether_bench_{uuid.uuid4().hex[:12]}"
        runtime = Runtime(pay_agent(directory), store=open_store(kind, target, schema), clock=FakeClock())
        replies: dict[int, str] = {}  # acknowledged messages: amount -> the reply their client got

        async def send(amount: int, message_id: str) -> str:
            response = await runtime.run("Payer", Message(f"pay {amount}", id=message_id), session_id=session_id)
            if response.success:
                replies[amount] = response.message
            return response.session

        session_id: str | None = None
        session_id = await send(1, "m1")
        await runtime.close()
        for i in range(kills):
            amount, message_id = 100 + i, f"k{i}"
            await _kill([kind, target, schema, session_id, f"pay {amount}", message_id, BOUNDARIES[i % 4], tmp],
                        directory / "marker")
            runtime = Runtime(pay_agent(directory), store=open_store(kind, target, schema), clock=FakeClock())
            if (i // 4) % 2 == 0:  # the client retries the killed message; else it gives up on it
                await send(amount, message_id)
            await runtime.close()
        runtime = Runtime(pay_agent(directory), store=open_store(kind, target, schema), clock=FakeClock())
        await send(999, "last")
        transcript = [m.text for m in await runtime.store.transcript(session_id)]
        await runtime.close()
        if kind == "postgres":
            import psycopg

            async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        ledger = [json.loads(line) for line in (directory / "ledger.jsonl").read_text().splitlines()]
    applied = Counter(line["amount"] for line in ledger if line["applied"])
    calls = Counter(line["key"] for line in ledger)
    misplaced = [text for before, text in itertools.pairwise(transcript)
                 if text.startswith("paid") and before.replace("pay", "paid") != text]
    return {
        "kills": kills,
        "acknowledged": len(replies),
        "charged twice": sum(1 for n in applied.values() if n > 1),
        "acknowledged, never charged": sum(1 for a in replies if applied[a] == 0),
        "replies to another message": sum(1 for a, text in replies.items() if text != f"paid {a}") + len(misplaced),
        "charges applied": sum(applied.values()),
        "charge calls repeated with the same key": sum(1 for n in calls.values() if n > 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=24)
    args = parser.parse_args()
    kinds = ["sqlite"] + (["postgres"] if os.environ.get("TETHER_TEST_POSTGRES_URL") else [])
    for kind in kinds:
        print(kind, await measure(kind, args.kills), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
