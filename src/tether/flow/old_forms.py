"""The older forms a Python flow may still be written in, and the one form that replaces each.

A condition written as a JSON dict (``{"equals": {"size": "large"}}``, ``{"known": ["email"]}``,
``{"silenced": True}``) is the older form of a CEL condition (``"data.size == 'large'"``). Each is
found when the flow is built: :class:`~tether.flow.flow.Flow` emits a :class:`DeprecationWarning`
naming the flow, the node and the CEL condition that says the same, and ``tether check`` lists
the same findings (:func:`old_forms`). A dict naming an agent's registered condition is not an
older form: it has no CEL equivalent.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tether.errors import DefinitionIssue
from tether.flow.nodes import Router

if TYPE_CHECKING:
    from tether.flow.flow import Flow

__all__ = ["OLD_CONDITION_KEYS", "cel_for", "conditions_of", "old_forms", "warn_old_forms"]

OLD_CONDITION_KEYS = frozenset({"equals", "known", "silenced"})
"""The keys of a JSON condition that CEL says directly."""


def conditions_of(flow: Flow) -> Iterator[tuple[Any, str | None, str]]:
    """Every condition of ``flow`` with its node (None: the flow's) and option path."""
    yield flow.while_, None, "while_"
    for i, trigger in enumerate(flow.on):
        yield getattr(trigger, "if_", None), None, f"on.{i}.if_"
    for node in flow.nodes:
        if isinstance(node, Router):
            yield node.when, node.id, "when"
        for i, branch in enumerate(getattr(node, "branches", ())):
            yield getattr(branch, "if_", None), getattr(node, "id", None), f"branches.{i}.if_"


def cel_for(condition: Mapping[str, Any]) -> str | None:
    """The CEL condition that says what the JSON ``condition`` says, or None when it is not an
    older form (empty, malformed, or naming a registered condition)."""
    if not condition or not set(condition) <= OLD_CONDITION_KEYS:
        return None
    equals, known = condition.get("equals", {}), condition.get("known", ())
    if not isinstance(equals, Mapping) or not isinstance(known, list | tuple):
        return None
    # "name" in data first: a field not known yet makes the condition false, as the dict did
    parts = [f"{json.dumps(name)} in data && data.{name} == {json.dumps(value)}" for name, value in equals.items()]
    parts += [f"{json.dumps(name)} in data" for name in known]
    if "silenced" in condition:
        parts.append("silenced" if condition["silenced"] else "!silenced")
    return " && ".join(parts)


def old_forms(flow: Flow) -> list[DefinitionIssue]:
    """A warning for every older form in ``flow``, with the form that replaces it."""
    found = []
    for condition, node, path in conditions_of(flow):
        cel = cel_for(condition) if isinstance(condition, Mapping) else None
        if cel is not None:
            found.append(DefinitionIssue("old-form", f"{path}: {dict(condition)!r} is the older form of a condition",
                                         flow=flow.id, node=node, path=path, severity="warning",
                                         hint=f"write the CEL condition: {cel}"))
    return found


def warn_old_forms(flow: Flow) -> None:
    """A :class:`DeprecationWarning` for every older form in ``flow`` (one each), attributed to
    the first caller outside tether (the line that built the flow)."""
    for issue in old_forms(flow):
        where = f"flow {issue.flow!r}" + (f", node {issue.node!r}" if issue.node else "")
        warnings.warn(f"{where}: {issue.message} (deprecated); {issue.hint}", DeprecationWarning,
                      stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the nearest frame outside the ``tether`` package (so a warning names
    the author's line, and Python's default filters show it for a script)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "tether":
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
