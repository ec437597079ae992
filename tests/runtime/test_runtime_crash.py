"""A worker SIGKILLed at every effect boundary of a turn, on SQLite and PostgreSQL.

The turn (``crash_worker.pay_agent``): ``parse`` -> ``charge`` (one journaled tool call) -> ``done``
(``paid <n>``). The worker is killed before the started record, between it and the effect, between
the effect and its result record, or after the result. After a restart (a new runtime on the same
store), every committed turn is there, each message was charged exactly once (counted in a ledger
file written by the tool, outside every process), an effect in doubt was retried with the same
idempotency key, and every reply answers its own message.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from crash_worker import BOUNDARIES, open_store, pay_agent
from store_backends import DURABLE, require_postgres
from test_runtime_processes import kill_when_marked

from tether import Message
from tether.runtime import Runtime
from tether.testing import FakeClock

WORKER = Path(__file__).with_name("crash_worker.py")


async def _location(kind: str, tmp_path: Path) -> tuple[str, str]:
    if kind == "sqlite":
        return str(tmp_path / "tether.db"), ""
    import uuid

    return require_postgres(), f"tether_crash_{uuid.uuid4().hex[:12]}"


async def _drop(kind: str, target: str, schema: str) -> None:
    if kind == "postgres":
        import psycopg

        async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _ledger(directory: Path) -> list[dict[str, Any]]:
    path = directory / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _killed_turn(kind: str, target: str, schema: str, session_id: str, text: str, message_id: str,
                       boundary: str, directory: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), kind, target, schema, session_id, text, message_id, boundary, str(directory),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    await kill_when_marked(proc, directory / "marker")
    (directory / "marker").unlink()


async def _restart(kind: str, target: str, schema: str, directory: Path) -> Runtime:
    return Runtime(pay_agent(directory), store=open_store(kind, target, schema), clock=FakeClock())


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("kind", DURABLE)
@pytest.mark.parametrize("next_input", ["retry", "new-message"])
async def test_a_worker_killed_at_an_effect_boundary_loses_nothing_and_repeats_nothing(
        kind: str, boundary: str, next_input: str, tmp_path: Path) -> None:
    target, schema = await _location(kind, tmp_path)
    runtime = await _restart(kind, target, schema, tmp_path)
    try:
        first = await runtime.run("Payer", Message("pay 10", id="m1"))
        assert first.success and first.message == "paid 10", first
        session_id = first.session
        await _killed_turn(kind, target, schema, session_id, "pay 45", "m2", boundary, tmp_path)
        await runtime.close()

        runtime = await _restart(kind, target, schema, tmp_path)  # the restart
        if next_input == "retry":  # the client retries its message: it gets that message's own reply
            retried = await runtime.run("Payer", Message("pay 45", id="m2"), session_id=session_id)
            assert retried.success and retried.message == "paid 45", retried
        following = await runtime.run("Payer", Message("pay 12", id="m3"), session_id=session_id)
        assert following.success and following.message == "paid 12", following  # never another message's reply

        texts = [m.text for m in await runtime.store.transcript(session_id)]
        assert texts == ["pay 10", "paid 10", "pay 45", "paid 45", "pay 12", "paid 12"]
        stored = await runtime.store.load(session_id)
        assert stored is not None and stored.turn is None and stored.runs == [] and stored.data["charged"] == 12

        ledger = _ledger(tmp_path)
        applied = [line for line in ledger if line["applied"]]
        assert sorted(line["amount"] for line in applied) == [10, 12, 45]  # each message charged exactly once
        assert len({line["key"] for line in applied}) == 3
        calls_45 = [line for line in ledger if line["amount"] == 45]
        assert len({line["key"] for line in calls_45}) == 1  # one idempotency key for the effect, retries included
        # the tool itself ran twice only when it was killed after charging, before its result was recorded
        assert len(calls_45) == (2 if boundary == "effect" else 1)

        charges = [e for e in await runtime.store.journal(session_id) if e.kind == "tool"]
        assert [(e.name, e.status) for e in charges] == [("charge", "finished")] * 3
        entry_45 = next(e for e in charges if e.result["value"]["amount"] == 45)
        assert entry_45.idempotency_key == calls_45[0]["key"]
        assert entry_45.attempt == (2 if boundary in ("started", "effect") else 1)  # in doubt: started again
    finally:
        await runtime.close()
        await _drop(kind, target, schema)


SUSPEND_WORKER = Path(__file__).with_name("suspend_worker.py")


@pytest.mark.parametrize("kind", DURABLE)
@pytest.mark.parametrize("mode", ["refund", "pay"])
async def test_a_run_parked_by_one_process_is_resumed_by_another(kind: str, mode: str, tmp_path: Path) -> None:
    from journal_agents import payment_agent, refund_agent

    target, schema = await _location(kind, tmp_path)
    proc = await asyncio.create_subprocess_exec(sys.executable, str(SUSPEND_WORKER), mode, kind, target, schema,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-2000:]
    session_id = json.loads(out.decode().splitlines()[-1])["session"]
    refunds: list[int] = []
    agent = refund_agent(refunds) if mode == "refund" else payment_agent()
    runtime = Runtime(agent, store=open_store(kind, target, schema), clock=FakeClock())
    try:
        if mode == "refund":
            (pending,) = await runtime.pending_approvals(session_id)
            response = await runtime.approve(session_id, pending.key, True, feedback="fine", decided_by="ann")
            assert response.message == "refund approved by ann: fine" and refunds == [30]
        else:
            response = await runtime.signal(session_id, "paid", {"amount": 7}, signal_id="s1")
            assert response.message == "payment of 7 received"
        stored = await runtime.store.load(session_id)
        assert stored is not None and stored.runs == [] and stored.turn is None
    finally:
        await runtime.close()
        await _drop(kind, target, schema)
