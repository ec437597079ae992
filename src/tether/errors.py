"""Every error tether raises, in one place.

The tree::

    TetherError                              root of everything tether raises on purpose
    ├── FlowDefinitionError (TypeError, ValueError)   a flow/agent was defined wrongly (build time)
    ├── AppLoadError                         an app (file, module or flow file) named no loadable agent
    ├── InvalidInputError (ValueError)       a turn input was refused before anything ran or was saved
    ├── FlowRuntimeError (RuntimeError)      a run failed while it was executing
    │   ├── TransitionError                  a node returned something that is not a transition
    │   ├── OscillationError                 an edge was traversed more than max_oscillations times
    │   ├── FlowDriftError                   a parked run's flow changed under it
    │   ├── NodeFailedError                  user code of a node failed: the run degrades
    │   ├── TemplatePlaceholderError         a ``{placeholder}`` names nothing the node can see
    │   ├── ToolError                        a tool is unknown or its arguments are invalid
    │   │   └── RecoverableToolError         a tool failure the customer can fix: re-collect
    │   ├── EffectInDoubtError               a journaled effect started, no result, policy "fail"
    │   ├── JournalMismatchError             an action's effects changed order between dispatches
    │   └── ModelConfigurationError          a node needs a model (or a capability) that is missing
    ├── ModelError (RuntimeError)            a model provider failed; ``kind``, ``retryable``
    ├── StoreError (RuntimeError)            SESSION_STORE_ERROR: a store backend failed
    │   ├── SessionConflict                  SESSION_CONFLICT: stale revision
    │   ├── SessionFlowMismatch              SESSION_FLOW_MISMATCH: session bound to another agent
    │   ├── SessionFlowInvariant             SESSION_FLOW_INVARIANT: malformed stored document
    │   ├── SessionVersionUnsupported        SESSION_VERSION_UNSUPPORTED: written by a newer tether
    │   └── SessionLeaseTimeout              SESSION_LEASE_TIMEOUT: another worker kept the session
    ├── ExecutorError (RuntimeError)         the process executor could not run a command
    │   └── SpawnError                       the command could not be started at all
    └── WorkflowError                        workflows (tether.workflow)
        ├── WorkflowDefinitionError (FlowDefinitionError)  a workflow definition is invalid
        ├── WorkflowExpressionError          a bounded expression failed (skipped producer, ...)
        └── WorkflowOperationError           a host operation was refused (feedback, contract, ...)

    TetherSignal (BaseException)             control flow; ``except Exception`` cannot swallow it
    └── Suspend                              a run parks durably (approval, signal)

Every error carries a stable string ``code``. Codes come from the specification where it names
one (``SESSION_CONFLICT``, ``inline-transition-target``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "AppLoadError",
    "CheckpointFailed",
    "DefinitionIssue",
    "EffectInDoubtError",
    "ExecutorError",
    "FlowDefinitionError",
    "FlowDriftError",
    "FlowRuntimeError",
    "InvalidInputError",
    "JournalMismatchError",
    "ModelConfigurationError",
    "ModelError",
    "ModelErrorKind",
    "NodeFailedError",
    "OscillationError",
    "RecoverableToolError",
    "RepairAction",
    "SessionConflict",
    "SessionFlowInvariant",
    "SessionFlowMismatch",
    "SessionLeaseTimeout",
    "SessionVersionUnsupported",
    "SpawnError",
    "StoreError",
    "Suspend",
    "TemplatePlaceholderError",
    "TetherError",
    "TetherSignal",
    "ToolError",
    "TransitionError",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowExpressionError",
    "WorkflowOperationError",
]


class TetherError(Exception):
    """Root of every error tether raises on purpose."""

    code: str = "tether-error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------- definition errors


RepairOperation = Literal["set-transition", "set-mapping-source", "set-predicate", "set-template", "update-node",
                         "remove-node"]


@dataclass(frozen=True)
class RepairAction:
    """A structured repair for a :class:`DefinitionIssue`, for a host (or a model) fixing a flow file.

    Attributes:
        operation: what to change: ``set-transition`` (a transition target), ``set-mapping-source``
            (one source of a mapping), ``set-predicate``, ``set-template``, ``update-node`` (an
            option of the node) or ``remove-node``.
        node_id: the node to update or remove (``update-node``, ``remove-node``).
        target_path: the dotted path of the value to set (the ``set-*`` operations).
        legal_sources: the paths that may be read there (``state.x``, ``results.<node>``,
            ``input.*``, ``context.*``), when the issue is a value read from the run.
    """

    operation: RepairOperation
    node_id: str | None = None
    target_path: str | None = None
    legal_sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.node_id is None) == (self.target_path is None):
            raise ValueError("a repair action names exactly one of node_id and target_path")

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: ``{operation, arguments: {node_id} | {target_path}, legal_sources}``."""
        arguments = {"node_id": self.node_id} if self.node_id is not None else {"target_path": self.target_path}
        return {"operation": self.operation, "arguments": arguments, "legal_sources": list(self.legal_sources)}


