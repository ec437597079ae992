"""The context window and the seen message ids are stored as transcript records, not inside the
session document.

A session's window (``Session.messages``: the last ``history_window`` messages, what the model
calls see) is the tail of its transcript, and the store already keeps every transcript message as
an append-only record written with the turn that said it. Keeping the window inline as well made
every save rewrite up to 40 messages (most of a steady-state document, written 1-5 times per
turn). So the runtime stores the document *detached*: ``messages`` empty and ``window_from`` the
``seq`` the window starts at; when it loads a document it *attaches* the window again, reading
the records from ``window_from`` on. The engine only ever sees attached documents.

The seen message ids (``Session.inputs``: a repeated message id is a ``duplicate-input`` and gets
the reply its turn recorded) are the same kind of thing: every customer message's transcript
record carries its ``input_id``. So the stored document keeps only the ids no record carries
(delivered signal ids), and attaching reads the message ids back, in the same query as the
window: those of the customer messages among the last :data:`SEEN_HORIZON` transcript records,
the newest ``KEEP_INPUTS`` of them. The document no longer grows with them from turn 1 to 50. A
document written before (message ids inline) loads as it is: its ids are kept too.

A window message the engine shortened in place (compaction's micro layer) is read back in full:
the compaction runs again, before any model call, when the window is over its budget.

Reading the records back is most of what loading costs, so a runtime keeps what it wrote last in
a :class:`WindowCache`: the next request of the same session, when the stored revision is still
the one this runtime wrote, takes the window and the seen ids from it instead of the store.
Transcript records are append-only and never change once written, so a cached entry is exactly
what the read would return; any other writer moves the revision on, and the read is done again.

Schema version 1 documents hold the window inline (``window_from`` None): they load as they are,
and :func:`upgrade_builtin` stamps them (and version 2 documents, which only lack ``clarifying``)
the current version (nothing else changes).
"""

from __future__ import annotations

import bisect
import operator
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from tether.engine.core.session import KEEP_INPUTS, SESSION_SCHEMA_VERSION, Session, TranscriptMessage
from tether.engine.core.suspends import SIGNAL_IDS
from tether.stores import Store

__all__ = ["BUILTIN_UPGRADES", "SEEN_HORIZON", "Tail", "WindowCache", "attach_window", "attached", "detach_window",
           "read_tail", "upgrade_builtin"]

DEFAULT_WINDOW_CACHE = 256
"""How many sessions' windows a runtime keeps (the most recently written ones)."""

SEEN_HORIZON = 120
"""How many of the latest transcript records the seen message ids are read from."""

_SEP = "\x00"
_SIGNAL_MARK = _SEP + SIGNAL_IDS  # an id that starts with the prefix, in the ids joined by _SEP


@dataclass(frozen=True)
class Tail:
    """What the records hold of a detached document: its window (every record from
    ``window_from`` on) and its seen message ids (``(seq, input_id)`` of the newest customer
    messages within :data:`SEEN_HORIZON`)."""

    window: list[TranscriptMessage]
    seen: list[tuple[int, str]]

    def after(self, doc: Session, written: Iterable[TranscriptMessage]) -> Tail:
        """This tail with the records ``written`` since, for the detached ``doc`` they were
        written with (its ``window_from`` and ``message_seq``)."""
        written = list(written)
        return _tail(doc, [*self.window, *written], [*self.seen, *_ids(written)])

    @property
    def ids(self) -> list[str]:
        return [input_id for _, input_id in self.seen]


def _ids(records: Iterable[TranscriptMessage]) -> list[tuple[int, str]]:
    return [(m.seq, m.input_id) for m in records if m.role == "user" and m.input_id is not None]


def _tail(doc: Session, records: list[TranscriptMessage], seen: list[tuple[int, str]]) -> Tail:
    """``records`` and ``seen`` are in ``seq`` order (as read, then as written): the window and the
    ids kept are where a binary search puts them."""
    start = doc.window_from if doc.window_from is not None else doc.message_seq + 1
    horizon = doc.message_seq - SEEN_HORIZON
    window = records[bisect.bisect_left(records, start, key=_seq):]
    return Tail(window, seen[bisect.bisect_right(seen, horizon, key=_first):][-KEEP_INPUTS:])


_seq = operator.attrgetter("seq")  # bisect keys (C functions: a window is searched every save)
_first = operator.itemgetter(0)


