"""tether.workflow_host: runs workflows (:mod:`tether.workflow`) on the process executor.

:class:`WorkflowRun` drains a run (routers, gates, sub-flows, function and check nodes), applies
host operations (approvals, input, retry, autonomous mode, cancel, hydrate) and saves the
snapshot in a store with compare-and-swap after every change (:class:`SnapshotStore`).
:func:`load_workflow_file` reads a definition from a ``.yaml``/``.yml``/``.json`` file.
"""

from tether.workflow_host._files import load_workflow_file, workflow_directory_resolver
from tether.workflow_host._run import Resolver, WorkflowRun
from tether.workflow_host._store import SnapshotStore
from tether.workflow_host._subflow import MAX_SUBFLOW_DEPTH, check_subflows

__all__ = [
    "MAX_SUBFLOW_DEPTH",
    "Resolver",
    "SnapshotStore",
    "WorkflowRun",
    "check_subflows",
    "load_workflow_file",
    "workflow_directory_resolver",
]
