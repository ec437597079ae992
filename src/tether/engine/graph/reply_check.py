"""Model replies are held to the JSON Schema that was sent: one mechanism for the ``understand``,
``extract`` and ``decide`` calls.

The reply is validated with ``jsonschema`` (Draft 2020-12, the dialect pydantic emits) against the
exact schema of the request. What an invalid part means depends on the call, by its *entry depth*:
the level at which the reply holds independent answers.

- ``understand`` (entries at depth 2: ``flows.<id>``, ``fields.<name>``, ``branches.q1``, ...; and
  ``asks`` at depth 1): an invalid entry is dropped, the rest of the judgement stands; a key the
  call did not offer is dropped; a missing entry is no answer. A reply with nothing valid left is
  an empty judgement (seed 003: the call still counts).
- ``extract`` (entries at depth 1: one per field): an invalid or unoffered field is dropped.
- ``decide`` (entry depth 0: the decision is one value): any error refuses the whole reply.

Every drop is reported as a :class:`Dropped` (path and reason) so the caller can log it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tether.engine.core.events import ReplyWarning
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.flow.fields import coerce
from tether.models.parsing import MAX_REPLY_DEPTH, json_depth

if TYPE_CHECKING:  # jsonschema is imported at the first reply checked, not with tether
    from jsonschema import Draft202012Validator

__all__ = ["Dropped", "check_reply", "coerce_field_values", "describe_dropped", "report_dropped"]


@dataclass(frozen=True)
class Dropped:
    """One part of a reply that was not accepted: ``path`` (``fields.email``, ``$`` for the whole
    reply) and why."""

    path: str
    reason: str
    code: str = "bad-value"
    """``unknown-field`` for a key the call did not offer, ``not-in-enum`` for a value outside an
    enum, else ``bad-value`` (seed 003's field codes)."""


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _path_text(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path) if path else "$"


def _remove(value: Any, path: tuple[Any, ...]) -> Any:
    """``value`` without the entry at ``path`` (cut at the first list index: the list goes whole)."""
    for i, part in enumerate(path):
        if isinstance(part, int):
            path = path[:i]
            break
    if not path:
        return None
    parent = value
    for part in path[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    return value


def check_reply(value: Any, schema: Mapping[str, Any], *, entry_depth: int,
                section_depths: Mapping[str, int] | None = None) -> tuple[Any, list[Dropped]]:
    """Validate ``value`` against ``schema``; returns what is left (None when nothing is) and what
    was dropped. Entries are the parts at ``entry_depth`` levels below the root: an error inside one
    drops it; a key not offered (``additionalProperties: false``) above that level is dropped; a
    missing required key above it is no answer and not reported; any other error above it drops
    the object that holds it. ``section_depths`` overrides the depth under some top-level keys
    (understand's ``collect`` section holds one object of fields per step: entries at depth 3)."""
    if json_depth(value) > MAX_REPLY_DEPTH:
        return None, [Dropped("$", f"nested deeper than {MAX_REPLY_DEPTH} levels")]
    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    errors = list(validator.iter_errors(value))
    if not errors:
        return value, []
    drops: dict[tuple[Any, ...], tuple[str, str]] = {}
    for error in errors:
        path = tuple(error.absolute_path)
        depth = entry_depth
        if section_depths and path and path[0] in section_depths:
            depth = section_depths[path[0]]
        if len(path) < depth and error.validator == "additionalProperties" and isinstance(error.instance, dict):
            offered = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
            for key in error.instance:
                if key not in offered:
                    drops.setdefault((*path, key), ("not offered", "unknown-field"))
        elif len(path) < depth and error.validator == "required":
            continue
        else:
            code = "not-in-enum" if error.validator == "enum" else "bad-value"
            drops.setdefault(path[:depth], (error.message[:200], code))
    kept = copy.deepcopy(value)
    for path in sorted(drops, key=len, reverse=True):
        kept = _remove(kept, path)
        if kept is None:
            break
    return kept, [Dropped(_path_text(path), reason, code) for path, (reason, code) in drops.items()]


def describe_dropped(dropped: list[Dropped]) -> str:
    """One line for a log: ``fields.email (not offered); flows.f (1001 is greater than ...)``."""
    return "; ".join(f"{d.path} ({d.reason})" for d in dropped)


def report_dropped(ts: TurnState, call: str, dropped: list[Dropped], *, run: Run | None = None,
                   fields_sections: tuple[str, ...] = ()) -> None:
    """A ``warning`` event and a session warning naming what the ``call``'s reply lost; a dropped
    entry of one of ``fields_sections`` (``"fields"``; ``"$"`` when the reply's top level holds
    the fields) is also an outcome line with its code."""
    if not dropped:
        return
    message = f"{call} reply: dropped {describe_dropped(dropped)}"
    ts.emit(ReplyWarning(run_id=run.id if run else None, flow=run.flow if run else None, at=ts.now, call=call,
                         message=message, dropped=[d.path for d in dropped]))
    ts.log("warn", message)
    for drop in dropped:
        section, _, name = drop.path.partition(".")
        if "$" in fields_sections and drop.path != "$":
            name = drop.path
        elif not (name and section in fields_sections):
            continue
        ts.outcome(run, code=drop.code, status="skipped", kind="collect", detail=f"{name}: {drop.reason}")


def coerce_field_values(ts: TurnState, values: Mapping[str, Any], aliases: Mapping[str, str] | None = None,
                        *, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Seed 003: strings are coerced to numbers and booleans (scalars to strings) on the way in,
    for the agent's fields (``aliases`` maps wire keys back to names; ``skip`` names the fields a
    node's own schema types). The coerced value is then validated like any other; a value that
    does not coerce stays as it is, for the validator to name."""
    coerced: dict[str, Any] = {}
    for key, value in values.items():
        name = aliases.get(key, key) if aliases else key
        definition = ts.agent.fields.get(name) if name not in skip else None
        if definition is not None and value is not None:
            result = coerce(name, definition, value)
            if result.ok:
                value = result.value
        coerced[key] = value
    return coerced
