"""The tools of an agent step: what the model is offered, and how one reply's tool calls are
dispatched (seed 004, A2.4).

1. A group handler whose names are exactly the distinct names called answers all the calls (it
   must return a move; anything else fails the step naming the group).
2. Else each call on its own: ``handlers[name]``, else the tool's own function (journaled: a
   re-dispatch of the turn gets the recorded result, the function does not run twice), else the
   built-in ``terminate_session`` (it goes to the flow's terminal step).
3. An exposed tool with no handler: warning ``missing tool handler: <name>``, tool message
   ``input validated``. A tool the step does not expose: warning ``hallucinated tool: <name>``,
   tool message ``LLM hallucinates a non-existing tool: <name>``. Neither aborts the turn.

A handler's value that is not a move is not a transition: a tool function's value is the tool
message (its JSON), a handler's is ignored (the tool message is ``input validated``). The moves
of one reply are applied as one: their states merge in order, and the last move that is not a
``stay`` decides where the conversation goes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from tether.engine.core.effects import Effects
from tether.engine.core.session import MemorySpace, Run
from tether.engine.core.state import TurnState
from tether.engine.step.memory import append_to
from tether.engine.step.view import StepView, call_hook
from tether.errors import NodeFailedError, ToolError
from tether.flow.flow import Flow
from tether.flow.moves import TOOL_VALIDATED, StepMove, go, move_from_json
from tether.flow.nodes import Node
from tether.flow.options import is_model_class
from tether.flow.steps import TERMINATE_TOOL, AgentNode, schema_tool_name
from tether.flow.tools import Tool
from tether.flow.transitions import End, Goto, Stay
from tether.models.types import ToolCall, ToolSpec

__all__ = ["HALLUCINATED", "TERMINATE_SPEC", "ToolRound", "as_move", "dispatch_tools", "exposed", "exposed_specs",
           "terminal_step"]

HALLUCINATED = "LLM hallucinates a non-existing tool: {name}"
TERMINATE_SPEC = ToolSpec(TERMINATE_TOOL, "End the conversation, when the customer asks to stop or the task is "
                          "done. `prompt` may say how to close.",
                          {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": []})

Definition = Tool | type[BaseModel] | None
"""What a step exposes under a name: a tool, a schema-only tool, or None (``terminate_session``)."""


@dataclass
class ToolRound:
    """One model reply's tool calls, dispatched: the tool message of each call and the move."""

    calls: tuple[ToolCall, ...]
    move: StepMove | End
    feedback: dict[str, str] = field(default_factory=dict)

    def write_tool_messages(self, memory: MemorySpace, node: AgentNode) -> None:
        """One tool message per tool call, in the executing step's memory."""
        for call in self.calls:
            append_to(memory, "tool", self.feedback.get(call.id, TOOL_VALIDATED), step=node.id,
                      tool_call_id=call.id, tool_name=call.name)


def exposed(ts: TurnState, node: AgentNode) -> dict[str, Definition]:
    """The tools ``node`` exposes, by name."""
    found: dict[str, Definition] = {}
    for entry in node.tools:
        if isinstance(entry, Tool):
            found.setdefault(entry.name, entry)
        elif is_model_class(entry):
            found.setdefault(schema_tool_name(entry), entry)
        elif entry == TERMINATE_TOOL and entry not in ts.agent.tools_by_name:
            found.setdefault(entry, None)
        elif isinstance(entry, str) and entry in ts.agent.tools_by_name:
            found.setdefault(entry, ts.agent.tools_by_name[entry])
    return found


def exposed_specs(ts: TurnState, flow: Flow, node: AgentNode) -> tuple[ToolSpec, ...]:
    """What the model is offered: every exposed tool's name, description and JSON Schema."""
    del flow
    specs: list[ToolSpec] = []
    for name, definition in exposed(ts, node).items():
        if isinstance(definition, Tool):
            specs.append(ToolSpec(name, definition.description, definition.parameters))
        elif definition is None:
            specs.append(TERMINATE_SPEC)
        else:
            schema = definition.model_json_schema()
            schema.pop("title", None)
            specs.append(ToolSpec(name, inspect.getdoc(definition) or "", schema))
    return tuple(specs)


def terminal_step(flow: Flow) -> AgentNode | None:
    """The flow's terminal step (the first agent node with ``end=True``)."""
    return next((n for n in flow.nodes if isinstance(n, AgentNode) and n.end), None)


def _group(node: AgentNode, names: set[str]) -> tuple[tuple[str, ...], Any] | None:
    for key, handler in node.handlers.items():
        if isinstance(key, tuple) and set(key) == names:
            return key, handler
    return None


