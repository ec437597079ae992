"""Several OS processes on one database: no lost update, and no wake claimed twice."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from store_backends import Backend, run_in_lockstep

from tether.engine.core.session import Session
from tether.stores import TurnRecords, WakeRequest
from tether.testing import FakeClock

WORKER = Path(__file__).with_name("store_worker.py")
N, K = 4, 25


async def run_workers(backend: Backend, args: list[list[str]]) -> list[dict[str, object]]:
    """Start one worker per argument list, release them together, return their JSON results."""
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(WORKER),
            extra[0],
            backend.name,
            backend.target,
            backend.schema or "-",
            *extra[1:],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for extra in args
    ]
    return await run_in_lockstep(procs)


async def test_processes_racing_load_increment_save_lose_no_update(
    durable: Backend, new_session: Callable[..., Session]
) -> None:
    store = await durable.make()
    doc = await store.create(new_session(data={"counter": 0}))
    results = await run_workers(durable, [["counter", doc.id, str(K)] for _ in range(N)])
    print("conflicts per worker:", [r["conflicts"] for r in results])
    assert sum(int(str(r["saves"])) for r in results) == N * K
    final = await store.load(doc.id)
    assert final is not None
    assert final.revision == N * K
    assert final.data["counter"] == N * K


@pytest.mark.parametrize(
    "durable", [pytest.param("postgres", marks=pytest.mark.postgres), "sqlite"], indirect=True
)
async def test_processes_claiming_wakes_never_claim_one_twice(
    durable: Backend, new_session: Callable[..., Session], clock: FakeClock
) -> None:
    store = await durable.make()
    t0 = clock.now()
    expected = set()
    for _ in range(10):
        doc = await store.create(
            new_session(),
            TurnRecords(wakes=[WakeRequest(key=f"w{i}", at=t0 - timedelta(seconds=i)) for i in range(20)]),
        )
        expected |= {(doc.id, f"w{i}") for i in range(20)}
    results = await run_workers(durable, [["claim", t0.isoformat(), f"worker-{n}"] for n in range(2)])
    print("claims per worker:", [len(r["claimed"]) for r in results])
    claims = [tuple(item) for r in results for item in r["claimed"]]
    assert len(claims) == len(set(claims)), "a wake was claimed twice"
    assert set(claims) == expected
    assert {w.worker for w in await store.pending_wakes()} <= {"worker-0", "worker-1"}
