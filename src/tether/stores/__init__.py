"""Where sessions live: the ``Store`` contract and its backends.

* ``MemoryStore``: one process, nothing durable (tests).
* ``SQLiteStore``: the embedded default, one file, safe across processes on one host.
* ``PostgresStore``: safe across processes and hosts (``pip install 'tether[postgres]'``).

``open_store`` picks one from a URL or path.
"""

from __future__ import annotations

from tether.stores._open import open_store
from tether.stores.base import Store
from tether.stores.memory import MemoryStore
from tether.stores.postgres import PostgresStore
from tether.stores.records import JournalEntry, SessionSummary, StoredEvent, TurnRecords, Wake, WakeRequest
from tether.stores.sqlite import SQLiteStore

__all__ = [
    "JournalEntry",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SessionSummary",
    "Store",
    "StoredEvent",
    "TurnRecords",
    "Wake",
    "WakeRequest",
    "open_store",
]
