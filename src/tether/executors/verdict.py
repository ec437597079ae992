"""The verdict of a ``check`` node: its exit status read as pass/fail, with evidence.

=========================================================  ==================================
how the attempt ended                                      verdict
=========================================================  ==================================
clean exit inside ``success_exit``                         ``CheckVerdict(passed=True)``
clean exit outside ``success_exit``                        ``CheckVerdict(passed=False)``
spawn failure, timeout, abort, abandoned, killed by signal  ``None`` — no verdict: a plain node
                                                           failure that never escalates
=========================================================  ==================================

Evidence (on both passing and failing verdicts): each compared binding (every input of the
request: value and origins), ``provenance`` and ``inputs`` derived by
:mod:`tether.executors.provenance` (``provenance`` is omitted when nothing was compared), the
process record and the exit code. Nothing on the request can set provenance; it is derived
from the origins alone.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from tether.executors.provenance import (
    Binding,
    InputsLocality,
    Provenance,
    derive_inputs,
    derive_provenance,
)
from tether.executors.request import ProcessRequest
from tether.executors.result import ProcessRecord, ProcessResult

__all__ = ["CheckVerdict", "check_verdict"]


class CheckVerdict(BaseModel):
    """A ``check`` node's verdict and the evidence behind it.

    Attributes:
        node: the check's node id.
        passed: the exit code is inside ``success_exit``.
        exit_code: the process's exit status.
        provenance: ``"verified"`` / ``"asserted"``; ``None`` (omitted when serialized) when
            nothing was compared.
        inputs: ``"flow-local"`` or ``"live"`` (the default).
        compared: the compared bindings (value and origins), by name.
        process: the process record, so a persisted verdict describes itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    passed: bool
    exit_code: int
    provenance: Provenance | None = None
    inputs: InputsLocality = "live"
    compared: dict[str, Binding]
    process: ProcessRecord

    @model_serializer(mode="wrap")
    def _omit_absent_provenance(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("provenance") is None:
            data.pop("provenance", None)
        return data


def check_verdict(
    request: ProcessRequest, outcome: ProcessResult | BaseException | None
) -> CheckVerdict | None:
    """The verdict of ``request``'s attempt, or ``None`` when the attempt produced none.

    ``outcome`` is what :meth:`~tether.executors.executor.Executor.execute` returned, or the
    exception it raised (e.g. :class:`~tether.errors.SpawnError`), or ``None`` if nothing ran.
    """
    if not isinstance(outcome, ProcessResult) or not outcome.settled_cleanly or outcome.exit_code is None:
        return None
    if outcome.node != request.node:
        raise ValueError(
            f"result of node {outcome.node!r} cannot be judged against the request of {request.node!r}"
        )
    compared = dict(request.inputs)
    return CheckVerdict(
        node=request.node,
        passed=outcome.exit_code in request.success_exit,
        exit_code=outcome.exit_code,
        provenance=derive_provenance(compared),
        inputs=derive_inputs(compared),
        compared=compared,
        process=ProcessRecord.of(request),
    )
