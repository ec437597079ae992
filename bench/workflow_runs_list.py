"""``GET /v1/workflow-runs`` over many stored runs: a page, and a filter nothing matches (which
reads every run of the tenant, since what a run waits on is read from its document).

Stores ``--runs`` runs of a two-node workflow (a function, then a gate) in a fresh SQLite file
through ``queue_run`` (the path of ``POST /v1/workflows/{id}/runs``), then times, as the median of
``--repeat`` requests through the ASGI app: the first page (``limit=50``), the first page
``waiting=worker`` (every run waits on a worker: the page fills at once), and ``waiting=approval``
(no run matches: the whole list is read).

    python bench/workflow_runs_list.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tether.runtime import Runtime
from tether.server import create_app
from tether.stores import SQLiteStore
from tether.workflow_host import queue_run

WORKFLOW = {"schemaVersion": 2, "id": "ship", "version": "1", "name": "ship", "edges": [
    {"id": "build->sign", "source": "build", "target": "sign", "type": "flow"}], "nodes": [
    {"id": "build", "label": "Build", "description": "build", "run": {"kind": "function", "command": "true"}},
    {"id": "sign", "label": "Sign", "description": "sign", "run": {"kind": "gate", "prompt": "ship?",
                                                                   "schema": {"kind": "text"}}}]}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "flows").mkdir()
        file = root / "flows" / "ship.json"
        file.write_text(json.dumps(WORKFLOW))
        store = SQLiteStore(root / "runs.db")
        for start in range(0, args.runs, 100):  # concurrent saves share commits
            await asyncio.gather(*(queue_run(store, file, workspace=root, run_id=f"r{i:06d}")
                                   for i in range(start, min(start + 100, args.runs))))
        runtime = Runtime([], store=store)
        app = create_app(runtime, api_keys={}, scheduler=False, workflows=root / "flows")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            for query in ("limit=50", "limit=50&waiting=worker", "limit=50&waiting=approval"):
                times = []
                for _ in range(args.repeat):
                    began = time.perf_counter()
                    page = (await client.get(f"/v1/workflow-runs?{query}")).json()
                    times.append((time.perf_counter() - began) * 1000)
                print(f"{args.runs} runs, GET /v1/workflow-runs?{query}: {len(page['runs'])} rows, "
                      f"median {statistics.median(times):.1f} ms")
        await runtime.close()


if __name__ == "__main__":
    asyncio.run(main())
