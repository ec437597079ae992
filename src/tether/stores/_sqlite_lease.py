"""The session lease of ``SQLiteStore``: an operating-system lock on one byte of a file beside the
database (``<database>-lease``), one byte per session.

Every process that opens the database runs on the same host (WAL mode needs the shared memory of
one host), so the kernel's record locks see every worker there is. Taking a session's lease is one
non-blocking ``fcntl`` call on the caller's thread: no transaction, no write, no fsync and no hop
to the store's thread. So a turn's store work is its load, its checkpoints and its final save, and
a turn that moves once commits twice. The kernel drops a process's locks when it exits, however
it exits (a SIGKILLed worker frees its sessions at once), and a holder never needs to renew: a
process that is alive keeps its sessions, one that is gone keeps none.

The byte of a session is taken from a hash of its id (64 bits, so two live sessions sharing one
byte is as likely as a 62-bit collision: they would only wait for each other).

POSIX record locks belong to a process, not to a file descriptor: a second lock on the same byte
from the same process succeeds, and closing *any* descriptor of the file drops every lock the
process holds on it. So each process opens a lease file once (:class:`LockFile`, shared by every
store of that database in the process, never closed) and keeps the bytes its own holders have in
a set of its own: within a process, that set decides; between processes, the kernel. A waiter
polls with a growing pause (2 ms up to 50 ms) until its timeout. Without ``fcntl`` (Windows) or
for a ``:memory:`` database, only the set is there: the lease is process-local.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from tether.errors import SessionLeaseTimeout, StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: process-local leases
    fcntl = None  # type: ignore[assignment]

__all__ = ["LockFile", "SQLiteLease", "lock_file"]

_FIRST_PAUSE, _MAX_PAUSE = 0.002, 0.05
log = logging.getLogger("tether.stores")
_BUSY = (errno.EAGAIN, errno.EACCES)


def _byte(session_id: str) -> int:
    """The offset of ``session_id``'s byte in the lease file (below 2**62: any ``off_t`` holds it)."""
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


class LockFile:
    """One lease file as this process holds it: its descriptor (None: process-local leases) and
    the bytes this process's holders have. Thread-safe: stores on several threads may share it."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fd: int | None = None
        if path is not None and fcntl is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._held: set[int] = set()
        self._mutex = threading.Lock()

    def try_take(self, offset: int) -> str | None:
        """Take the byte at ``offset``; None when taken, else who has it (for the error message).
        Raises ``StoreError`` when the system refuses the lock for another reason."""
        with self._mutex:
            if offset in self._held:
                return "another task of this process"
            if self.fd is not None:
                try:
                    fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
                except OSError as exc:
                    if exc.errno in _BUSY:
                        return "another process"
                    raise StoreError(f"could not lock the session lease file {str(self.path)!r}: {exc}",
                                     operation="lease") from exc
            self._held.add(offset)
            return None

    def release(self, offset: int) -> None:
        """Give the byte at ``offset`` back (nothing when this process does not hold it). An unlock
        the system refuses is logged: the lock then ends with the process."""
        with self._mutex:
            if offset not in self._held:
                return
            self._held.discard(offset)
            if self.fd is not None:
                try:
                    fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, offset, os.SEEK_SET)
                except OSError as exc:
                    log.error("could not unlock a session lease in %r: %s", str(self.path), exc)

    def forget(self) -> None:
        """Hold nothing (in a forked child: see ``_forget_holdings``)."""
        self._held = set()
        self._mutex = threading.Lock()

    def held(self) -> int:
        """How many sessions this process holds in this file."""
        return len(self._held)

    def held_besides(self, session_ids: Iterable[str | None]) -> int:
        """How many sessions this process holds in this file other than ``session_ids``."""
        held = self._held
        if not held:
            return 0
        return len(held) - len({_byte(session_id) for session_id in session_ids if session_id is not None} & held)


_files: dict[str, LockFile] = {}
_files_mutex = threading.Lock()


def lock_file(database: Path) -> LockFile:
    """The process's lease file of ``database`` (one per database file per process, found by its
    real path: a relative path or a symlink to it is the same file); a ``:memory:`` database gets
    process-local leases of its own. Raises ``StoreError`` when the file cannot be opened."""
    if str(database) == ":memory:":
        return LockFile(None)
    real = Path(os.path.realpath(database))
    path = real.with_name(real.name + "-lease")
    key = str(path)
    with _files_mutex:
        found = _files.get(key)
        if found is None:
            try:
                found = _files[key] = LockFile(path)
            except OSError as exc:
                raise StoreError(f"could not open the session lease file {key!r}: {exc}", operation="lease") from exc
        return found


def _forget_holdings() -> None:
    # a forked child holds none of its parent's locks (the kernel does not copy record locks): it
    # keeps the lease files (the inherited descriptors are its own now) with no byte held, and
    # fresh mutexes (the parent's may have been held by another thread at the fork)
    global _files_mutex
    _files_mutex = threading.Lock()
    for file in _files.values():
        file.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_holdings)


class SQLiteLease:
    """One holding of a session's lease, as an async context manager (``Store.lease``). ``file``
    gives the lease file when the lease is entered (it raises ``StoreError`` for a closed store or
    a file that cannot be opened), so every failure comes from the ``async with``."""

    __slots__ = ("_file", "_offset", "_open", "_timeout", "session_id")

    def __init__(self, file: Callable[[], LockFile], session_id: str, timeout: float) -> None:
        self._open = file
        self._file: LockFile | None = None
        self._offset = _byte(session_id)
        self._timeout = timeout
        self.session_id = session_id

    async def __aenter__(self) -> None:
        self._file = self._open()
        holder = self._file.try_take(self._offset)
        if holder is None:
            return
        deadline = time.monotonic() + self._timeout
        pause = _FIRST_PAUSE
        while holder is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionLeaseTimeout(self.session_id, timeout=self._timeout, holder=holder)
            await asyncio.sleep(min(left, pause * random.uniform(0.5, 1.5)))
            pause = min(pause * 2, _MAX_PAUSE)
            holder = self._file.try_take(self._offset)

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._file is not None:
            self._file.release(self._offset)
