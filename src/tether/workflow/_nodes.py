"""What makes a mutation cost what it changes, not the size of the graph.

- :class:`NodeMap`: a snapshot's node states, copied on write while a change and its derive are
  applied. The clone of a snapshot shares every node state with the original; the first access
  of a node through ``[]``, ``get``, ``values`` or ``items`` copies it, and the map records it
  as touched (read-only code in :mod:`._derive` reads through ``dict.__getitem__``, which never
  copies). Once the mutation is over the map is closed and reads like a plain dict.
- :class:`NodeIndex`: the nodes of a snapshot by status, with the few sets the run's roll-up and
  the host's next step need, kept up to date node by node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.workflow._contract import AgentRun
from tether.workflow._state import NodeState

if TYPE_CHECKING:
    from tether.workflow._graph import WorkflowGraph

__all__ = ["NodeIndex", "NodeMap", "copy_state"]


def copy_state(state: NodeState) -> NodeState:
    """A copy of ``state`` a change may modify in place: its lists are copied; the records in them
    (attempts, approvals, outputs, origins) are only ever replaced, never modified, so shared."""
    return state.model_copy(update={
        "attempts": list(state.attempts), "error_history": list(state.error_history),
        "approvals": list(state.approvals), "blocked_by": list(state.blocked_by),
        "failed_conditions": list(state.failed_conditions),
    })


class NodeMap(dict[str, NodeState]):
    """Node states by id, copied on first write while the map is open (see the module docstring).

    It carries what is derived from the states and never stored: ``index`` (a
    :class:`NodeIndex` of these states, ``None`` until built) and ``changed`` (the nodes the
    mutation that made this map changed; ``None``: unknown, as for a loaded snapshot).
    """

    __slots__ = ("_open", "_touched", "changed", "index")

    def __init__(self, states: Mapping[str, NodeState] = {}) -> None:
        super().__init__(states)
        self._open = False
        self._touched: set[str] = set()
        self.index: NodeIndex | None = None
        self.changed: frozenset[str] | None = None

    @classmethod
    def fork(cls, states: Mapping[str, NodeState]) -> NodeMap:
        """An open map sharing every state of ``states``. The index moves to the fork (which
        updates it in place) rather than being copied: the snapshot a mutation replaces rarely
        needs one again, and builds it anew if it does."""
        forked = cls(states)
        forked._open = True
        if isinstance(states, NodeMap):
            forked.index, states.index = states.index, None
        return forked

    @property
    def touched(self) -> frozenset[str]:
        """The nodes handed out for writing since the map was forked."""
        return frozenset(self._touched)

    def close(self) -> frozenset[str]:
        """Stop copying on access; returns the touched nodes."""
        self._open = False
        return frozenset(self._touched)

    def __reduce__(self) -> Any:  # copy and pickle as the plain dict it stands for
        return dict, (dict(dict.items(self)),)

    def _own(self, key: str) -> NodeState:
        state = dict.__getitem__(self, key)
        if self._open and key not in self._touched:
            state = copy_state(state)
            dict.__setitem__(self, key, state)
            self._touched.add(key)
        return state

    def __getitem__(self, key: str) -> NodeState:
        return self._own(key) if self._open else dict.__getitem__(self, key)

    def __setitem__(self, key: str, value: NodeState) -> None:
        if self._open:
            self._touched.add(key)
        dict.__setitem__(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            return default
        return self[key]

    def values(self) -> Any:  # dict_values, which typing cannot name
        self._own_all()
        return dict.values(self)

    def items(self) -> Any:  # dict_items, which typing cannot name
        self._own_all()
        return dict.items(self)

    def _own_all(self) -> None:
        if self._open:
            for key in list(dict.keys(self)):
                self._own(key)


_STATUSES = ("pending", "available", "running", "awaiting_approval", "awaiting_input", "complete", "failed", "skipped")


@dataclass
class NodeIndex:
    """The nodes of one snapshot by status, plus what the roll-up reads:

    - ``errors``: pending nodes with an ``expression_error`` (the host fails them next; a node
      it failed keeps the error as the reason, and is no longer work);
    - ``runnable``: available nodes the runtime owns with nothing blocking them;
    - ``agents``: available agent nodes.
    """

    by_status: dict[str, set[str]] = field(default_factory=lambda: {s: set() for s in _STATUSES})
    errors: set[str] = field(default_factory=set)
    runnable: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, graph: WorkflowGraph, nodes: Mapping[str, NodeState]) -> NodeIndex:
        """The index of ``nodes``, from scratch."""
        index = cls()
        index.update(graph, nodes, list(dict.keys(nodes) if isinstance(nodes, dict) else nodes.keys()))
        return index

    def copy(self) -> NodeIndex:
        """An independent copy."""
        return NodeIndex(by_status={s: set(ids) for s, ids in self.by_status.items()},
                         errors=set(self.errors), runnable=set(self.runnable), agents=set(self.agents))

    def update(self, graph: WorkflowGraph, nodes: Mapping[str, NodeState], node_ids: Iterable[str]) -> None:
        """Re-file ``node_ids`` by their current state in ``nodes`` (read without copying)."""
        for node_id in node_ids:
            state = dict.__getitem__(nodes, node_id) if isinstance(nodes, dict) else nodes[node_id]
            for ids in self.by_status.values():
                ids.discard(node_id)
            self.by_status[state.status].add(node_id)
            _file(self.errors, node_id, state.status == "pending" and bool(state.expression_error))
            available = state.status == "available"
            agent = isinstance(graph.nodes[node_id].run, AgentRun)
            _file(self.agents, node_id, available and agent)
            _file(self.runnable, node_id, available and not agent
                  and not (state.blocked_by or state.failed_conditions))

    def count(self, *statuses: str) -> int:
        """How many nodes have one of ``statuses``."""
        return sum(len(self.by_status[s]) for s in statuses)

    def ordered(self, graph: WorkflowGraph, ids: Iterable[str]) -> list[str]:
        """``ids`` in definition order."""
        return sorted(ids, key=graph.position.__getitem__)


def _file(into: set[str], node_id: str, member: bool) -> None:
    if member:
        into.add(node_id)
    else:
        into.discard(node_id)
