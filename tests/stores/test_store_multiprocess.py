"""Several OS processes on one database: no lost update, and no wake claimed twice."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from store_backends import Backend

from tether.engine.session import Session
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
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            if line.strip() != b"ready":
                _, err = await proc.communicate()
                pytest.fail(f"worker did not start: {line!r} {err.decode()[-2000:]}")
        outputs = await asyncio.wait_for(asyncio.gather(*(p.communicate(b"go\n") for p in procs)), 120)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results


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
