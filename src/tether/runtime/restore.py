"""Restoring stored sessions: schema migrations, the restore hook and its helpers.

On every request for an existing, running session the runtime applies the registered
migrations (``MigrationRegistry``) to the loaded document, then calls the restore hook
``on_restore(doc) -> doc | None`` the user supplied. Its returned document is saved at once
(compare-and-swap) before the turn, even if unchanged; ``None`` starts a new session with a new id
and keeps the old document. With no hook the runtime applies :func:`default_restore`'s version
check without that save (the document is unchanged), unless the migrations upgraded it: a
document of another version that no migration upgraded fails the request with
``SESSION_VERSION_UNSUPPORTED`` and stays as it is (it is never silently replaced).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeAlias

from pydantic import ValidationError

from tether.engine.core.session import SESSION_SCHEMA_VERSION, Session
from tether.errors import SessionFlowInvariant, SessionVersionUnsupported
from tether.stores.base import utc

__all__ = [
    "MigrationRegistry",
    "RestoreHook",
    "Upgrade",
    "call_restore_hook",
    "check_supported",
    "default_restore",
    "is_session_current",
    "session_idle",
]

Upgrade: TypeAlias = Callable[[dict[str, Any]], dict[str, Any]]
"""An upgrade function: the document as a JSON-ready dict in, the upgraded dict out."""

RestoreHook: TypeAlias = Callable[[Session], Awaitable[Session | None] | Session | None]
"""``on_restore(doc)``: the document to continue with, or None for a new session."""


def is_session_current(doc: Session) -> bool:
    """True when ``doc`` has the schema version this tether writes."""
    return doc.schema_version == SESSION_SCHEMA_VERSION


def check_supported(doc: Session) -> None:
    """Raise ``SessionVersionUnsupported`` when ``doc`` was written by a newer tether.

    An older document is the migrations' and the restore hook's business; a newer one must not
    be run (this code does not know its shape) nor replaced by a new session (during a rolling
    deploy that would fork every conversation a newer worker touched).
    """
    if doc.schema_version > SESSION_SCHEMA_VERSION:
        raise SessionVersionUnsupported(doc.id, stored=doc.schema_version, supported=SESSION_SCHEMA_VERSION)


def default_restore(doc: Session) -> Session | None:
    """The default restore hook: the document when it is current; one of another version (that
    the migrations did not upgrade) raises ``SessionVersionUnsupported``, and is kept as it is:
    never silently replaced by a new session. A hook of your own may return None to start over."""
    if not is_session_current(doc):
        raise SessionVersionUnsupported(doc.id, stored=doc.schema_version, supported=SESSION_SCHEMA_VERSION,
                                        operation="restore")
    return doc


def session_idle(doc: Session, now: datetime) -> timedelta:
    """How long the session has been idle at ``now``: the time since its last save.

    For idle-expiry hooks::

        def on_restore(doc):
            doc = default_restore(doc)
            if doc is not None and session_idle(doc, clock.now()) >= timedelta(minutes=30):
                return None
            return doc
    """
    last = doc.saved_at or doc.created_at
    return max(timedelta(0), utc(now) - utc(last))


async def call_restore_hook(hook: RestoreHook, doc: Session) -> Session | None:
    """Run a sync or async restore hook on a private copy of ``doc``; check what it returns.

    A returned document must keep the session's ``id`` and ``agent``
    (``SessionFlowInvariant`` otherwise).
    """
    returned = hook(doc.model_copy(deep=True))
    if inspect.isawaitable(returned):
        returned = await returned
    if returned is None:
        return None
    if not isinstance(returned, Session):
        raise TypeError(f"the restore hook returned {type(returned).__name__}, not a Session or None")
    if returned.id != doc.id or returned.agent != doc.agent:
        raise SessionFlowInvariant(
            f"Session {doc.id!r}: the restore hook changed the session's id or agent "
            f"({returned.id!r}/{returned.agent!r}).",
            operation="restore",
            session_id=doc.id,
        )
    return returned


class MigrationRegistry:
    """Versioned upgrades of the session document, applied on load.

    Each upgrade is keyed by the version it upgrades *from* and stamps the version it upgrades
    *to* (``from_version + 1`` unless told otherwise)::

        migrations = MigrationRegistry()

        @migrations.register(0)
        def rename_fields(doc):
            doc["data"] = doc.pop("fields", doc.get("data", {}))
            return doc

    Upgrades run in a chain until no upgrade starts at the document's version. A document
    already at a version no upgrade starts from is returned unchanged, so applying the registry
    twice changes nothing.
    """

    def __init__(self) -> None:
        self._upgrades: dict[int, tuple[int, Upgrade]] = {}

    def register(self, from_version: int, upgrade: Upgrade | None = None, *,
                 to_version: int | None = None) -> Any:
        """Register ``upgrade`` from ``from_version`` (usable as a decorator). ``to_version``
        must be greater than ``from_version``; one upgrade per starting version."""
        target = from_version + 1 if to_version is None else to_version
        if target <= from_version:
            raise ValueError(f"a migration must move forward: {from_version} -> {target}")
        if from_version in self._upgrades:
            raise ValueError(f"a migration from version {from_version} is already registered")

        def add(fn: Upgrade) -> Upgrade:
            self._upgrades[from_version] = (target, fn)
            return fn

        return add(upgrade) if upgrade is not None else add

    @property
    def versions(self) -> list[int]:
        """The versions upgrades start from, sorted."""
        return sorted(self._upgrades)

    def __len__(self) -> int:
        return len(self._upgrades)

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Upgrade a JSON-ready document dict; returns a new dict (the input is not mutated)."""
        current = dict(doc)
        version = current.get("schema_version")
        while isinstance(version, int) and version in self._upgrades:
            target, upgrade = self._upgrades[version]
            current = dict(upgrade(current))
            current["schema_version"] = target
            version = target
        return current

    def migrate(self, session: Session) -> Session:
        """Upgrade a loaded session (dump, upgrade, validate); unchanged when nothing applies.

        A document that no longer validates after its upgrades raises ``SessionFlowInvariant``.
        """
        if session.schema_version not in self._upgrades:
            return session
        raw = self.apply(session.model_dump(mode="json"))
        try:
            return Session.model_validate(raw)
        except ValidationError as exc:
            raise SessionFlowInvariant(
                f"Session {session.id!r} is malformed after its migrations: {exc}",
                operation="migrate",
                session_id=session.id,
            ) from exc
