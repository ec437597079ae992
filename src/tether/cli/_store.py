"""Opening the store a command names with ``--db`` (a SQLite path or a store URL), and how a
table shows the time a document was saved."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tether.cli._output import CliError, one_line

if TYPE_CHECKING:  # opened when a command runs (``tether --help`` does not load the stores)
    from tether.stores import Store

__all__ = ["DEFAULT_DB", "db_argument", "open_db", "saved_when", "with_store"]

DEFAULT_DB = ".tether/tether.db"

T = TypeVar("T")


def open_db(db: str) -> Store:
    """The store at ``db`` (a path or a store URL); a SQLite file's directory is created."""
    from tether.stores import open_store

    if "://" not in db and db != "memory:":
        Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
        db = str(Path(db).expanduser())
    try:
        return open_store(db)
    except Exception as exc:
        raise CliError(f"cannot open store {db!r}: {one_line(str(exc))}") from None


def db_argument(db: str) -> str:
    """``db`` as a ``--db`` argument that works from any directory (a path made absolute)."""
    return db if "://" in db or db == "memory:" else str(Path(db).expanduser().resolve())


def with_store(db: str, work: Callable[[Store], Awaitable[T]], *, what: str = "session store") -> T:
    """Open the store at ``db``, run ``work`` on it, close it. A missing SQLite file is an error
    (``no <what> at <db>``)."""
    if "://" not in db and db != "memory:" and not Path(db).expanduser().is_file():
        raise CliError(f"no {what} at {db}", 1)

    from tether.stores import open_store

    async def run() -> T:
        store = open_store(str(Path(db).expanduser()) if "://" not in db else db)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(run())
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"store {db}: {one_line(str(exc))}", 1) from None


def saved_when(at: datetime) -> str:
    """A saved time as a table shows it (``2026-01-05 09:00:00``)."""
    return at.strftime("%Y-%m-%d %H:%M:%S")
