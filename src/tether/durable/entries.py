"""Journal entries: the durable record of one effect an action performed.

An effect is written first as *started* (``status="running"``) before it runs, then finalized
(``finished`` with its result, or ``error`` with its message, frozen) by an entry with the same
``key``. ``(session_id, key)`` is unique; a store replaces a started entry by its final one in
place, and never replaces a final entry: a recorded result never changes.

The key is deterministic: ``<run id>:<node id>:<visit>:<effect index>``, so a re-dispatch of the
same visit of a node (a replay, a continuation after a crash, a blocked verify) meets the same
keys in the same order and gets the recorded results back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["EffectKind", "JournalEntry", "JournalStatus", "effect_key"]

JournalStatus = Literal["running", "finished", "error"]

EffectKind = str
"""``tool``, ``now``, ``uuid``, ``model``, ``approval``, ``signal`` (stores accept any string)."""


def effect_key(step_key: str, index: int) -> str:
    """The key of effect number ``index`` (from 0) of the step ``run:node:visit``."""
    return f"{step_key}:{index}"


class JournalEntry(BaseModel):
    """One entry of the durable effect journal.

    Attributes:
        run_id: the run that performed the effect.
        key: the deterministic effect key, unique within the session.
        kind: what sort of effect it is (``tool``, ``now``, ``uuid``, ``model``, ``approval``,
            ``signal``, ...).
        status: ``running`` (started, no result yet), ``finished`` or ``error``.
        result: the JSON result of a finished effect.
        error: the error message of a failed effect.
        at: when this entry was written.
        name: what was called (the tool name, the signal name...).
        node_id: the node whose action performed the effect.
        request: the effect's frozen arguments (what an approver is shown, a tool's arguments).
        idempotency_key: the stable key an effect in doubt is retried with.
        attempt: how many times the effect was started (2 or more: it was in doubt).
    """

    model_config = ConfigDict(extra="forbid")

    run_id: str
    key: str
    kind: str
    status: JournalStatus = "running"
    result: Any = None
    error: str | None = None
    at: datetime
    name: str | None = None
    node_id: str | None = None
    request: Any = None
    idempotency_key: str | None = None
    attempt: int = 1

    @property
    def final(self) -> bool:
        """True once the effect has a result or a frozen error."""
        return self.status != "running"
