"""What came back: :class:`ProcessResult` and the self-describing :class:`ProcessRecord`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field

from tether.executors.provenance import Origin
from tether.executors.request import ProcessRequest, Runtime

__all__ = ["ProcessRecord", "ProcessResult"]


class ProcessRecord(BaseModel):
    """The process as authored, so a persisted attempt describes itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runtime: Runtime
    command: str | tuple[str, ...]
    cwd: str
    success_exit: tuple[int, ...]

    @classmethod
    def of(cls, request: ProcessRequest) -> ProcessRecord:
        """The record of ``request``."""
        return cls(
            runtime=request.runtime,
            command=request.command,
            cwd=str(request.cwd),
            success_exit=request.success_exit,
        )


class ProcessResult(BaseModel):
    """One settled attempt of a process (JSON round-trippable).

    Attributes:
        node: the node id of the request.
        process: the process record (runtime, command, cwd, success_exit).
        exit_code: the exit status, or ``None`` when the process did not exit by itself
            (killed by a signal, or never started because the attempt was already aborted).
        signal: the signal that killed the direct child, if any.
        timed_out: the request's ``timeout`` elapsed and the process group was terminated.
        aborted: the caller's abort event fired and the process group was terminated.
        abandoned: the executor did not settle within the budget after an abort; its work may
            still be running (set only by :func:`~tether.executors.retry.retry`).
        group_killed: the executor had to signal the process group (timeout, abort, or
            processes left behind after the direct child exited).
        duration: wall seconds from spawn to settlement.
        fields: captured output, ``<name>`` (from ``fields.<name>``) -> text.
        stdout_bytes / stderr_bytes: total bytes the process wrote to each stream.
        stdout_truncated / stderr_truncated: the stream exceeded the capture limit.
        origins: the bindings' provenance, echoed from the request (binding name -> origins).
        passed: ``exit_code`` in ``success_exit`` and neither timed out, aborted nor abandoned.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    node: str
    process: ProcessRecord
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    aborted: bool = False
    abandoned: bool = False
    group_killed: bool = False
    duration: float = 0.0
    fields: dict[str, str] = Field(default_factory=dict)
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    origins: dict[str, tuple[Origin, ...]] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        """The attempt succeeded: a clean exit inside ``success_exit``, not interrupted."""
        if self.timed_out or self.aborted or self.abandoned or self.exit_code is None:
            return False
        return self.exit_code in self.process.success_exit

    @property
    def settled_cleanly(self) -> bool:
        """The process exited by itself (an exit status exists and nothing interrupted it)."""
        return not (self.timed_out or self.aborted or self.abandoned) and self.exit_code is not None

    @classmethod
    def unstarted(cls, request: ProcessRequest, **flags: bool) -> ProcessResult:
        """A result for an attempt whose process never ran or was given up on."""
        return cls(
            node=request.node,
            process=ProcessRecord.of(request),
            origins={name: b.origins for name, b in request.inputs.items()},
            **flags,
        )
