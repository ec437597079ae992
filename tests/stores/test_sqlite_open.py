"""Opening one new SQLite file from several stores at once: the switch to WAL waits its turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tether.stores import SQLiteStore


async def test_stores_opening_a_new_file_at_once_all_open(tmp_path: Path) -> None:
    for round_ in range(20):  # each round a fresh file: the switch to WAL happens in that first open
        path = tmp_path / f"r{round_}.db"
        stores = [SQLiteStore(path) for _ in range(4)]
        try:
            listed = await asyncio.gather(*(store.list() for store in stores))
            assert listed == [[]] * 4
            mode = stores[0]._connection("test").execute("PRAGMA journal_mode").fetchone()
            assert mode == ("wal",)
        finally:
            for store in stores:
                await store.close()
