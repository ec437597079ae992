"""A worker process for the crash test: drains one workflow run on a store until it is killed.

Usage: ``python workflow_worker.py STORE_URL_OR_PATH RUN_ID WORKSPACE DEFINITION_JSON [SCHEMA]``
"""

from __future__ import annotations

import asyncio
import json
import sys

from tether.executors import SubprocessExecutor
from tether.stores import PostgresStore, SQLiteStore, Store
from tether.workflow_host import WorkflowRun


async def main() -> None:
    target, run_id, workspace, definition = sys.argv[1:5]
    schema = sys.argv[5] if len(sys.argv) > 5 else None
    store: Store = PostgresStore(target, schema=schema) if "://" in target else SQLiteStore(target)
    try:
        run = WorkflowRun(json.loads(definition), executor=SubprocessExecutor(grace=0.2), store=store,
                          run_id=run_id, workspace=workspace)
        await run.drain()
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
