"""A ``tether worker`` process for the worker tests: drives the store's queued runs until killed.

Usage: ``python runs_worker.py STORE_URL_OR_PATH SCHEMA LEASE`` (SCHEMA ``-`` for SQLite).
"""

from __future__ import annotations

import asyncio
import sys

from tether.stores import PostgresStore, SQLiteStore, Store
from tether.workflow_host import drive_stored_runs


async def main() -> None:
    target, schema, lease = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store: Store = PostgresStore(target, schema=schema) if "://" in target else SQLiteStore(target)
    try:
        await drive_stored_runs(store, poll=0.05, lease=lease)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