@dataclass(frozen=True)
class DefinitionIssue:
    """One problem found while validating a definition.

    Attributes:
        code: stable code, e.g. ``duplicate-node-id``.
        message: what is wrong, in a sentence.
        flow: the flow id, when the problem is inside a flow.
        node: the node (step) id, when the problem is on one node.
        path: dotted path of the offending option, e.g. ``nodes.1.id``.
        hint: how to repair it, when known (``did you mean 'address'?``).
        severity: ``error`` (the definition is refused) or ``warning`` (it works, but look).
        repair: the structured repair, when there is one (flow files: see :class:`RepairAction`).
    """

    code: str
    message: str
    flow: str | None = None
    node: str | None = None
    path: str | None = None
    hint: str | None = None
    severity: Literal["error", "warning"] = "error"
    repair: RepairAction | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``repair`` as :meth:`RepairAction.as_dict`, or null)."""
        return {"code": self.code, "message": self.message, "severity": self.severity, "flow": self.flow,
                "node": self.node, "path": self.path, "hint": self.hint,
                "repair": self.repair.as_dict() if self.repair is not None else None}

    def __str__(self) -> str:
        where = ".".join(p for p in (self.flow and f"flow {self.flow!r}", self.path) if p)
        node = f" (node {self.node!r})" if self.node else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"[{self.code}] {where or '<agent>'}{node}: {self.message}{hint}"


class FlowDefinitionError(TetherError, TypeError, ValueError):
    """A flow, node or agent was defined wrongly. Raised when it is built, never mid-conversation.

    ``issues`` lists every problem found; ``code`` is the first one's code.
    """

    code = "flow-definition"

    def __init__(self, issues: list[DefinitionIssue] | DefinitionIssue, *, title: str | None = None) -> None:
        if isinstance(issues, DefinitionIssue):
            issues = [issues]
        self.issues: list[DefinitionIssue] = list(issues)
        head = title or (
            f"{len(self.issues)} definition problem(s)" if len(self.issues) != 1 else "definition problem"
        )
        lines = "\n".join(f"- {issue}" for issue in self.issues)
        super().__init__(f"{head}:\n{lines}", code=self.issues[0].code if self.issues else None)


class AppLoadError(TetherError):
    """An app (``path/to/file.py[:attr]``, ``package.module:attr`` or a flow file) could not be
    loaded: the file or module is missing, does not import, or names no agent. The message is one
    line naming the app and what is wrong."""

    code = "app-load-error"


# --------------------------------------------------------------------------- runtime errors


class InvalidInputError(TetherError, ValueError):
    """A turn input was refused before anything ran or was saved (``invalid-input``): text that is
    not valid Unicode (a lone surrogate), a NUL character, a message over the size limit, or an
    empty message (nothing but white space).
    ``where`` names the part of the input (``message.text``, ``event.payload['a']``, ...)."""

    code = "invalid-input"

    def __init__(self, message: str, *, where: str) -> None:
        super().__init__(message)
        self.where = where


class FlowRuntimeError(TetherError, RuntimeError):
    """A run failed while it was executing."""

    code = "flow-runtime"


class TransitionError(FlowRuntimeError):
    """A node returned something that is not a transition."""

    code = "invalid-transition"


class OscillationError(FlowRuntimeError):
    """An edge ``from -> to`` was traversed more than the flow's ``max_oscillations`` in one turn.

    In a turn the run degrades like a failed node (reference §1.9: the guard never throws out of
    the turn); the error event and the session's error log carry this message."""

    code = "oscillation"

    def __init__(self, flow: str, source: str, target: str, limit: int) -> None:
        self.flow, self.source, self.target, self.limit = flow, source, target, limit
        super().__init__(
            f"flow {flow!r}: oscillation blocked: edge {source!r} -> {target!r} traversed more than {limit} "
            "time(s) in one turn"
        )


class FlowDriftError(FlowRuntimeError):
    """A parked run was pinned to another definition of its flow than the one running now.

    ``flow``, ``pinned`` (the run's digest) and ``current`` (the flow's digest now) say which.
    """

    code = "flow-drift"

    def __init__(self, message: str, *, flow: str = "", pinned: str = "", current: str = "") -> None:
        super().__init__(message)
        self.flow, self.pinned, self.current = flow, pinned, current


