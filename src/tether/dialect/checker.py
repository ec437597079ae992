"""What the flow-file checks share: the surface a flow may name, and the issue collector that gives
every issue its path, hint and structured repair action."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tether.dialect.parse import did_you_mean
from tether.dialect.registry import Registry
from tether.dialect.spec import AgentSpec, FlowSpec
from tether.errors import DefinitionIssue, RepairAction, RepairOperation

__all__ = ["Checker", "Surface"]

_NODE_OPERATIONS = ("update-node", "remove-node")


@dataclass(frozen=True)
class Surface:
    """What a flow may name. ``None`` for a kind means "not known here": not checked."""

    fields: dict[str, Any] | None = None
    tools: frozenset[str] | None = None
    actions: frozenset[str] | None = None
    conditions: frozenset[str] | None = None
    events: frozenset[str] | None = None
    flows: frozenset[str] | None = None
    tool_inputs: dict[str, Any] | None = None
    """Each tool's input model (pydantic), to check an action's ``args`` against."""

    @classmethod
    def of(cls, registry: Registry | None, agent: AgentSpec | None = None) -> Surface:
        """The surface of ``registry`` (and of ``agent``: its fields, flows and tools)."""
        tools = frozenset(t.name for t in registry.tools) if registry is not None else None
        if agent is not None and agent.tools is not None and tools is not None:
            tools = tools & frozenset(agent.tools)
        return cls(fields=dict(agent.fields) if agent is not None else None, tools=tools,
                   actions=frozenset(registry.actions) if registry is not None else None,
                   conditions=frozenset(registry.conditions) if registry is not None else None,
                   events=frozenset(registry.events) if registry is not None and registry.events else None,
                   flows=frozenset(f.id for f in agent.flows) if agent is not None else None,
                   tool_inputs={t.name: t.input_model for t in registry.tools} if registry is not None else None)


@dataclass
class Checker:
    """Collects the issues of one flow; paths are relative to the flow and prefixed with ``base``.

    Every issue on a node carries a repair action: ``update-node`` unless the call names another
    operation. A ``set-*`` operation targets the issue's own path; ``legal`` lists what may be read
    there.
    """

    spec: FlowSpec
    surface: Surface
    base: str
    issues: list[DefinitionIssue] = field(default_factory=list)

    def add(self, code: str, message: str, path: str, *, node: str | None = None, hint: str | None = None,
            severity: str = "error", repair: RepairOperation | None = None, legal: Iterable[str] = ()) -> None:
        full = f"{self.base}.{path}"
        operation = repair or ("update-node" if node is not None else None)
        action = None
        if operation in _NODE_OPERATIONS and node is not None:
            action = RepairAction(operation, node_id=node, legal_sources=tuple(legal))
        elif operation is not None and operation not in _NODE_OPERATIONS:
            action = RepairAction(operation, target_path=full, legal_sources=tuple(legal))
        self.issues.append(DefinitionIssue(code, message, flow=self.spec.id, node=node, path=full, hint=hint,
                                           severity="warning" if severity == "warning" else "error", repair=action))

    @property
    def ids(self) -> list[str]:
        return [n.id for n in self.spec.nodes]

    def unknown(self, code: str, what: str, name: str, known: Any, path: str, node: str | None = None) -> None:
        """An issue when ``name`` is not in ``known`` (``None``: not checked)."""
        if known is None or name in known:
            return
        listed = ", ".join(sorted(known)) or "none"
        self.add(code, f"unknown {what} {name!r}", path, node=node,
                 hint=did_you_mean(name, known) or f"known {what}s: {listed}")
