"""Durable execution: the effect journal behind an action's ``ctx``, approvals, signals, and the
mark an unfinished turn leaves (pure: no I/O; the runtime and the stores persist what it records).
See ``docs/durability.md``."""

from tether.durable.decisions import ApprovalDecision, SignalResult
from tether.durable.entries import JournalEntry, JournalStatus, effect_key
from tether.durable.journal import EffectJournal
from tether.durable.turns import OpenTurn

__all__ = [
    "ApprovalDecision",
    "EffectJournal",
    "JournalEntry",
    "JournalStatus",
    "OpenTurn",
    "SignalResult",
    "effect_key",
]
