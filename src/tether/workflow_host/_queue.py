"""What work a stored run has for a worker: the run queue's view of a snapshot.

A run is queued (:mod:`tether.stores.run_queue`) by the save that leaves it with work a worker
can do, and taken out by the save that leaves it waiting on a person, or ended:

- ``runtime``: a node the host drives without a model is running (in flight, or in doubt after a
  crash), an available function, check, router, gate or sub-flow node nothing holds back, or a
  pending node whose guard or binding failed to evaluate (the drain fails it);
- ``agent``: no such work, but work that needs a model: an agent node available or running (back
  with the agent after an answer or a rejection), or a subprompt node available or running; work
  for a worker with a model;
- ``None``: the run waits on an approval or input, is blocked, or ended.
"""

from __future__ import annotations

from typing import Literal

from tether.workflow import WorkflowGraph, WorkflowSnapshot, ops
from tether.workflow._contract import AgentRun, SubpromptRun
from tether.workflow._derive import index_of

__all__ = ["Work", "pending_work"]

Work = Literal["runtime", "agent"]

_NEEDS_A_MODEL = (AgentRun, SubpromptRun)


def pending_work(graph: WorkflowGraph, snapshot: WorkflowSnapshot) -> Work | None:
    """The work ``snapshot`` has for a worker (see the module notes); read from the snapshot's
    node index, so it costs the nodes in play, not the graph."""
    if ops.run_ended(snapshot):
        return None
    index = index_of(graph, snapshot)
    running = index.by_status["running"]
    if index.errors or any(not isinstance(graph.nodes[n].run, _NEEDS_A_MODEL) for n in index.runnable | running):
        return "runtime"
    return "agent" if index.agents or index.runnable or running else None