class ToolError(FlowRuntimeError):
    """A tool is unknown, or was called with arguments its input model rejects."""

    code = "tool-error"


class RecoverableToolError(ToolError):
    """A tool (or action) failure the customer can fix, e.g. an address the carrier rejects.

    Raised from an action (or a tool it calls) with no ``on_fail``, it sends the run back to the
    collect node it passed earlier in the turn: that node's fields are cleared and asked again,
    ``user_message`` (when given) is said first. With no earlier collect node the run degrades.
    """

    code = "recoverable-tool-error"

    def __init__(self, message: str, user_message: str | None = None) -> None:
        super().__init__(message)
        self.user_message = user_message


class NodeFailedError(FlowRuntimeError):
    """User code of a node failed while it ran (an action raised or called a tool the agent does
    not have, a ``next``/``on_complete``/``decide``/``response`` function raised). The message
    names the flow, the node and the exception. In a turn the run degrades (seed 000): an
    ``error`` event, an entry in the session's error log, the agent's failure reply."""

    code = "node-failed"

    def __init__(self, message: str, *, flow: str | None = None, node: str | None = None) -> None:
        super().__init__(message)
        self.flow, self.node = flow, node


class TemplatePlaceholderError(FlowRuntimeError):
    """A ``{placeholder}`` in a template names no value the node can see at run time."""

    code = "template-placeholder"

    def __init__(self, message: str, *, placeholder: str) -> None:
        super().__init__(message)
        self.placeholder = placeholder


class EffectInDoubtError(FlowRuntimeError):
    """A journaled effect started and has no recorded result (its worker stopped), and its
    policy does not allow running it again."""

    code = "effect-in-doubt"


class JournalMismatchError(FlowRuntimeError):
    """An action's effects do not match what the journal recorded for the same key (the action
    performed them in another order, or others): its recorded results cannot be trusted."""

    code = "journal-mismatch"


class ModelConfigurationError(FlowRuntimeError):
    """A node needs a model, or a model capability, that is not configured."""

    code = "model-configuration"


ModelErrorKind = Literal[
    "aborted",
    "timeout",
    "network",
    "overload",
    "rate",
    "unknown",
    "quota",
    "entitlement",
    "auth",
    "model",
    "invalid",
    "content",
    "context",
]

_RETRYABLE_KINDS = frozenset({"aborted", "timeout", "network", "overload", "rate", "unknown"})


class ModelError(TetherError, RuntimeError):
    """A model provider failed.

    ``kind`` is one of the thirteen provider error kinds; ``retryable`` says whether waiting can fix
    it (by default: aborted/timeout/network/overload/rate/unknown, and quota only when the
    provider stated a ``reset_at``).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ModelErrorKind = "unknown",
        retryable: bool | None = None,
        reset_at: datetime | None = None,
        status: int | None = None,
        provider: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, code=f"model-{kind}")
        self.kind: ModelErrorKind = kind
        self.reset_at = reset_at
        self.status = status
        self.provider = provider
        self.attempts = attempts
        if retryable is None:
            retryable = kind in _RETRYABLE_KINDS or (kind == "quota" and reset_at is not None)
        self.retryable = retryable


# --------------------------------------------------------------------------- store errors


class StoreError(TetherError, RuntimeError):
    """A store backend failed (SESSION_STORE_ERROR)."""

    code = "SESSION_STORE_ERROR"

    def __init__(self, message: str, *, operation: str | None = None, session_id: str | None = None) -> None:
        super().__init__(message)
        self.operation = operation
        self.session_id = session_id


class SessionConflict(StoreError):
    """The stored revision is not the expected one: another writer got there first."""

    code = "SESSION_CONFLICT"

    def __init__(
        self, session_id: str, *, expected: int | None = None, actual: int | None = None, operation: str = "save"
    ) -> None:
        super().__init__(
            f"Session {session_id!r} was changed or removed by another request.",
            operation=operation,
            session_id=session_id,
        )
        self.expected = expected
        self.actual = actual


class SessionFlowMismatch(StoreError):
    """The session is bound to another agent than the one the request names."""

    code = "SESSION_FLOW_MISMATCH"

    def __init__(self, session_id: str, bound: str, requested: str) -> None:
        super().__init__(
            f"Session {session_id!r} belongs to agent {bound!r}, not {requested!r}.",
            operation="load",
            session_id=session_id,
        )
        self.bound, self.requested = bound, requested


class SessionFlowInvariant(StoreError):
    """A stored session document is malformed."""

    code = "SESSION_FLOW_INVARIANT"


class SessionVersionUnsupported(StoreError):
    """This tether cannot read the stored document's shape: a newer tether wrote it (its
    ``schema_version`` is above ours, or it holds top-level fields ours does not know at our
    version), or it is older than ours and no migration upgrades it.

    The document is left untouched: a worker must neither run a document it cannot read nor
    replace it with a new session.
    """

    code = "SESSION_VERSION_UNSUPPORTED"

    def __init__(self, session_id: str, *, stored: int, supported: int, operation: str = "load",
                 unknown_fields: Sequence[str] = ()) -> None:
        if stored < supported:
            message = (f"Session {session_id!r} has schema version {stored}, older than this tether reads "
                       f"({supported}), and no migration upgrades it: register one (Runtime(migrations=...)) or "
                       f"an on_restore hook that decides; the document is kept as it is.")
        elif unknown_fields:
            message = (f"Session {session_id!r} holds fields this tether does not know "
                       f"({', '.join(unknown_fields)}) at schema version {stored}: a newer tether wrote it; "
                       f"upgrade tether to continue it.")
        else:
            message = (f"Session {session_id!r} has schema version {stored}, newer than this tether supports "
                       f"({supported}); upgrade tether to continue it.")
        super().__init__(message, operation=operation, session_id=session_id)
        self.stored_version, self.supported_version = stored, supported
        self.unknown_fields = tuple(unknown_fields)


class SessionLeaseTimeout(StoreError):
    """Another worker held the session's lease for longer than the caller would wait."""

    code = "SESSION_LEASE_TIMEOUT"

    def __init__(self, session_id: str, *, timeout: float, holder: str | None = None) -> None:
        by = f" (held by {holder})" if holder else ""
        super().__init__(
            f"Session {session_id!r} is busy: another worker held its lease for more than {timeout:g}s{by}.",
            operation="lease",
            session_id=session_id,
        )
        self.timeout, self.holder = timeout, holder