class WindowCache:
    """The tails of the sessions a runtime wrote last, bounded (least recently used out).

    An entry is the document's identity as this runtime wrote it (id, creation time, revision)
    and its :class:`Tail`. It answers only for that exact revision: a document another writer
    saved since (or a deleted and re-created one) misses.
    """

    def __init__(self, capacity: int = DEFAULT_WINDOW_CACHE) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[int, datetime, Tail]] = OrderedDict()

    def get(self, doc: Session) -> Tail | None:
        """The tail of the detached ``doc``, or None when not known."""
        entry = self._entries.get(doc.id)
        if entry is None or entry[0] != doc.revision or entry[1] != doc.created_at:
            return None
        self._entries.move_to_end(doc.id)
        return entry[2]

    def put(self, stored: Session, tail: Tail) -> None:
        """Remember the tail of ``stored`` (a detached document as the store returned it)."""
        if stored.window_from is None or self.capacity <= 0:
            return
        self._entries[stored.id] = (stored.revision, stored.created_at, tail)
        self._entries.move_to_end(stored.id)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """Drop the entry of ``session_id`` (if any)."""
        self._entries.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._entries)


BUILTIN_UPGRADES = (1, 2, 3, 4)
"""The versions the runtime upgrades to the current one (5) by stamping it: a version 1 document
keeps its window inline, which is read as is; a version 2 document has no ``clarifying``, which
reads as empty (no clarification was asked); a version 3 document holds no person's message (kind
``agent``); a version 4 document has no ``completed_inputs``, which reads as empty (a message it
answered, resent, answers not completed)."""


def upgrade_builtin(doc: Session) -> Session:
    """Versions 1 to 4 -> 5 (see :data:`BUILTIN_UPGRADES`); any other document unchanged."""
    if doc.schema_version not in BUILTIN_UPGRADES or SESSION_SCHEMA_VERSION != 5:
        return doc
    return doc.model_copy(update={"schema_version": SESSION_SCHEMA_VERSION})


def detach_window(session: Session) -> Session:
    """The document to store: the window and the message ids left out, ``window_from`` saying where
    the window starts. A document already detached (loaded and saved again without a turn) is
    returned as it is."""
    if session.window_from is not None:
        return session
    start = session.messages[0].seq if session.messages else session.message_seq + 1
    kept = _signal_ids(session.inputs)  # what no transcript record carries
    return session.model_copy(update={"messages": [], "window_from": start, "inputs": kept})


def _signal_ids(inputs: list[str]) -> list[str]:
    """The delivered signal ids among the seen ids (most sessions have none: one substring search
    over the joined ids says so, before any id is looked at one by one)."""
    if not inputs or _SIGNAL_MARK not in _SEP + _SEP.join(inputs):
        return []
    return [i for i in inputs if i.startswith(SIGNAL_IDS)]


def attached(stored: Session, window: list[TranscriptMessage], inputs: list[str]) -> Session:
    """``stored`` with the window and seen ids the engine had in hand, set in place and returned:
    ``stored`` is a document its caller owns (a store's ``load`` and ``save`` return a new object
    every call), so no copy is made."""
    # set in the document's dict: no per-field work for a call made on every load and save
    fields = stored.__dict__
    fields["messages"] = list(window)
    fields["window_from"] = None
    fields["inputs"] = list(inputs)
    return stored


async def read_tail(store: Store, doc: Session, cache: WindowCache | None = None) -> Tail:
    """The tail of the detached ``doc``: from ``cache`` when it knows this revision, else read back
    from the transcript records (one read)."""
    tail = cache.get(doc) if cache is not None else None
    if tail is None:
        assert doc.window_from is not None
        first = max(1, min(doc.window_from, doc.message_seq - SEEN_HORIZON + 1))
        records = await store.transcript(doc.id, after_seq=first - 1) if first <= doc.message_seq else []
        tail = _tail(doc, records, _ids(records))
    return tail


def with_tail(doc: Session, tail: Tail) -> Session:
    """The detached ``doc`` (as a store returned it: the caller's own) attached in place: its
    window, and the seen message ids before its own ids."""
    ids = tail.ids
    if doc.inputs:  # signal ids (and, in a document written before, its message ids)
        known = set(ids)
        ids += [i for i in doc.inputs if i not in known]
    return attached(doc, tail.window, ids)


async def attach_window(store: Store, doc: Session, cache: WindowCache | None = None) -> Session:
    """A copy of ``doc`` (as loaded) with its window and seen message ids (see :func:`read_tail`)."""
    if doc.window_from is None:
        return doc
    return with_tail(doc.model_copy(), await read_tail(store, doc, cache))
