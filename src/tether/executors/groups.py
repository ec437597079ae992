"""The registry of live process groups, and the shutdown sweep that kills them.

Every process the executor spawns leads its own session and process group, so a kill reaches
the command's own children, but the group no longer receives the runtime's terminal signals.
To never leave such work behind, each group is registered while it may have live members and
:func:`kill_all_live_groups` SIGKILLs whatever is still registered; it runs at interpreter exit
(``atexit``) and may be called explicitly (e.g. from a signal handler or a host's shutdown).

A group id equals the pid of its leader. Linux does not reuse a pid while it still names a
process group, so signalling a registered group can only reach that group's own members.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from pathlib import Path

__all__ = ["group_alive", "kill_all_live_groups", "live_groups", "register_group", "unregister_group"]

_lock = threading.Lock()
_live: dict[int, str] = {}
_PROC = Path("/proc")


def register_group(pgid: int, node: str) -> None:
    """Record that process group ``pgid`` (spawned for ``node``) may have live members."""
    with _lock:
        _live[pgid] = node


def unregister_group(pgid: int) -> None:
    """Forget ``pgid`` (call only once the group is known to be gone)."""
    with _lock:
        _live.pop(pgid, None)


def live_groups() -> dict[int, str]:
    """A snapshot of the registered groups: pgid -> node id."""
    with _lock:
        return dict(_live)


def _has_running_member(pgid: int) -> bool:
    """Whether ``/proc`` shows a member of ``pgid`` that is not a zombie (True if unknowable)."""
    if not _PROC.is_dir():
        return True
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a running member.

    Zombies do not count: a member orphaned to an init that reaps lazily is dead, even while
    it still answers ``killpg(pgid, 0)``.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_running_member(pgid)


def kill_all_live_groups() -> list[int]:
    """SIGKILL every registered process group and forget it; returns the pgids signalled."""
    with _lock:
        pgids = sorted(_live)
        _live.clear()
    signalled: list[int] = []
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        signalled.append(pgid)
    return signalled


atexit.register(kill_all_live_groups)
