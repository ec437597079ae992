"""The context window is stored as transcript records, not inside the session document.

A session's window (``Session.messages``: the last ``history_window`` messages, what the model
calls see) is the tail of its transcript, and the store already keeps every transcript message as
an append-only record written with the turn that said it. Keeping the window inline as well made
every save rewrite up to 40 messages (most of a steady-state document, written 1-5 times per
turn). So the runtime stores the document *detached*: ``messages`` empty and ``window_from`` the
``seq`` the window starts at; when it loads a document it *attaches* the window again, reading
the records from ``window_from`` on (one read). The engine only ever sees attached documents.

A window message the engine shortened in place (compaction's micro layer) is read back in full:
the compaction runs again, before any model call, when the window is over its budget.

Reading the window back is most of what loading costs (40 messages parsed and validated), so a
runtime keeps the windows it wrote last in a :class:`WindowCache`: the next request of the same
session, when the stored revision is still the one this runtime wrote, takes the window from it
instead of the store. Transcript records are append-only and never change once written, so a
cached window is exactly what the read would return; any other writer moves the revision on, and
the read is done again.

Schema version 1 documents hold the window inline (``window_from`` None): they load as they are,
and :func:`upgrade_v1` stamps them version 2 (nothing else changes).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

from tether.engine.session import SESSION_SCHEMA_VERSION, Session, TranscriptMessage
from tether.stores import Store

__all__ = ["WindowCache", "attach_window", "attached", "detach_window", "upgrade_v1"]

DEFAULT_WINDOW_CACHE = 256
"""How many sessions' windows a runtime keeps (the most recently written ones)."""


class WindowCache:
    """The stored windows of the sessions a runtime wrote last, bounded (least recently used out).

    An entry is the document's identity as this runtime wrote it (id, creation time, revision)
    and the transcript records from its ``window_from`` on. It answers only for that exact
    revision: a document another writer saved since (or a deleted and re-created one) misses.
    """

    def __init__(self, capacity: int = DEFAULT_WINDOW_CACHE) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[int, datetime, list[TranscriptMessage]]] = OrderedDict()

    def get(self, doc: Session) -> list[TranscriptMessage] | None:
        """The window of the detached ``doc`` (a copy of the list), or None when not known."""
        entry = self._entries.get(doc.id)
        if entry is None or doc.window_from is None:
            return None
        revision, created_at, window = entry
        if revision != doc.revision or created_at != doc.created_at:
            return None
        self._entries.move_to_end(doc.id)
        return [m for m in window if m.seq >= doc.window_from]

    def put(self, stored: Session, window: Sequence[TranscriptMessage]) -> list[TranscriptMessage]:
        """Remember the window of ``stored`` (a detached document as the store returned it) and
        return it: ``window`` holds at least every transcript record from its ``window_from`` on."""
        start = stored.window_from or 0
        kept = [m for m in window if m.seq >= start]
        if stored.window_from is not None and self.capacity > 0:
            self._entries[stored.id] = (stored.revision, stored.created_at, kept)
            self._entries.move_to_end(stored.id)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return kept

    def forget(self, session_id: str) -> None:
        """Drop the entry of ``session_id`` (if any)."""
        self._entries.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._entries)


def upgrade_v1(doc: Session) -> Session:
    """Version 1 -> 2: a version 1 document keeps its window inline, which version 2 reads as is."""
    if doc.schema_version != 1 or SESSION_SCHEMA_VERSION != 2:
        return doc
    return doc.model_copy(update={"schema_version": 2})


def detach_window(session: Session) -> Session:
    """The document to store: the window left out, ``window_from`` saying where it starts. A
    document already detached (loaded and saved again without a turn) is returned as it is."""
    if session.window_from is not None:
        return session
    start = session.messages[0].seq if session.messages else session.message_seq + 1
    return session.model_copy(update={"messages": [], "window_from": start})


def attached(stored: Session, window: list[TranscriptMessage]) -> Session:
    """``stored`` (as a store returned it) with the window the engine had in hand."""
    return stored.model_copy(update={"messages": list(window), "window_from": None})


async def attach_window(store: Store, doc: Session, cache: WindowCache | None = None) -> Session:
    """``doc`` (as loaded) with its window: from ``cache`` when it knows this revision, else read
    back from the transcript records."""
    if doc.window_from is None:
        return doc
    window = cache.get(doc) if cache is not None else None
    if window is None:
        window = await store.transcript(doc.id, after_seq=doc.window_from - 1) \
            if doc.window_from <= doc.message_seq else []
    return attached(doc, window)
