"""A worker process for the multi-process store tests (run as a script, not collected).

    python store_worker.py counter <sqlite|postgres> <target> <schema> <session_id> <loops>
    python store_worker.py claim   <sqlite|postgres> <target> <schema> <now-iso> <worker-name>

Prints ``ready``, waits for a line on stdin (so every worker starts at once), does its work and
prints one JSON line with the result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime

from tether.errors import SessionConflict
from tether.stores import PostgresStore, SQLiteStore, Store


def open_store(kind: str, target: str, schema: str) -> Store:
    if kind == "sqlite":
        return SQLiteStore(target)
    return PostgresStore(target, schema=schema, pool_size=2)


async def counter(store: Store, session_id: str, loops: int) -> dict[str, int]:
    saves = conflicts = 0
    while saves < loops:
        doc = await store.load(session_id)
        assert doc is not None
        doc.data["counter"] = doc.data.get("counter", 0) + 1
        try:
            await store.save(doc, doc.revision)
        except SessionConflict:
            conflicts += 1
        else:
            saves += 1
    return {"saves": saves, "conflicts": conflicts}


async def claim(store: Store, now: datetime, name: str) -> dict[str, list[list[str]]]:
    claimed: list[list[str]] = []
    while batch := await store.due_wakes(now, limit=7, lease=600, worker=name):
        claimed += [[w.session_id, w.key] for w in batch]
    return {"claimed": claimed}


async def main(argv: list[str]) -> None:
    mode, kind, target, schema, arg1, arg2 = argv
    store = open_store(kind, target, schema)
    await store.list(limit=1)  # connect and migrate before the start signal
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        if mode == "counter":
            result: object = await counter(store, arg1, int(arg2))
        else:
            result = await claim(store, datetime.fromisoformat(arg1), arg2)
    finally:
        await store.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
