"""Many worker processes on a few shared sessions: is any request lost, duplicated or misanswered?

``--processes`` OS processes (default 8) each run ``--turns`` requests (default 100) through their
own ``Runtime`` on one store, spreading them round-robin over ``--sessions`` shared sessions
(default 3), all released at once. Every request crosses nodes (``take`` -> ``mull`` ->
``answer``), so each turn saves mid-turn (two checkpoints, then the final save). Each request
carries a unique tag (its message id and turn context): ``take`` appends it to the session's
``seen`` list and the reply is ``echo <tag>``. Counted afterwards, from the stored sessions:

* lost: a request answered ``success`` whose tag is not in its session's ``seen``;
* duplicated: a tag in ``seen`` more than once (its turn ran twice);
* misanswered: a successful request whose reply is not ``echo <its tag>``;
* failed: requests answered ``success: false``, by code (and how many of them were applied
  anyway: a client retrying those with a new id would apply them twice);
* user messages in the transcript that are missing or stored twice.

``--no-lease`` replaces the store's session lease with nothing, to measure what compare-and-swap
alone gives (issue 18 measured 18% ``SESSION_CONFLICT`` on SQLite and 34% on PostgreSQL).

    python bench/contention.py [--store sqlite|postgres] [--processes 8] [--turns 100] [--sessions 3]
    TETHER_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/contention.py --store postgres

``tests/runtime/test_runtime_contention.py`` runs a reduced version of this.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tether import Agent, Flow, Message, TurnOptions, action, end, on_message, reply
from tether.runtime import Runtime
from tether.stores import PostgresStore, SQLiteStore, Store

PG_ENV = "TETHER_TEST_POSTGRES_URL"


def tally_agent() -> Agent:
    """Three nodes per turn: ``take`` records the request's tag, ``mull`` counts, ``answer`` echoes."""

    @action("take")
    async def take(state: dict[str, Any], ctx: Any) -> None:
        tag = str(ctx.context["tag"])
        ctx.set(seen=[*ctx.data.get("seen", []), tag], last=tag)

    @action("mull")
    async def mull(state: dict[str, Any], ctx: Any) -> None:
        await asyncio.sleep(0)  # let other tasks (and processes) run between the checkpoints
        ctx.set(mulled=int(ctx.data.get("mulled", 0)) + 1)

    answer = reply("answer", response=lambda state: f"echo {state['last']}", next=end("answered"))
    flow = Flow("tally", start=take, nodes=[take, mull, answer], on=[on_message(repeat="always")])
    return Agent("Tally", flows=[flow])


def open_store(kind: str, target: str, schema: str) -> Store:
    """A store on the shared location: a SQLite file, or a PostgreSQL URL and schema."""
    if kind == "sqlite":
        return SQLiteStore(target)
    return PostgresStore(target, schema=schema, pool_size=2)


async def request(runtime: Runtime, session_id: str | None, tag: str) -> dict[str, Any]:
    """One request; what the client saw."""
    response = await runtime.run("Tally", Message(tag, id=tag), session_id=session_id,
                                 options=TurnOptions(context={"tag": tag}))
    return {"tag": tag, "session": session_id, "success": response.success, "code": response.code,
            "reply": response.message, "answered_session": response.session}


async def worker(kind: str, target: str, schema: str, index: int, turns: int, sessions: list[str],
                 no_lease: bool) -> None:
    """A worker process: print ``ready``, wait for a stdin line, run its turns, print the results."""
    store = open_store(kind, target, schema)
    if no_lease:
        store.lease = lambda session_id, timeout=0.0: contextlib.nullcontext()  # type: ignore[method-assign,misc]
    runtime = Runtime(tally_agent(), store=store)
    try:
        await store.list(limit=1)  # connect before the start signal
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        results = [await request(runtime, sessions[turn % len(sessions)], f"w{index}-t{turn}")
                   for turn in range(turns)]
    finally:
        await runtime.close()
    print(json.dumps(results), flush=True)


@dataclass
class Report:
    """What the stored sessions say about the requests the workers made."""

    store: str
    requests: int = 0
    succeeded: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    misanswered: list[str] = field(default_factory=list)
    failed_by_code: dict[str, int] = field(default_factory=dict)
    failed_but_applied: list[str] = field(default_factory=list)
    transcript_missing: list[str] = field(default_factory=list)
    transcript_doubled: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def failure_rate(self, code: str) -> float:
        return self.failed_by_code.get(code, 0) / self.requests if self.requests else 0.0

    def clean(self) -> bool:
        """No request lost, duplicated or misanswered, and the transcript holds each once."""
        return not (self.lost or self.duplicated or self.misanswered or self.transcript_missing
                    or self.transcript_doubled)


