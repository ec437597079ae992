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

Schema version 1 documents hold the window inline (``window_from`` None): they load as they are,
and :func:`upgrade_v1` stamps them version 2 (nothing else changes).
"""

from __future__ import annotations

from tether.engine.session import SESSION_SCHEMA_VERSION, Session, TranscriptMessage
from tether.stores import Store

__all__ = ["attach_window", "attached", "detach_window", "upgrade_v1"]


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


async def attach_window(store: Store, doc: Session) -> Session:
    """``doc`` (as loaded) with its window read back from the transcript records."""
    if doc.window_from is None:
        return doc
    window = await store.transcript(doc.id, after_seq=doc.window_from - 1) if doc.window_from <= doc.message_seq \
        else []
    return attached(doc, window)
