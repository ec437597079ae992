"""What the chat prints: replies, the info line, the session state."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from tether.cli._stream import status_notes
from tether.engine.core.results import TurnResult
from tether.engine.core.session import Run, Session
from tether.models import Usage

__all__ = ["active_run", "info_line", "print_failure", "print_reply", "state_json", "token_count", "turn_errors"]


def active_run(session: Session | None) -> Run | None:
    """The run the conversation is at: the one asking the user, else the latest run, else None."""
    if session is None or not session.runs:
        return None
    for run in session.runs:
        if run.status == "asking":
            return run
    return session.runs[-1]


def token_count(usage: Usage) -> int | None:
    """Prompt plus completion tokens, or None when the provider reported neither."""
    if usage.prompt_tokens is None and usage.completion_tokens is None:
        return None
    return (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)


def info_line(result: TurnResult | None, session: Session | None) -> str:
    """``[flow/node · N calls · T tokens]``: where the conversation is and what the turn spent."""
    run = active_run(session)
    parts = [f"{run.flow}/{run.node or '-'}" if run is not None else "-"]
    if result is not None:
        calls = result.llm_calls
        parts.append(f"{calls} call" if calls == 1 else f"{calls} calls")
        tokens = token_count(result.usage)
        if tokens is not None:
            parts.append(f"{tokens} tokens")
        if result.handoff is not None:
            reason = f": {result.handoff.reason}" if result.handoff.reason else ""
            parts.append(f"handoff to {result.handoff.agent}{reason}")
        parts.extend(f"error: {' '.join(error.split())}" for error in turn_errors(result))
        parts.extend(f"{o.node_id} failed: {o.detail}" if o.detail else f"{o.node_id} failed"
                     for o in result.outcomes if o.code == "action-failed")
    parts.extend(status_notes(session, handoff_shown=result is not None and result.handoff is not None))
    return "[" + " · ".join(parts) + "]"


def turn_errors(result: TurnResult) -> list[str]:
    """The ``error`` events of the turn (a failed step names its flow, node and exception)."""
    return [str(getattr(event, "error", "")) for event in result.events if event.type == "error"]


def print_reply(console: Console, name: str, result: TurnResult, *, streamed: bool = False) -> None:
    """Each message of the turn on its own line as ``<name>> <text>`` (unless they were
    ``streamed`` already), the choices a node offers (``[Small]  [Large]``), then the info line
    (red when a step failed in the turn)."""
    for message in result.messages if not streamed else ():
        console.print(Text.assemble((f"{name}> ", "bold cyan"), message.text))
    for event in result.events:
        if event.type == "interactive":  # a node offers choices: show them as the buttons a UI would draw
            options = event.as_dict().get("options", [])
            console.print(Text("  " + "  ".join(f"[{option['label']}]" for option in options), style="magenta"))
    console.print(Text(info_line(result, result.session), style="red" if turn_errors(result) else "dim"))


def print_failure(console: Console, message: str, code: str | None) -> None:
    """A failed turn, in red."""
    suffix = f" [{code}]" if code else ""
    console.print(Text(f"error: {message}{suffix}", style="red"))


def state_json(session: Session | None, session_id: str) -> str:
    """The session's id, status, data and runs (flow, node, status) as indented JSON."""
    state: dict[str, Any]
    if session is None:
        state = {"id": session_id, "status": "new", "data": {}, "runs": []}
    else:
        state = {
            "id": session.id,
            "status": session.status,
            "revision": session.revision,
            "data": session.data,
            "runs": [{"flow": run.flow, "node": run.node, "status": run.status} for run in session.runs],
        }
    return json.dumps(state, indent=2, default=str, ensure_ascii=False)
