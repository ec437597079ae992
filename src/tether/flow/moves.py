"""What an agent step's tool handler (or ``on_response``) returns: a :class:`StepMove`.

- ``go(node)``: move to another step (or to this one: a self-move just calls the model again);
- ``stay(feedback)``: stay on the executing step; ``feedback`` (default ``"input validated"``)
  is the tool message the model reads;
- ``direct(text)``: ``text`` is the reply, with no further model call;
- ``end(reason)`` (the flow's ``end``) also works from a handler.

Builders return a new move and change only their own field::

    go("confirm").with_state({"guests": 2}).with_prompt("Confirm the booking.")

When a move is applied, the effects come in this order (seed 004): the transition (``on_exit``
of the step left, ``on_enter`` of the step entered), then the prompt and the state on the
destination, then the content type, then one tool message per tool call, then the message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MOVE_MARKER", "TOOL_VALIDATED", "StepMove", "direct", "go", "move_from_json"]

TOOL_VALIDATED = "input validated"
"""The tool message of a call whose handler gave no feedback (seed 004's ``K.ToolValidated``)."""

MOVE_MARKER = "__tether_move__"
"""The key that marks a journaled move (a tool function's returned move is stored as JSON)."""

MoveKind = Literal["go", "stay", "direct"]


@dataclass(frozen=True, slots=True)
class StepMove:
    """A transition returned by an agent step's tool handler.

    Attributes:
        kind: ``go``, ``stay`` or ``direct``.
        step: the destination node id (``None``: the executing step).
        tool: the tool message (feedback) for each tool call answered by this move.
        state: fields merged into the run's state.
        prompt: the destination step's prompt from now on (replaces its ``prompt``).
        message: a message appended to the destination's memory after the tool messages (for
            ``direct``: the reply).
        content_type: the destination step's content type from now on.
    """

    kind: MoveKind
    step: str | None = None
    tool: str | None = None
    state: Mapping[str, Any] | None = None
    prompt: str | None = None
    message: str | None = None
    content_type: str | None = None

    def with_state(self, state: Mapping[str, Any]) -> StepMove:
        """Merge ``state`` into the run's state (after the transition)."""
        if not isinstance(state, Mapping):
            raise TypeError(f"with_state() needs a mapping, got {type(state).__name__}")
        return dataclasses.replace(self, state=dict(state))

    def with_prompt(self, prompt: str) -> StepMove:
        """Give the destination step this prompt from now on."""
        return dataclasses.replace(self, prompt=_text("with_prompt", prompt))

    def with_message(self, message: str) -> StepMove:
        """Append ``message`` to the destination's memory after the tool messages."""
        return dataclasses.replace(self, message=_text("with_message", message))

    def with_content_type(self, content_type: str) -> StepMove:
        """Give the destination step this content type (``application/json``, ...)."""
        return dataclasses.replace(self, content_type=_text("with_content_type", content_type))

    def with_tool_feedback(self, feedback: str) -> StepMove:
        """The tool message the model reads for the call(s) this move answers."""
        return dataclasses.replace(self, tool=_text("with_tool_feedback", feedback))

    def as_json(self) -> dict[str, Any]:
        """The journaled form (fields that are set, with the marker)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {MOVE_MARKER: True, **{k: (dict(v) if isinstance(v, Mapping) else v) for k, v in fields.items()
                                      if v is not None}}


def move_from_json(value: Any) -> StepMove | None:
    """A move back from its journaled form; None for any other value."""
    if not isinstance(value, Mapping) or not value.get(MOVE_MARKER):
        return None
    names = {f.name for f in dataclasses.fields(StepMove)}
    return StepMove(**{k: v for k, v in value.items() if k in names})


def _text(builder: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{builder}() needs text, got {type(value).__name__}")
    return value


def go(target: Any) -> StepMove:
    """Move to the step ``target`` (a node id, or a node registered in the flow)."""
    if isinstance(target, str):
        if not target.strip():
            raise ValueError("go() requires a non-empty Step name.")
        return StepMove("go", step=target.strip())
    node_id = getattr(target, "id", None)
    if not isinstance(node_id, str) or not node_id.strip() or not isinstance(getattr(target, "kind", None), str):
        raise TypeError("go() requires a Step constructor with a non-empty ID.")
    return StepMove("go", step=node_id)


def stay_move(feedback: str | None = None) -> StepMove:
    """Stay on the executing step; ``feedback`` is the tool message (default ``input validated``)."""
    return StepMove("stay", tool=TOOL_VALIDATED if feedback is None else _text("stay", feedback))


def direct(content: Any) -> StepMove:
    """Answer with ``content`` (objects as JSON) and make no further model call this turn."""
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    return StepMove("direct", message=text)
