"""Segments: chains of ``generate: true`` replies that one model call can speak (seed 000).

A pure graph analysis of a flow file, done when the file is built. Only a file can prove that a
reply's ``next`` is unconditional: a Python ``next`` may be a function, so Python flows have no
segments.

A reply is *eligible* when it has ``generate: true``, no ``routes`` and no ``${`` in its
``instructions`` (an interpolating instruction reads the state, which the members before it may
change). A chain grows from an eligible node along its unconditional ``next`` (a node id, ``next``
or ``{goto: id}`` without ``data`` or ``clear``) while the target is eligible too, up to
:data:`MAX_MEMBERS` nodes, never revisiting one. Everything else is a boundary: template replies,
decide, collect, action and router nodes, routes, a goto carrying ``data`` or ``clear``, an
interpolating instruction.

Chains are grown in declaration order from the eligible nodes no eligible node leads to
unconditionally (then, for cycles, from any eligible node no chain covers yet); a chain cut by the
cap goes on as a new chain from the node after it. Chains of at least two nodes are kept, at most
:data:`MAX_CHAINS`. Every suffix of at least two nodes of a kept chain is indexed by its first
node, so a run that reaches a chain midway (a verify that blocked, a resumed run) still batches
the rest of it; the first chain that indexes a node wins.
"""

from __future__ import annotations

from collections.abc import Mapping

from tether.dialect.spec import FlowSpec, GotoRef, NodeSpec, ReplySpec

__all__ = ["MAX_CHAINS", "MAX_MEMBERS", "eligible", "find_segments", "unconditional_next"]

MAX_MEMBERS = 8
"""The most replies one batched model call speaks for."""

MAX_CHAINS = 32
"""The most maximal chains a flow keeps."""


def eligible(node: NodeSpec) -> bool:
    """Whether ``node`` may be a member of a batched chain."""
    return (isinstance(node, ReplySpec) and node.generate and node.response is None and not node.routes
            and "${" not in (node.instructions or ""))


def unconditional_next(spec: FlowSpec, node: NodeSpec) -> str | None:
    """The id of the node ``node`` always moves to, without data, when it provably does; else None."""
    target = getattr(node, "next", None)
    if getattr(node, "routes", None):
        return None
    if isinstance(target, GotoRef):
        return target.goto if target.data is None and not target.clear else None
    if target == "next":
        ids = [n.id for n in spec.nodes]
        index = ids.index(node.id)
        return ids[index + 1] if index + 1 < len(ids) else None
    if isinstance(target, str) and target != "stay":
        return target
    return None


def find_segments(spec: FlowSpec) -> dict[str, tuple[str, ...]]:
    """Node id -> the chain of node ids one model call speaks for when a run reaches that node
    (the node itself first; at least two ids). Empty when the flow has no chain."""
    by_id: dict[str, NodeSpec] = {}
    for node in spec.nodes:
        by_id.setdefault(node.id, node)
    step: dict[str, str] = {}
    for node_id, node in by_id.items():
        target = unconditional_next(spec, node) if eligible(node) else None
        if target is not None and target in by_id and eligible(by_id[target]):
            step[node_id] = target
    led_to = set(step.values())
    covered: set[str] = set()
    chains = _grow([n for n in by_id if n in step and n not in led_to], step, covered, MAX_CHAINS)
    for node_id in by_id:  # a cycle has no node that nothing leads to: start it where it is declared first
        if node_id in step and node_id not in covered:
            chains += _grow([node_id], step, covered, MAX_CHAINS - len(chains))
    index: dict[str, tuple[str, ...]] = {}
    for chain in chains:
        for i in range(len(chain) - 1):
            index.setdefault(chain[i], chain[i:])
    return index


def _grow(starts: list[str], step: Mapping[str, str], covered: set[str], limit: int) -> list[tuple[str, ...]]:
    """Chains grown from ``starts``, at most ``limit``; ``covered`` gains their nodes."""
    chains: list[tuple[str, ...]] = []
    todo = list(starts)
    while todo and len(chains) < limit:
        chain = [todo.pop(0)]
        while len(chain) < MAX_MEMBERS and step.get(chain[-1]) is not None and step[chain[-1]] not in chain:
            chain.append(step[chain[-1]])
        following = step.get(chain[-1])
        if len(chain) == MAX_MEMBERS and following is not None and following not in covered | set(chain):
            todo.insert(0, following)  # cut by the cap: the path goes on as its own chain
        if len(chain) >= 2:
            chains.append(tuple(chain))
            covered.update(chain)
    return chains
