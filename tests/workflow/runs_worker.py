"""A ``tether worker`` process for the worker tests: drives the store's runs until it is killed.

Usage: ``python runs_worker.py STORE_URL_OR_PATH [SCHEMA]``
"""

from __future__ import annotations

import asyncio
import sys

from tether.stores import PostgresStore, SQLiteStore, Store
from tether.workflow_host import drive_stored_runs


async def main() -> None:
    target = sys.argv[1]
    schema = sys.argv[2] if len(sys.argv) > 2 else None
    store: Store = PostgresStore(target, schema=schema) if "://" in target else SQLiteStore(target)
    try:
        await drive_stored_runs(store, poll=0.05)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
