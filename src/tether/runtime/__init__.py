"""tether.runtime: the host that runs turns with persistence.

``Runtime(agents, store=...)`` follows the request lifecycle of seed 004: per-session FIFO lock,
registry lookup, model validation before any session I/O, load or create, agent-match and
invariant checks, migrations and the restore hook, the turn (saved at every move to another node),
the compare-and-swap save with the rest of the turn's records, and a ``RunResponse`` envelope
(``run`` never raises). It also ends, releases and deletes sessions and delivers decisions and
signals to parked runs (``complete``, ``release``, ``delete``, ``approve``, ``signal``: see
:mod:`tether.runtime.lifecycle`), fires due wakes (``fire_due_wakes``, ``start_scheduler``) and
re-derives them (``rebuild_schedule``).
"""

from tether.runtime.envelope import CONTENT_TYPE, RunResponse
from tether.runtime.locks import SessionLocks
from tether.runtime.records import turn_records
from tether.runtime.restore import (
    MigrationRegistry,
    RestoreHook,
    Upgrade,
    default_restore,
    is_session_current,
    session_idle,
)
from tether.runtime.runtime import ConflictPolicy, Runtime
from tether.runtime.scheduler import WakeScheduler
from tether.runtime.selections import check_model_selections

__all__ = [
    "CONTENT_TYPE",
    "ConflictPolicy",
    "MigrationRegistry",
    "RestoreHook",
    "RunResponse",
    "Runtime",
    "SessionLocks",
    "Upgrade",
    "WakeScheduler",
    "check_model_selections",
    "default_restore",
    "is_session_current",
    "session_idle",
    "turn_records",
]
