"""The effect journal as one turn sees it: what was recorded before, and what this turn writes."""

from __future__ import annotations

from collections.abc import Iterable

from tether.durable.entries import JournalEntry

__all__ = ["EffectJournal"]


class EffectJournal:
    """Entries by key: the ones recorded before the turn (loaded by the host) overlaid with the
    ones this turn wrote. ``written`` lists this turn's entries in order; the host persists them
    with the session (a mid-turn write flushes what is not written yet)."""

    def __init__(self, recorded: Iterable[JournalEntry] = ()) -> None:
        self._entries: dict[str, JournalEntry] = {entry.key: entry for entry in recorded}
        self.written: list[JournalEntry] = []

    def get(self, key: str) -> JournalEntry | None:
        """The latest entry for ``key``, or None."""
        return self._entries.get(key)

    def record(self, entry: JournalEntry) -> None:
        """Add ``entry``; a final entry is never replaced (an attempt to is a bug: it raises)."""
        kept = self._entries.get(entry.key)
        if kept is not None and kept.final:
            raise ValueError(f"journal entry {entry.key!r} is final ({kept.status}) and cannot be replaced")
        self._entries[entry.key] = entry
        self.written.append(entry)

    def entries(self, run_id: str | None = None) -> list[JournalEntry]:
        """Every known entry (optionally one run's)."""
        return [e for e in self._entries.values() if run_id is None or e.run_id == run_id]
