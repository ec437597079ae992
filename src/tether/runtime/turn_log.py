"""One structured log line per turn, on the ``tether.turn`` logger.

The message is ``key=value`` pairs (logfmt: grep- and parser-friendly), and the same fields are
attached to the record as ``record.turn`` (a dict) for JSON log handlers:

    turn agent=Sam session=7f.. input=message runs=refund:confirm ended=- model_calls=1
    prompt_tokens=812 completion_tokens=41 ms=930 outcomes=extracted,asked success=true code=-

A failed request logs at WARNING with its ``code`` and ``error``; every other turn at INFO.

The line is logged on every turn, so it is made cheaply: nothing at all when the logger is not
enabled for its level, and otherwise one record made with ``Logger.makeRecord`` and handed to
``Logger.handle`` (the logger's filters and handlers, as ``Logger.log`` would), without the walk
up the stack ``Logger.log`` makes to find the caller: the record names this function as its
source. Its message and arguments are those ``Logger.log`` would get (``"turn %s"``, the fields).
"""

from __future__ import annotations

import logging
from typing import Any

from tether.engine.core.inputs import Approval, Event, Signal, Start, TurnInput, Wake
from tether.runtime.envelope import RunResponse

__all__ = ["input_label", "log_turn", "turn_fields"]

log = logging.getLogger("tether.turn")


def input_label(turn_input: TurnInput) -> str:
    """What came in: ``message``, ``wake:KEY``, ``event:NAME``, ``start:FLOW``, ``approval:ID``,
    ``signal:NAME`` or ``resume``."""
    if isinstance(turn_input, Wake):
        return f"wake:{turn_input.key}"
    if isinstance(turn_input, Event):
        return f"event:{turn_input.name}"
    if isinstance(turn_input, Start):
        return f"start:{turn_input.flow}"
    if isinstance(turn_input, Approval):
        return f"approval:{turn_input.approval_id}"
    if isinstance(turn_input, Signal):
        return f"signal:{turn_input.name}"
    return type(turn_input).__name__.lower()


def turn_fields(agent_id: str, session_id: str | None, turn_input: TurnInput, response: RunResponse,
                seconds: float) -> dict[str, Any]:
    """The fields of a turn's log line."""
    result = response.result
    fields: dict[str, Any] = {
        "agent": agent_id,
        "session": response.session or session_id or "",
        "input": input_label(turn_input),
        "runs": [], "ended": [], "model_calls": 0, "prompt_tokens": None, "completion_tokens": None,
        "ms": round(seconds * 1000),
        "outcomes": [],
        "success": response.success,
        "code": response.code,
    }
    if result is not None:
        if result.session is not None:
            fields["runs"] = [f"{run.flow}:{run.node or '-'}" for run in result.session.runs]
        fields["ended"] = [f"{ended.flow}:{ended.reason}" for ended in result.ended]
        fields["model_calls"] = result.llm_calls
        fields["prompt_tokens"] = result.usage.prompt_tokens
        fields["completion_tokens"] = result.usage.completion_tokens
        fields["outcomes"] = result.codes()
    if not response.success:
        fields["error"] = response.message
    return fields


def _value(value: Any) -> str:
    if value is None:
        return "-"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    text = value if type(value) is str else str(value)
    if not text:
        return '""'
    if " " in text or '"' in text or "=" in text or "\n" in text:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def log_turn(agent_id: str, session_id: str | None, turn_input: TurnInput, response: RunResponse,
             seconds: float) -> None:
    """Log the turn's line (INFO; WARNING when the request failed)."""
    level = logging.INFO if response.success else logging.WARNING
    if not log.isEnabledFor(level):
        return
    fields = turn_fields(agent_id, session_id, turn_input, response, seconds)
    line = " ".join([f"{key}={_value(value)}" for key, value in fields.items()])
    log.handle(log.makeRecord(log.name, level, __file__, _LINE, "turn %s", (line,), None, "log_turn",
                              {"turn": fields}))


_LINE = log_turn.__code__.co_firstlineno