# --------------------------------------------------------------------------- executor errors


class ExecutorError(TetherError, RuntimeError):
    """The process executor could not run a command."""

    code = "executor-error"


class SpawnError(ExecutorError):
    """The command could not be started (missing binary, bad working directory, ...)."""

    code = "spawn-failed"


# --------------------------------------------------------------------------- workflow errors


class WorkflowError(TetherError):
    """Base of the errors raised by workflows (``tether.workflow``)."""

    code = "workflow-error"


class WorkflowDefinitionError(WorkflowError, FlowDefinitionError):
    """A workflow definition is invalid. Each issue's ``path`` is a dot path (``<root>`` for the
    top level) and ``str(error)`` lists ``path: message`` lines, e.g.
    ``<root>: Unrecognized key: "whoops"``."""

    code = "workflow-definition"

    def __init__(self, issues: list[DefinitionIssue] | DefinitionIssue, *, title: str | None = None) -> None:
        FlowDefinitionError.__init__(self, issues, title=title)
        lines = "\n".join(f"{issue.path or '<root>'}: {issue.message}" for issue in self.issues)
        self.args = (lines,)


class WorkflowExpressionError(WorkflowError, ValueError):
    """A bounded expression (guard, binding, route) failed to evaluate.

    ``skipped_producer`` names the skipped node whose output the expression reads, if that is why.
    """

    code = "workflow-expression"

    def __init__(self, message: str, *, node: str | None = None, skipped_producer: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.node = node
        self.skipped_producer = skipped_producer


class WorkflowOperationError(WorkflowError, RuntimeError):
    """A host operation on a workflow run was refused; ``code`` says why."""

    code = "workflow-operation"

    def __init__(self, message: str, *, code: str | None = None, node: str | None = None) -> None:
        super().__init__(message, code=code)
        self.node = node


# --------------------------------------------------------------------------- control signals


class TetherSignal(BaseException):
    """Base of control-flow signals. Derives from BaseException so ``except Exception`` cannot
    swallow it."""


class CheckpointFailed(TetherSignal):
    """The host's mid-turn save (``TurnOptions.checkpoint``) raised ``error``: the turn stops at
    once. A signal, so author code that catches ``Exception`` (an action wrapping ``ctx.tool``)
    cannot swallow a store failure and go on with a turn that can no longer be saved;
    ``Agent.turn`` raises ``error`` itself to its caller."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Suspend(TetherSignal):
    """A run parks durably until a later input (approval, signal) resumes it."""

    def __init__(self, reason: str, *, key: str | None = None, payload: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key
        self.payload = payload or {}
