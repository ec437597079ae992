"""Evaluate a flow's post-run verification gates over the run record."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.errors import ModelError
from tether.flow.flow import Flow
from tether.flow.gates import GateScope, JudgeGate, PredicateGate
from tether.flow.resolvers import read_path
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ChatMessage, ModelRequest, ResponseFormat

__all__ = ["JUDGE_SYSTEM", "evaluate_gates"]

JUDGE_SYSTEM = (
    "You are a strict verifier. Judge whether the run record below satisfies the rubric. "
    'Reply with JSON {"pass": boolean, "reason": string}.'
)
DEFAULT_RUBRIC = "The run record is complete, consistent and correct."


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    passed: bool
    reason: str | None = None


def _scope(ts: TurnState, run: Run) -> GateScope:
    state = ts.state_view(run)
    return GateScope(input=run.input if run.input is not None else state, state=state,
                     results=dict(run.state.get("__results", {})), request_context=dict(ts.options.context))


def _payload(scope: GateScope, paths: tuple[str, ...]) -> dict[str, Any]:
    root = scope.as_dict()
    payload: dict[str, Any] = {}
    for path in paths:
        value = read_path(root, path)
        if value is None:
            continue
        cursor = payload
        parts = path.split(".")
        for part in parts[:-1]:
            cursor = cursor.setdefault(part, {})
        cursor[parts[-1]] = value
    return payload


async def _judge(ts: TurnState, gate: JudgeGate, scope: GateScope) -> dict[str, Any]:
    import json

    model = ts.models.gate_judge_model()
    if model is None:  # seed 000: a judge gate requires the flow gate judge; the agent's model never judges
        return {"passed": False, "execution_error": "no gate judge is configured (pass gate_judge= to the agent "
                "or the runtime)"}
    rubric = gate.rubric or DEFAULT_RUBRIC
    schema = {"type": "object", "properties": {"pass": {"type": "boolean"}, "reason": {"type": ["string", "null"]}},
              "required": ["pass", "reason"], "additionalProperties": False}
    request = ModelRequest(call="judge", system=JUDGE_SYSTEM, response_format=ResponseFormat("judge", schema),
                           messages=(ChatMessage("user", f"Rubric: {rubric}\n\nRun record:\n"
                                                 f"{json.dumps(_payload(scope, gate.inputs), default=str)}"),))
    try:
        response = await ts.call(model, request)
        data = response.data if response.data is not None else extract_json(response.text)
        if not isinstance(data, dict) or "pass" not in data:
            raise ValueError(f"not a verdict: {data!r}")
        verdict = Verdict(passed=data["pass"], reason=data.get("reason"))
    except (ModelError, ReplyParseError, ValidationError, ValueError) as exc:
        return {"passed": False, "execution_error": f"judge failed: {exc}"}
    return {"passed": verdict.passed, "reason": verdict.reason}


async def evaluate_gates(ts: TurnState, run: Run, flow: Flow) -> tuple[str, list[dict[str, Any]]]:
    """Evaluate every gate; returns the outcome (``passed`` / ``failed-verification``) and the
    verdicts ``{id, kind, severity, passed, execution_error?, reason?}``."""
    scope = _scope(ts, run)
    verdicts: list[dict[str, Any]] = []
    blocked = False
    for gate in flow.gates:
        result: dict[str, Any]
        if isinstance(gate, PredicateGate):
            try:
                result = {"passed": bool(gate.when(scope))}
            except Exception as exc:  # a gate that failed to execute is always blocking
                result = {"passed": False, "execution_error": f"{type(exc).__name__}: {exc}"}
        else:
            result = await _judge(ts, gate, scope)
        verdict = {"id": gate.id, "kind": gate.kind, "severity": gate.severity, **result}
        verdicts.append(verdict)
        if "execution_error" in result or (not result["passed"] and gate.severity == "blocking"):
            blocked = True
    return ("failed-verification" if blocked else "passed"), verdicts
