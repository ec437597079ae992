"""A worker process for the session lease tests (run as a script, not collected).

    python lease_worker.py hold  <sqlite|postgres> <target> <schema> <session_id> <unused>
    python lease_worker.py count <sqlite|postgres> <target> <schema> <session_id> <loops>
    python lease_worker.py count-held <sqlite|postgres> <target> <schema> <session_id> <loops>

``hold`` takes the session's lease, prints ``held`` and sleeps (the parent SIGKILLs it).
``count`` prints ``ready``, waits for a line on stdin (so every worker starts at once), then
``loops`` times: under the lease, loads the session, yields to the event loop and saves it with
the counter bumped. It prints one JSON line: its saves and the conflicts it met. ``count-held``
does the same through ``lease_and_load`` and ``save_and_release`` (the runtime's way).
"""

from __future__ import annotations

import asyncio
import json
import sys

from store_worker import open_store

from tether.errors import SessionConflict
from tether.stores import Store


async def hold(store: Store, session_id: str) -> None:
    async with store.lease(session_id, timeout=60):
        print("held", flush=True)
        await asyncio.sleep(120)
    print("not killed", flush=True)


async def count(store: Store, session_id: str, loops: int) -> dict[str, int]:
    saves = conflicts = 0
    for _ in range(loops):
        async with store.lease(session_id, timeout=60):
            doc = await store.load(session_id)
            assert doc is not None
            await asyncio.sleep(0.001)  # a turn takes time: without the lease, others slip in here
            doc.data["counter"] = doc.data.get("counter", 0) + 1
            try:
                await store.save(doc, doc.revision)
            except SessionConflict:
                conflicts += 1
            else:
                saves += 1
    return {"saves": saves, "conflicts": conflicts}


async def count_held(store: Store, session_id: str, loops: int) -> dict[str, int]:
    saves = conflicts = 0
    for _ in range(loops):
        async with store.lease_and_load(session_id, timeout=60) as held:
            doc = await held.load()
            assert doc is not None
            await asyncio.sleep(0.001)
            doc.data["counter"] = doc.data.get("counter", 0) + 1
            try:
                await store.save_and_release(doc, doc.revision, None, held)
            except SessionConflict:
                conflicts += 1
            else:
                saves += 1
    return {"saves": saves, "conflicts": conflicts}


async def main(argv: list[str]) -> None:
    mode, kind, target, schema, session_id, loops = argv
    store = open_store(kind, target, schema)
    try:
        await store.list(limit=1)  # connect and migrate first
        if mode == "hold":
            await hold(store, session_id)
            return
        print("ready", flush=True)
        sys.stdin.readline()
        result = await (count_held if mode == "count-held" else count)(store, session_id, int(loops))
    finally:
        await store.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
