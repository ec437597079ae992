"""The code a flow file may name: tools, registered actions and conditions.

A file never holds code. It names what a :class:`Registry` holds, and building the file resolves
every name (an unknown one is a validation issue with a "did you mean"). An agent file names its
registry module with ``code:`` (loaded by :func:`tether.dialect.load`); in Python, pass one to
:func:`tether.dialect.build_agent` / :func:`tether.dialect.build_flow`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.flow.tools import Tool

__all__ = ["Registry"]


@dataclass(frozen=True)
class Registry:
    """Named code for flow files.

    Attributes:
        tools: agent tools (``@tool`` functions), named by ``action.tool``.
        actions: ``action(args, ctx)`` functions (sync or async), named by ``action.do``; ``args``
            is the node's resolved ``args`` mapping merged over the state, ``ctx`` the action
            context. Return None (take ``next``/``routes``) or a transition.
        conditions: ``condition(root, arg) -> bool`` functions, named by ``{op: condition, name}``;
            ``root`` holds ``state``, ``input`` and ``context``.
        events: the event names the agent accepts (for validation and the schema).
    """

    tools: tuple[Tool, ...] = ()
    actions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    conditions: Mapping[str, Callable[[Mapping[str, Any], Any], Any]] = field(default_factory=dict)
    events: tuple[str, ...] = ()

    @classmethod
    def of(cls, *, tools: Iterable[Tool] = (), actions: Mapping[str, Callable[..., Any]] | None = None,
           conditions: Mapping[str, Callable[[Mapping[str, Any], Any], Any]] | None = None,
           events: Iterable[str] = ()) -> Registry:
        """A registry from lists and mappings."""
        return cls(tuple(tools), dict(actions or {}), dict(conditions or {}), tuple(events))

    @property
    def tools_by_name(self) -> dict[str, Tool]:
        return {t.name: t for t in self.tools}
