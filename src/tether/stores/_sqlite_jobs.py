"""The writes of ``SQLiteStore`` as jobs for its thread (``_sqlite_thread``): one job, the error a
job gets when its group's transaction fails, and how many more writes a flushed group may wait for
(the commit delay).

The commit delay (``SQLiteStore(commit_delay=...)``; PostgreSQL's ``commit_delay`` and
``commit_siblings``): a group whose commit must be flushed is about to pay an fsync, and other
sessions of this process are mid-turn (their leases are held: :meth:`LockFile.held_besides`) with no
write in the group yet; their writes are on their way, and each would otherwise pay an fsync of
its own. So the group waits, at most ``commit_delay``, until as many writes as there are such
sessions have been queued, and commits them all at once. A lone session (no other lease held), a
group of checkpoints (no flush) or a delay of 0 never waits. The wait only moves the commit later:
nobody is answered before the commit that carries their write has returned, as without it.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tether.errors import StoreError
from tether.stores._sqlite_lease import LockFile

__all__ = ["DEFAULT_COMMIT_DELAY", "Job", "group_error", "siblings"]

DEFAULT_COMMIT_DELAY = 0.001
"""``SQLiteStore(commit_delay=...)``'s default, in seconds."""


@dataclass(slots=True)
class Job:
    """One write for the store's thread: ``fn`` runs inside the group's transaction."""

    operation: str
    session_id: str | None
    fn: Callable[[sqlite3.Connection], Any]
    flush: bool


def group_error(exc: BaseException, job: Job) -> StoreError:
    """The error a job gets when its group's transaction failed (each job its own instance)."""
    if isinstance(exc, StoreError):
        return StoreError(exc.message, operation=job.operation, session_id=job.session_id)
    error = StoreError(f"store {job.operation} failed: {type(exc).__name__}: {exc}", operation=job.operation,
                       session_id=job.session_id)
    error.__cause__ = exc
    return error


class _Leases(Protocol):
    _lease_file: LockFile | None


def siblings(store: weakref.ReferenceType[_Leases], jobs: list[Job]) -> int:
    """How many writes a group of ``jobs`` may wait for: the sessions of this process mid-turn
    (their leases held) beyond those with a write in the group, when the group needs a flush (else
    0). ``store`` is weak: the store's thread must not keep its store alive."""
    owner = store()
    file = owner._lease_file if owner is not None else None
    if file is None or not any(job.flush for job in jobs):
        return 0
    return file.held_besides(job.session_id for job in jobs)
