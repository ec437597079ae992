"""``open_store``: a store from a URL or a path."""

from __future__ import annotations

import os
from typing import Any

from tether.errors import StoreError
from tether.stores.base import ClockLike, Store
from tether.stores.memory import MemoryStore
from tether.stores.postgres import PostgresStore
from tether.stores.sqlite import SQLiteStore

__all__ = ["open_store"]


def open_store(
    url_or_path: str | os.PathLike[str], *, clock: ClockLike | None = None, **options: Any
) -> Store:
    """The store a URL or path names. Nothing is opened yet: the first call connects.

    * ``memory:`` (or ``memory://``) -> ``MemoryStore``
    * ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a bare path -> ``SQLiteStore``
    * ``postgresql://...`` (or ``postgres://...``) -> ``PostgresStore`` (``options`` such as
      ``pool_size`` and ``schema`` are passed on)

    Raises ``StoreError`` for any other URL scheme.
    """
    target = os.fspath(url_or_path)
    if target in ("memory:", "memory://"):
        return MemoryStore(clock=clock)
    if target.startswith(("postgresql://", "postgres://")):
        return PostgresStore(target, clock=clock, **options)
    if target.startswith("sqlite://"):
        path = target.removeprefix("sqlite://")
        if not path.startswith("/") or path == "/":
            raise StoreError(
                f"invalid SQLite URL {target!r}: use sqlite:///relative.db or sqlite:////abs.db",
                operation="open",
            )
        return SQLiteStore(path[1:], clock=clock, **options)
    if "://" in target:
        raise StoreError(
            f"no store for {target!r}: use memory:, sqlite:///path, postgresql://... or a file path",
            operation="open",
        )
    return SQLiteStore(target, clock=clock, **options)
