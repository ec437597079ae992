"""tether.executors: deterministic ``function`` and ``check`` nodes run as real subprocesses.

- :class:`ProcessRequest` names what to run (command, workspace, input bindings, environment
  policy, success codes, timeout, output capture); :class:`ProcessResult` reports how it
  settled and describes itself.
- :class:`SubprocessExecutor` runs each request in its own process group and settles only
  once the group is gone; :func:`kill_all_live_groups` (also run at exit) sweeps leftovers.
- :func:`retry` retries failed attempts strictly one after another;
  :func:`settle_with_budget` bounds executors that ignore their abort.
- :func:`check_verdict` turns a ``check`` attempt into a :class:`CheckVerdict` with derived
  provenance (:class:`Origin`, :class:`Binding`).
"""

from tether.executors.capture import truncation_marker
from tether.executors.executor import DEFAULT_GRACE, Executor, SubprocessExecutor
from tether.executors.groups import kill_all_live_groups, live_groups
from tether.executors.provenance import (
    Binding,
    InputsLocality,
    ObtainedBy,
    Origin,
    OriginKind,
    Provenance,
    derive_inputs,
    derive_provenance,
    is_flow_local,
    is_runtime_obtained,
)
from tether.executors.request import (
    DEFAULT_ALLOW,
    DEFAULT_CAPTURE_LIMIT,
    DEFAULT_DENY,
    EnvPolicy,
    ProcessRequest,
    Runtime,
    build_env,
    stringify_value,
)
from tether.executors.result import ProcessRecord, ProcessResult
from tether.executors.retry import (
    DEFAULT_SETTLE_BUDGET,
    ExecutorUnsettledError,
    RetryOutcome,
    retry,
    settle_with_budget,
)
from tether.executors.verdict import CheckVerdict, check_verdict

__all__ = [
    "Binding",
    "CheckVerdict",
    "DEFAULT_ALLOW",
    "DEFAULT_CAPTURE_LIMIT",
    "DEFAULT_DENY",
    "DEFAULT_GRACE",
    "DEFAULT_SETTLE_BUDGET",
    "EnvPolicy",
    "Executor",
    "ExecutorUnsettledError",
    "InputsLocality",
    "ObtainedBy",
    "Origin",
    "OriginKind",
    "ProcessRecord",
    "ProcessRequest",
    "ProcessResult",
    "Provenance",
    "RetryOutcome",
    "Runtime",
    "SubprocessExecutor",
    "build_env",
    "check_verdict",
    "derive_inputs",
    "derive_provenance",
    "is_flow_local",
    "is_runtime_obtained",
    "kill_all_live_groups",
    "live_groups",
    "retry",
    "settle_with_budget",
    "stringify_value",
    "truncation_marker",
]
