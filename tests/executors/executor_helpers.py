"""Process helpers for the executor tests (imported by the tests and by conftest)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

PROC = Path("/proc")


def process_state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (``R``, ``S``, ``Z``...), or ``None`` if it is gone."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[0]


def is_dead(pid: int) -> bool:
    """``pid`` no longer runs: ``os.kill(pid, 0)`` finds nothing, or it is a zombie not yet reaped.

    Grandchildren are reparented to init, which here reaps lazily; a zombie is not running.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return process_state(pid) in (None, "Z", "X")


def live_descendants(root: int) -> set[int]:
    """Every non-zombie process whose ppid chain leads to ``root``."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] in ("Z", "X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def read_pids(path: Path) -> list[int]:
    """The pids a test command wrote to ``path``, one per line."""
    return [int(line) for line in path.read_text().split()]


async def wait_for_pids(path: Path, count: int, timeout: float = 5.0) -> list[int]:
    """Wait until ``path`` lists ``count`` pids (a test command writes them as it starts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            pids = read_pids(path)
            if len(pids) >= count:
                return pids
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} did not list {count} pids within {timeout}s")
