"""Draw a flow as a mermaid ``flowchart``: one shape per node kind, an edge per static target;
edges decided by code are drawn dotted from the node to every node it could reach.

:func:`flow_edges` lists the same edges as data (the web inspector draws them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Stay

if TYPE_CHECKING:
    from tether.flow.flow import Flow

__all__ = ["FlowEdge", "flow_edges", "flow_to_mermaid"]

_SHAPES = {
    "reply": ('["', '"]'),
    "collect": ('[/"', '"/]'),
    "action": ('[["', '"]]'),
    "decide": ('{"', '"}'),
    "router": ('{{"', '"}}'),
    "wait": ('(["', '"])'),
}

_TERMINALS: dict[type, str] = {End: "end", Handoff: "handoff", Escalate: "escalate", StartFlow: "start_flow"}


@dataclass(frozen=True)
class FlowEdge:
    """One statically known move out of ``source``.

    ``kind`` is ``goto`` (``target`` is a node id), ``stay`` (back to ``source``), ``terminal``
    (``target`` is ``end``, ``handoff``, ``escalate`` or ``start_flow``) or ``code`` (the node's code
    decides; ``target`` is empty). ``label`` is the option that takes it (empty for the plain next
    step)."""

    source: str
    target: str
    kind: Literal["goto", "stay", "terminal", "code"]
    label: str = ""


def flow_edges(flow: Flow) -> list[FlowEdge]:
    """The static edges of ``flow``, node by node in declaration order."""
    edges: list[FlowEdge] = []
    for node in flow.nodes:
        for option, target in node.static_targets():
            move: object
            if isinstance(target, Next):
                following = flow.next_after(node.id)
                move = Goto(following) if following else End("end")
            else:
                move = flow.resolve_static(node.id, target)
            label = "" if option in ("next", "then", "on_complete") else option
            if isinstance(move, Goto):
                edges.append(FlowEdge(node.id, move.target, "goto", label))
            elif isinstance(move, Stay):
                edges.append(FlowEdge(node.id, node.id, "stay", "stay"))
            elif type(move) in _TERMINALS:
                edges.append(FlowEdge(node.id, _TERMINALS[type(move)], "terminal", label))
        if node.is_opaque():
            edges.append(FlowEdge(node.id, "", "code", "code"))
    return edges


def _safe(node_id: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", node_id)


def flow_to_mermaid(flow: Flow) -> str:
    """The mermaid source for ``flow``."""
    lines = ["flowchart TD", f'  start(("{flow.id}")) --> {_safe(flow.start)}']
    for node in flow.nodes:
        left, right = _SHAPES.get(node.kind, ('["', '"]'))
        label = f"{node.label or node.id}<br/><i>{node.kind}</i>".replace('"', "'")
        lines.append(f"  {_safe(node.id)}{left}{label}{right}")
    terminals: set[str] = set()
    for edge in flow_edges(flow):
        source = _safe(edge.source)
        label = f"|{edge.label}|" if edge.label else ""
        if edge.kind == "goto":
            lines.append(f"  {source} -->{label} {_safe(edge.target)}")
        elif edge.kind == "stay":
            lines.append(f"  {source} -.->|stay| {source}")
        elif edge.kind == "terminal":
            terminals.add(edge.target)
            lines.append(f"  {source} -->{label} t_{edge.target}")
        else:
            lines.append(f"  {source} -.->|code| {source}_code((?))")
    for name in sorted(terminals):
        lines.append(f'  t_{name}(["{name}"])')
    return "\n".join(lines) + "\n"
