"""The older forms a Python flow may still be written in, and the one form that replaces each.

A placeholder written ``{name}`` in a node's text is the older form of ``${name}``
(:mod:`tether.templating`). A condition written as a JSON dict (``{"equals": {"size": "large"}}``,
``{"known": ["email"]}``, ``{"silenced": True}``) is the older form of a CEL condition
(``"data.size == 'large'"``). Each is found when the flow is built: :class:`~tether.flow.flow.Flow`
emits a :class:`DeprecationWarning` naming the flow, the node and the form that says the same, and
``tether check`` lists the same findings (:func:`old_forms`). A dict naming an agent's registered
condition is not an older form: it has no CEL equivalent. A text with placeholders of both forms
is refused (:func:`mixed_templates`): ``"${amount}"`` was a dollar sign before the value in the
older syntax.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from tether.errors import DefinitionIssue
from tether.flow.nodes import Node, Router
from tether.flow.steps import AgentNode
from tether.flow.texts import templates_of
from tether.templating import rewrite, slots


class Flow(Protocol):
    """What is read of a :class:`~tether.flow.flow.Flow` here."""

    @property
    def id(self) -> str: ...
    @property
    def while_(self) -> Any: ...
    @property
    def on(self) -> Sequence[Any]: ...
    @property
    def nodes(self) -> Sequence[Node]: ...

__all__ = ["OLD_CONDITION_KEYS", "cel_for", "conditions_of", "mixed_templates", "old_forms", "warn_old_forms"]

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


def _texts(node: Node) -> Iterator[tuple[str, str]]:
    """The template texts of ``node``, an agent step's prompt among them."""
    yield from templates_of(node)
    if isinstance(node, AgentNode) and isinstance(node.prompt, str):
        yield "prompt", node.prompt


def mixed_templates(nodes: Sequence[Node]) -> list[tuple[str, str, str]]:
    """``(node id, option path, message)`` for every text that has placeholders of both forms."""
    found = []
    for index, node in enumerate(nodes):
        for option, text in _texts(node):
            written = slots(text, old=True)
            older = [slot.written for slot in written if slot.old]
            if older and any(not slot.old for slot in written):
                found.append((node.id, f"nodes.{index}.{option}", (
                    f"{option} has placeholders of both forms ({', '.join(older)} and "
                    f"{', '.join(slot.written for slot in written if not slot.old)}): in the older syntax "
                    '"${amount}" was a dollar sign before the value, in the one syntax it is the value; write '
                    f'{", ".join(slot.source for slot in written if slot.old)} for the older placeholders, and '
                    '"$${amount}" where a dollar sign goes before a value')))
    return found


def old_forms(flow: Flow) -> list[DefinitionIssue]:
    """A warning for every older form in ``flow``, with the form that replaces it."""
    found = []
    for index, step in enumerate(flow.nodes):
        for option, text in _texts(step):
            older = [slot.written for slot in slots(text, old=True) if slot.old]
            if older:
                found.append(DefinitionIssue(
                    "old-form", f"{option}: {', '.join(older)} is the older form of a placeholder", flow=flow.id,
                    node=step.id, path=f"nodes.{index}.{option}", severity="warning",
                    hint=f"write {rewrite(text, lambda slot: slot.source, old=True)!r}"))
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
