"""tether.workflow_host: runs workflows (:mod:`tether.workflow`) on the process executor.

:class:`WorkflowRun` drains a run (routers, gates, sub-flows, function and check nodes), applies
host operations (approvals, input, retry, autonomous mode, cancel, hydrate) and saves the
snapshot in a store with compare-and-swap after every change (:class:`SnapshotStore`).
:class:`AgentDriver` gives the model turns on agent nodes through the flow tools
(:meth:`WorkflowRun.advance`); :class:`WorkflowChat` lets a conversation start a run and answer
its gates and input requests. :func:`load_workflow_file` reads a definition from a ``.yaml``/``.yml``/``.json`` file.
:func:`queue_run` stores a new run queued for the workers (``--detach``, and the server's
``POST /v1/workflows/{id}/runs``); :func:`drive_stored_runs` is a worker, driving the queued runs
from any process (``tether worker``; in ``tether serve``, :class:`RunQueueTask`).
:func:`act_on_run` approves, rejects, answers, retries or cancels a stored run from another
process; :func:`waiting_on` says what a run waits on.
"""

from tether.workflow_host._agent import FLOW_TOOLS, AgentDriver, TurnReport
from tether.workflow_host._chat import WorkflowChat
from tether.workflow_host._files import find_workflow_file, load_workflow_file, workflow_directory_resolver
from tether.workflow_host._operate import ACTIONS, Action, RunAction, act_on_run, waiting_on
from tether.workflow_host._queue import pending_work
from tether.workflow_host._run import Resolver, WorkflowRun
from tether.workflow_host._store import SnapshotStore
from tether.workflow_host._subflow import MAX_SUBFLOW_DEPTH, check_subflows
from tether.workflow_host._worker import DEFAULT_RUN_LEASE, RunQueueTask, drive_stored_runs, queue_run

__all__ = [
    "ACTIONS",
    "Action",
    "AgentDriver",
    "DEFAULT_RUN_LEASE",
    "FLOW_TOOLS",
    "MAX_SUBFLOW_DEPTH",
    "Resolver",
    "RunAction",
    "RunQueueTask",
    "SnapshotStore",
    "TurnReport",
    "WorkflowChat",
    "WorkflowRun",
    "act_on_run",
    "check_subflows",
    "drive_stored_runs",
    "find_workflow_file",
    "load_workflow_file",
    "pending_work",
    "queue_run",
    "waiting_on",
    "workflow_directory_resolver",
]
