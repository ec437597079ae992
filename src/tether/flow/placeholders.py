"""Definition-time check of template placeholders (``${field}`` in ``response``, ``fallback``,
``ask`` and ``instructions``).

A placeholder is statically known to be wrong only when nothing could ever put a value under its
name. The names a node of flow F can see are the agent's fields, F's collect schema fields, F's
``output_schema``/``verify`` fields and the ``data`` of F's static ``goto`` targets, plus the
``input.``/``context.`` roots (free-form, checked at run time), and ``${today}``. That list is complete unless
code can write other names: an action (``ctx.set``, ``goto(data=...)``) anywhere in the agent, a
tool (a ``ToolResult``'s data), or a code transition in F (``goto(data=...)``). Then the check is
left to run time, where a missing value is a :class:`~tether.errors.TemplatePlaceholderError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tether.errors import DefinitionIssue
from tether.flow.flow import Flow
from tether.flow.nodes import Action, Collect
from tether.flow.texts import templates_of
from tether.flow.transitions import Goto
from tether.templating import slots

__all__ = ["BUILT_IN", "FREE_ROOTS", "placeholder_issues", "placeholders", "templates_of"]

FREE_ROOTS = frozenset({"input", "context"})
"""Placeholder roots whose contents are only known at run time."""

BUILT_IN = frozenset({"today"})
"""Placeholders every template may use: ``${today}``, the turn's date ("Thursday, 2026-12-03")."""

_PLACEHOLDER_CODE = "unknown-placeholder"


def placeholders(template: str) -> list[str]:
    """The placeholder paths of ``template`` (``${name}``, or the older ``{name}``), in order."""
    return [slot.path for slot in slots(template, old=True)]


def placeholder_issues(fields: Iterable[str], flows: Sequence[Flow], *, has_tools: bool) -> list[DefinitionIssue]:
    """Every placeholder that names no value its node could ever see (see the module notes)."""
    if has_tools or any(isinstance(node, Action) for flow in flows for node in flow.nodes):
        return []  # code may write any session field
    issues: list[DefinitionIssue] = []
    for flow in flows:
        if any(node.is_opaque() for node in flow.nodes):
            continue  # a code transition may carry data under any name
        known = set(fields) | _flow_names(flow)
        for index, node in enumerate(flow.nodes):
            for option, template in templates_of(node):
                for slot in slots(template, old=True):
                    path = slot.path
                    parts = path.split(".")
                    root = parts[1] if parts[0] == "state" and len(parts) > 1 else parts[0]
                    if parts[0] in FREE_ROOTS or root in known or path in BUILT_IN:
                        continue
                    issues.append(DefinitionIssue(
                        _PLACEHOLDER_CODE, f"{option} uses {slot.written}, which names no field this node can see "
                        f"(known: {', '.join(sorted(known)) or 'none'})", flow=flow.id, node=node.id,
                        path=f"nodes.{index}.{option}"))
    return issues


def _flow_names(flow: Flow) -> set[str]:
    names: set[str] = set()
    for node in flow.nodes:
        if isinstance(node, Collect) and node.schema is not None:
            names.update(node.schema.model_fields)
        for schema in (node.output_schema, node.verify.output_schema if node.verify else None):
            if schema is not None:
                names.update(schema.model_fields)
        for _, target in node.static_targets():
            if isinstance(target, Goto) and target.data:
                names.update(target.data)
    return names