async def dispatch_tools(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepView,
                         effects: Effects, calls: tuple[ToolCall, ...]) -> ToolRound:
    """Dispatch one reply's tool calls (see the module notes)."""
    names = {call.name for call in calls}
    group = _group(node, names)
    if group is not None:
        key, handler = group
        result = await call_hook(handler, list(calls), ctx)
        move = as_move(result, flow, node)
        if move is None:
            raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: Group tool handler for {sorted(key)} "
                                  f"returned {_what(result)}.", flow=flow.id, node=node.id)
        feedback = move.tool if isinstance(move, StepMove) and move.tool is not None else TOOL_VALIDATED
        return ToolRound(calls, move, {call.id: feedback for call in calls})
    definitions = exposed(ts, node)
    round_ = ToolRound(calls, StepMove("stay"))
    moves: list[StepMove | End] = []
    for call in calls:
        if call.name not in definitions:
            ts.log("warn", f"hallucinated tool: {call.name}", node=node.id)
            round_.feedback[call.id] = HALLUCINATED.format(name=call.name)
            continue
        result, value = await _handle(ts, run, flow, node, ctx, effects, call, definitions[call.name])
        move = as_move(result, flow, node) if result is not None else None
        if move is not None:
            moves.append(move)
            round_.feedback[call.id] = move.tool if isinstance(move, StepMove) and move.tool else TOOL_VALIDATED
        else:
            round_.feedback[call.id] = value if value is not None else TOOL_VALIDATED
    round_.move = _combined(moves)
    return round_


async def _handle(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepView, effects: Effects,
                  call: ToolCall, definition: Definition) -> tuple[Any, str | None]:
    """Run the handler of one call: ``(its result, the tool message for a non-move value)``."""
    handler = node.handlers.get(call.name)
    if handler is not None:
        problem = _invalid_arguments(call, definition)
        if problem is not None:  # a handler gets only what the tool's schema accepts: the model reads why
            ts.log("warn", problem, node=node.id)
            return None, json.dumps({"error": problem})
        return await call_hook(handler, dict(call.arguments), ctx), None
    if definition is None:  # terminate_session with no handler of its own: go to the terminal step
        terminal = terminal_step(flow)
        if terminal is None:  # refused when the flow is built; kept for flows built before that check
            raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: terminate_session needs a terminal step",
                                  flow=flow.id, node=node.id)
        prompt = call.arguments.get("prompt")
        move = go(terminal.id)
        return (move.with_prompt(prompt) if isinstance(prompt, str) and prompt.strip() else move), None
    if isinstance(definition, Tool):
        try:
            value = await effects.tool(_journaling(definition), call.arguments, lambda data: ctx.set(**data))
        except ToolError as exc:  # bad arguments or a failing tool: the model reads the error and may retry
            ts.log("warn", f"tool {call.name!r} failed: {exc}", node=node.id)
            return None, json.dumps({"error": str(exc)})
        except Exception as exc:
            ts.log("warn", f"tool {call.name!r} failed: {type(exc).__name__}: {exc}", node=node.id)
            return None, json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        recorded = move_from_json(value)
        if recorded is not None:
            return recorded, None
        if isinstance(value, Mapping) and value.get("__tether_end__"):
            return End(str(value.get("reason", "end"))), None
        return None, None if value is None else value if isinstance(value, str) else json.dumps(value, default=str)
    ts.log("warn", f"missing tool handler: {call.name}", node=node.id)
    return None, TOOL_VALIDATED


def _invalid_arguments(call: ToolCall, definition: Definition) -> str | None:
    """What is wrong with the arguments of ``call`` for the schema the step offered (a missing
    required field, a value of the wrong type), or None."""
    if isinstance(definition, Tool):
        try:
            definition.validate(call.arguments)
        except ToolError as exc:
            return str(exc)
        return None
    if definition is None or not is_model_class(definition):
        return None
    try:
        definition.model_validate(dict(call.arguments))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '<args>'}: {err['msg']}"
                             for err in exc.errors())
        return f"tool {call.name!r}: invalid arguments: {problems}"
    return None


def _journaling(tool: Tool) -> Tool:
    """``tool`` with its returned move (or ``end``) in a JSON form the journal can keep."""
    original = tool.fn

    @functools.wraps(original)
    async def run(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, Stay):
            value = value()
        if isinstance(value, StepMove):
            return value.as_json()
        if isinstance(value, End):
            return {"__tether_end__": True, "reason": value.reason}
        return value

    return dataclasses.replace(tool, fn=run)


def _combined(moves: list[StepMove | End]) -> StepMove | End:
    if not moves:
        return StepMove("stay")
    deciding = next((m for m in reversed(moves) if not (isinstance(m, StepMove) and m.kind == "stay")), moves[-1])
    if isinstance(deciding, End):
        return deciding
    state: dict[str, Any] = {}
    for move in moves:
        if isinstance(move, StepMove) and move.state:
            state.update(move.state)
    return dataclasses.replace(deciding, state=state or None)


def _what(result: Any) -> str:
    if result is None:
        return "null|undefined"
    if isinstance(result, str) and not result.strip():
        return "an empty step name"
    if isinstance(result, Mapping):
        return "an object without step" if "step" not in result else "an object with an invalid step"
    return f"an unsupported {type(result).__name__} result"


def as_move(value: Any, flow: Flow, node: Node) -> StepMove | End | None:
    """A handler's (or ``on_response``'s) result as a move; None when it is not one."""
    if isinstance(value, StepMove):
        return value
    if isinstance(value, Stay):
        return value()
    if isinstance(value, End):
        return value
    if isinstance(value, Goto):
        return StepMove("go", step=value.target, state=value.data)
    if isinstance(value, Node):
        return StepMove("go", step=value.id)
    return None