async def _spawn(args: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__).resolve()), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _run_workers(args: list[list[str]], timeout: float) -> list[list[dict[str, Any]]]:
    procs = [await _spawn(a) for a in args]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            if line.strip() != b"ready":
                _, err = await proc.communicate()
                raise RuntimeError(f"worker did not start: {line!r} {err.decode()[-2000:]}")
        outputs = await asyncio.wait_for(asyncio.gather(*(p.communicate(b"go\n") for p in procs)), timeout)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed ({proc.returncode}): {err.decode()[-2000:]}")
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results


async def contend(kind: str, target: str, schema: str = "public", *, processes: int = 8, turns: int = 100,
                  sessions: int = 3, no_lease: bool = False, timeout: float = 600) -> Report:
    """Create ``sessions`` sessions, run the workers against them and check the stored result."""
    store = open_store(kind, target, schema)
    runtime = Runtime(tally_agent(), store=store)
    report = Report(store=kind)
    try:
        ids = []
        for n in range(sessions):
            first = await request(runtime, None, f"init-{n}")
            assert first["success"], first
            ids.append(first["answered_session"])
        started = time.perf_counter()
        args = [["worker", kind, target, schema, str(i), str(turns), ",".join(ids), "1" if no_lease else "0"]
                for i in range(processes)]
        results = [r for batch in await _run_workers(args, timeout) for r in batch]
        report.seconds = time.perf_counter() - started
        await _check(store, ids, results, report)
    finally:
        await runtime.close()
    return report


async def _check(store: Store, ids: list[str], results: list[dict[str, Any]], report: Report) -> None:
    seen: Counter[str] = Counter()
    in_transcript: Counter[str] = Counter()
    for session_id in ids:
        doc = await store.load(session_id)
        assert doc is not None, session_id
        seen.update(doc.data.get("seen", []))
        in_transcript.update(m.input_id for m in await store.transcript(session_id) if m.role == "user" and m.input_id)
    report.requests = len(results)
    failed: Counter[str] = Counter()
    for r in results:
        tag = r["tag"]
        if r["success"]:
            report.succeeded += 1
            if seen[tag] == 0:
                report.lost.append(tag)
            if r["reply"] != f"echo {tag}" or r["answered_session"] != r["session"]:
                report.misanswered.append(f"{tag}: {r['reply']!r}")
            if in_transcript[tag] == 0:
                report.transcript_missing.append(tag)
        else:
            failed[str(r["code"])] += 1
            if seen[tag]:
                report.failed_but_applied.append(tag)
        if in_transcript[tag] > 1:
            report.transcript_doubled.append(tag)
    report.duplicated = sorted(tag for tag, count in seen.items() if count > 1)
    report.failed_by_code = dict(failed)


def _print(report: Report) -> None:
    data = asdict(report)
    for key in ("lost", "duplicated", "misanswered", "failed_but_applied", "transcript_missing",
                "transcript_doubled"):
        data[key] = f"{len(data[key])} {data[key][:5]}" if data[key] else 0
    data["seconds"] = round(report.seconds, 2)
    data["conflict_rate"] = f"{100 * report.failure_rate('SESSION_CONFLICT'):.2f}%"
    print(json.dumps(data, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--no-lease", action="store_true", help="measure compare-and-swap alone")
    options = parser.parse_args()
    if options.store == "postgres":
        url = os.environ.get(PG_ENV)
        if not url:
            sys.exit(f"set {PG_ENV} to run against PostgreSQL")
        schema = f"tether_bench_{uuid.uuid4().hex[:10]}"
        try:
            report = asyncio.run(contend("postgres", url, schema, processes=options.processes,
                                         turns=options.turns, sessions=options.sessions, no_lease=options.no_lease))
        finally:
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = asyncio.run(contend("sqlite", str(Path(tmp) / "tether.db"), processes=options.processes,
                                         turns=options.turns, sessions=options.sessions, no_lease=options.no_lease))
    _print(report)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        kind, target, schema, index, turns, sessions, no_lease = sys.argv[2:9]
        asyncio.run(worker(kind, target, schema, int(index), int(turns), sessions.split(","), no_lease == "1"))
    else:
        main()
