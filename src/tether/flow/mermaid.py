"""Draw a flow as a mermaid ``flowchart``: one shape per node kind, an edge per static target;
edges decided by code are drawn dotted from the node to every node it could reach."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tether.flow.transitions import End, Escalate, Goto, Handoff, Next, StartFlow, Stay

if TYPE_CHECKING:
    from tether.flow.flow import Flow

__all__ = ["flow_to_mermaid"]

_SHAPES = {
    "reply": ('["', '"]'),
    "collect": ('[/"', '"/]'),
    "action": ('[["', '"]]'),
    "decide": ('{"', '"}'),
    "router": ('{{"', '"}}'),
    "wait": ('(["', '"])'),
}


def _safe(node_id: str) -> str:
    return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", node_id)


def flow_to_mermaid(flow: Flow) -> str:
    """The mermaid source for ``flow``."""
    lines = ["flowchart TD", f'  start(("{flow.id}")) --> {_safe(flow.start)}']
    terminals: set[str] = set()
    for node in flow.nodes:
        left, right = _SHAPES.get(node.kind, ('["', '"]'))
        label = f"{node.label or node.id}<br/><i>{node.kind}</i>".replace('"', "'")
        lines.append(f"  {_safe(node.id)}{left}{label}{right}")
    for node in flow.nodes:
        source = _safe(node.id)
        for option, target in node.static_targets():
            move = flow.resolve_static(node.id, target) if not isinstance(target, Next) else None
            if isinstance(target, Next):
                following = flow.next_after(node.id)
                move = Goto(following) if following else End("end")
            label = "" if option in ("next", "then", "on_complete") else f"|{option}|"
            if isinstance(move, Goto):
                lines.append(f"  {source} -->{label} {_safe(move.target)}")
            elif isinstance(move, Stay):
                lines.append(f"  {source} -.->|stay| {source}")
            elif isinstance(move, End | Handoff | Escalate | StartFlow):
                name = {End: "end", Handoff: "handoff", Escalate: "escalate", StartFlow: "start_flow"}[type(move)]
                terminals.add(name)
                lines.append(f"  {source} -->{label} t_{name}")
        if node.is_opaque():
            lines.append(f"  {source} -.->|code| {source}_code((?))")
    for name in sorted(terminals):
        lines.append(f'  t_{name}(["{name}"])')
    return "\n".join(lines) + "\n"
