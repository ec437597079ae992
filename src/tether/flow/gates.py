"""Post-run verification gates, evaluated when a flow reaches a terminal transition.

- ``predicate_gate(id, when)``: ``when(scope)`` over ``input``, ``state``, ``results`` and
  ``request_context``; no model call.
- ``judge_gate(id, inputs=[paths], rubric=None)``: a structured ``judge`` model verdict
  ``{pass, reason}`` over only the allow-listed run-record paths.

Severity ``blocking`` (default) or ``advisory``. A failed blocking gate, or any gate that failed
to execute (a predicate that raised, a missing judge model, an invalid verdict), sets the run's
verification outcome to ``failed-verification``; advisory failures are recorded only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Gate", "GateScope", "JudgeGate", "PredicateGate", "Severity", "judge_gate", "predicate_gate"]

Severity = Literal["blocking", "advisory"]
GATE_ROOTS = ("input", "state", "results", "request_context")


@dataclass(frozen=True)
class GateScope:
    """What a gate sees: the run's input, its state, per-node results and the host's context."""

    input: Any
    state: Mapping[str, Any]
    results: Mapping[str, Any]
    request_context: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"input": self.input, "state": dict(self.state), "results": dict(self.results),
                "request_context": dict(self.request_context)}


@dataclass(frozen=True)
class PredicateGate:
    """A code predicate over the run record."""

    id: str
    when: Callable[[GateScope], bool]
    severity: Severity = "blocking"
    kind: Literal["predicate"] = "predicate"


@dataclass(frozen=True)
class JudgeGate:
    """A model verdict over the allow-listed ``inputs`` paths (``state.x``, ``results.node``...)."""

    id: str
    inputs: tuple[str, ...]
    rubric: str | None = None
    severity: Severity = "blocking"
    kind: Literal["judge"] = "judge"


Gate = PredicateGate | JudgeGate


def predicate_gate(id: str, when: Callable[[GateScope], bool], *, severity: Severity = "blocking") -> PredicateGate:
    """A gate that passes when ``when(scope)`` is true."""
    return PredicateGate(id, when, severity)


def judge_gate(id: str, *, inputs: list[str] | tuple[str, ...], rubric: str | None = None,
               severity: Severity = "blocking") -> JudgeGate:
    """A gate judged by a model over the listed run-record paths."""
    return JudgeGate(id, tuple(inputs), rubric, severity)
