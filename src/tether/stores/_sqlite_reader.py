"""Point reads of ``SQLiteStore`` on the caller's thread: a document, a session's journal.

While the store's thread is idle, a read of a few rows by key costs less than the hop to that
thread and back (two thread wake-ups), so :class:`PointReader` makes it on a connection of its
own, on the caller's thread. It never waits there: its busy timeout is 0, so a locked database
answers at once and the read goes to the store's thread instead (:data:`ELSEWHERE`), as it does
while the reader serves another thread or before the store's connection has opened (and
migrated) the file. While the store's thread has calls in flight, ``SQLiteStore`` does not ask
this reader at all (see ``SQLiteStore._point_read``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ELSEWHERE", "PointReader"]

ELSEWHERE = object()
"""What :meth:`PointReader.read` returns for a read it did not make."""


class PointReader:
    """The caller's-thread connection of one store (see the module notes)."""

    def __init__(self) -> None:
        self.file: str | None = None  # the database file, by its absolute name, once the store opened it
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """``fn(connection)``, or :data:`ELSEWHERE` when it was not run here (other errors raise)."""
        if self.file is None or not self._lock.acquire(blocking=False):
            return ELSEWHERE
        try:
            if self._conn is None:
                conn = sqlite3.connect(self.file, timeout=0, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA query_only = ON")
                self._conn = conn
            return fn(self._conn)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return ELSEWHERE
            raise
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the connection; reads go to the store's thread from now on."""
        with self._lock:
            self.file = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None
