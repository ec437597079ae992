"""Draw flows as mermaid ``flowchart``s: one shape per node kind and an edge per static target.

A transition made in code is drawn as dashed edges to the ``targets=[...]`` its node declares,
or, when it declares none, as a dashed edge to a ``?`` (it could go anywhere). A node whose code
is declared routes (a flow file's ``routes``/``next``: an object with ``drawn_routes()``) is drawn
with a solid edge per route, labelled with its condition, and one for its default; the ``?``
stays only when author code may still choose (``runs_author_code``). ``start_flow`` is an edge to
the started flow: to its start node when the agent's flows are drawn together
(:func:`agent_to_mermaid`), else to a terminal naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from tether.flow.nodes import Node
from tether.flow.transitions import End, Escalate, Goto, Handoff, StartFlow, Stay, Transition

__all__ = ["DrawnAgent", "DrawnFlow", "agent_to_mermaid", "flow_to_mermaid"]


class DrawnFlow(Protocol):
    """What a chart needs of a flow (:class:`tether.flow.flow.Flow` is one; ``Flow.to_mermaid``
    calls this module, so it names no ``Flow``)."""

    @property
    def id(self) -> str: ...
    @property
    def start(self) -> str: ...
    @property
    def nodes(self) -> Sequence[Node]: ...

    def resolve_static(self, node_id: str, target: Any) -> Transition:
        """The transition a static target of ``node_id`` stands for."""
        ...


class DrawnAgent(Protocol):
    """What a chart of every flow needs of an agent (:class:`tether.flow.agent_def.AgentDefinition`)."""

    @property
    def flows(self) -> Sequence[DrawnFlow]: ...
    @property
    def flows_by_id(self) -> Mapping[str, DrawnFlow]: ...

_SHAPES = {
    "reply": ('["', '"]'),
    "collect": ('[/"', '"/]'),
    "action": ('[["', '"]]'),
    "decide": ('{"', '"}'),
    "router": ('{{"', '"}}'),
    "wait": ('(["', '"])'),
}

_CODE = {"reply": "next", "collect": "on_complete", "action": "run", "decide": "decide"}
"""The option of each node kind that holds the code choosing its next node."""

FlowLink = Callable[[str], "str | None"]
"""The mermaid id of a flow's start node, when that flow is drawn in the same chart."""


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _text(text: str) -> str:
    return text.replace('"', "'")


def flow_to_mermaid(flow: DrawnFlow) -> str:
    """The mermaid source for ``flow`` alone."""
    return "\n".join(["flowchart TD", *_flow_lines(flow, "", lambda _: None)]) + "\n"


def agent_to_mermaid(agent: DrawnAgent) -> str:
    """The mermaid source for every flow of ``agent`` in one chart: a subgraph per flow, and an
    edge from each ``start_flow`` to the start of the flow it starts."""
    prefixes = {flow.id: f"{_safe(flow.id)}__" for flow in agent.flows}

    def link(flow_id: str) -> str | None:
        target = agent.flows_by_id.get(flow_id)
        return f"{prefixes[flow_id]}start" if target is not None else None

    lines = ["flowchart TD"]
    for flow in agent.flows:
        lines.append(f"  %% flow {flow.id}")
        lines.append(f'  subgraph {prefixes[flow.id]}flow["{_text(flow.id)}"]')
        lines.extend("  " + line for line in _flow_lines(flow, prefixes[flow.id], link))
        lines.append("  end")
    return "\n".join(lines) + "\n"


def _flow_lines(flow: DrawnFlow, prefix: str, link: FlowLink) -> list[str]:
    def node_id(node: str) -> str:
        return f"{prefix}n_{_safe(node)}"

    lines = [f'  {prefix}start(("{_text(flow.id)}")) --> {node_id(flow.start)}']
    terminals: dict[str, str] = {}

    def edge(source: str, arrow: str, label: str, move: Any) -> None:
        labelled = f"{arrow}|{_text(label)}|" if label else arrow
        if isinstance(move, Goto):
            lines.append(f"  {source} {labelled} {node_id(move.target)}")
        elif isinstance(move, Stay):
            lines.append(f"  {source} -.->|stay| {source}")
        elif isinstance(move, StartFlow):
            started = link(move.flow) if "{" not in move.flow else None
            if started is not None:
                lines.append(f"  {source} {arrow}|{_text(label) or 'start_flow'}| {started}")
            else:
                key = f"{prefix}t_flow_{_safe(move.flow)}"
                terminals[key] = f"start_flow {move.flow}"
                lines.append(f"  {source} {labelled} {key}")
        elif isinstance(move, End | Handoff | Escalate):
            name = {End: "end", Handoff: "handoff", Escalate: "escalate"}[type(move)]
            terminals[f"{prefix}t_{name}"] = name
            lines.append(f"  {source} {labelled} {prefix}t_{name}")

    for node in flow.nodes:
        left, right = _SHAPES.get(node.kind, ('["', '"]'))
        lines.append(f"  {node_id(node.id)}{left}{_text(node.label or node.id)}<br/><i>{node.kind}</i>{right}")
    for node in flow.nodes:
        source = node_id(node.id)
        code = getattr(node, _CODE.get(node.kind, ""), None) if node.is_opaque() else None
        drawer = getattr(code, "drawn_routes", None)
        routes, default = drawer() if callable(drawer) else (None, None)
        for option, target in node.static_targets():
            if option == "then" and node.kind == "action" and default is not None:
                continue  # the declared next replaces the action's default
            label = "" if option in ("next", "then", "on_complete") else option
            edge(source, "-->", label, flow.resolve_static(node.id, target))
        for label, target in routes or ():
            edge(source, "-->", label, flow.resolve_static(node.id, target))
        if default is not None:
            edge(source, "-->", "otherwise" if routes else "", flow.resolve_static(node.id, default))
        for target in node.targets:
            edge(source, "-.->", "", flow.resolve_static(node.id, target))
        opaque = routes is None or getattr(code, "runs_author_code", False)
        if node.is_opaque() and opaque and not node.targets:
            lines.append(f"  {source} -.->|code| {source}_code((?))")
    for key, name in sorted(terminals.items()):
        lines.append(f'  {key}(["{_text(name)}"])')
    return lines

