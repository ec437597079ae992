"""The model-and-tools loop of an agent step (seed 004): each model call, the tool calls of its
reply, and the moves they return, applied in the seed's order.

Each model call installs the step's prompt as the system message, binds its tools and, when the
step declares one, its output schema; it is journaled (a re-dispatch of the same turn reads the
recorded reply), retried on an empty reply (with a corrective message) or when
``check_response`` asks, and counted as an agent call, apart from the message-turn budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tether.engine.core.effects import Effects
from tether.engine.core.pauses import ASKING
from tether.engine.core.session import MemorySpace, Run
from tether.engine.core.state import TurnState
from tether.engine.step.memory import append, append_to, as_chat, space
from tether.engine.step.tools import ToolRound, as_move, dispatch_tools, exposed_specs
from tether.engine.step.view import StepView, call_hook
from tether.errors import ModelConfigurationError, NodeFailedError
from tether.flow.flow import Flow
from tether.flow.moves import StepMove
from tether.flow.steps import AgentNode
from tether.flow.transitions import End, Goto
from tether.models.types import ChatMessage, Model, ModelRequest, ModelResponse, ResponseFormat, ToolCall

__all__ = ["BOOK", "CORRECTIVE_MESSAGE", "ChildReply", "book", "content_type_of", "converse", "memory_of"]

BOOK = "__agent"
"""The run-state key of the agent steps' bookkeeping (current step, prompts, content types)."""
CORRECTIVE_MESSAGE = "Follow system prompt and respond properly."


def book(run: Run) -> dict[str, Any]:
    """The run's agent-step bookkeeping: ``at`` (the current agent step), ``entered`` (a step
    whose ``on_enter`` already ran for the move being applied), ``prior``, ``prompts`` and
    ``content_types`` set by moves."""
    found = run.state.get(BOOK)
    if not isinstance(found, dict):
        found = run.state[BOOK] = {"at": None, "entered": None, "prior": None, "prompts": {}, "content_types": {}}
    return found


def content_type_of(run: Run, node: AgentNode) -> str:
    value = book(run)["content_types"].get(node.id)
    return value if isinstance(value, str) else node.content_type


# ---------------------------------------------------------------------------------- the loop


def memory_of(ts: TurnState, node: AgentNode, ctx: StepView) -> MemorySpace:
    """The memory the executing step reads and writes (a parallel child's is private)."""
    frame = ctx._frame
    return frame.memory if frame is not None and frame.memory is not None else space(ts, node.namespace)


async def converse(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepView,
                   effects: Effects | None = None) -> Any:
    """The model loop of the executing step. At top level it returns the engine's transition (or
    the pause after a reply); in a child frame, the reply's content."""
    if effects is None:
        effects = Effects(ts, run, flow.id, node.id)
        effects.step_key = f"{ts.key(run, node.id)}:m{ts.user_seq or 0}"
    ctx._effects = effects
    frame = ctx._frame
    memory = memory_of(ts, node, ctx)
    if frame is None:
        book(run)["open"] = {"memory": len(memory.messages)}  # cleared when the loop returns
        try:
            return await _loop(ts, run, flow, node, ctx, effects, memory)
        finally:
            book(run).pop("open", None)
    return await _loop(ts, run, flow, node, ctx, effects, memory)


async def _loop(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepView, effects: Effects,
                memory: MemorySpace) -> Any:
    frame = ctx._frame
    rounds = 0
    while True:
        response = await _attempts(ts, run, flow, node, effects, ctx)
        if response.tool_calls:
            rounds += 1
            if rounds > node.max_tool_rounds:
                raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: the model called tools in more than "
                                      f"{node.max_tool_rounds} rounds in one turn (max_tool_rounds)",
                                      flow=flow.id, node=node.id)
            append_to(memory, "assistant", response.text, step=node.id, tool_calls=response.tool_calls)
            round_ = await dispatch_tools(ts, run, flow, node, ctx, effects, response.tool_calls)
            outcome = await _apply(ts, run, flow, node, ctx, round_.move, round_)
            if outcome is not None:
                return outcome.content if isinstance(outcome, ChildReply) else outcome
            continue
        content: Any = response.data if node.response_schema is not None and response.data is not None \
            else response.text
        rewritten = await call_hook(node.on_response, content, ctx) if node.on_response is not None else content
        move = as_move(rewritten, flow, node)
        if move is not None:
            outcome = await _apply(ts, run, flow, node, ctx, move, None)
            if outcome is not None:
                return outcome.content if isinstance(outcome, ChildReply) else outcome
            continue
        text = rewritten if isinstance(rewritten, str) else json.dumps(rewritten, default=str)
        if frame is not None:  # a child's reply goes back to its owner, not to the customer
            append_to(memory, "assistant", text, step=node.id)
            return rewritten
        _reply(ts, run, node, text)
        ts.outcome(run, kind="agent", node_id=node.id)
        if node.end:
            return End("completed")
        run.status = "asking"
        return ASKING


def _reply(ts: TurnState, run: Run, node: AgentNode, text: str) -> None:
    append(ts, node.namespace, "assistant", text, step=node.id)
    ts.content_type = content_type_of(run, node)
    ts.say(text, kind="ai", key=ts.key(run, node.id), run=run, node_id=node.id)


@dataclass(frozen=True)
class ChildReply:
    """A child step's ``direct`` answer (returned to its owner)."""

    content: str


async def _apply(ts: TurnState, run: Run, flow: Flow, node: AgentNode, ctx: StepView, move: StepMove | End,
                 round_: ToolRound | None) -> Any:
    """Apply ``move`` in the seed's effect order; returns the engine transition (or the pause
    after a direct reply), or None to call the model again on this step."""
    memory = memory_of(ts, node, ctx)
    target_id = node.id if isinstance(move, End) else move.step or node.id
    if ctx._frame is not None and (isinstance(move, End) or (move.kind == "go" and target_id != node.id)):
        name = "end" if isinstance(move, End) else target_id
        raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: Cannot goto {name!r} from a child execution "
                              "frame. Return a result to the owning step instead.", flow=flow.id, node=node.id)
    if isinstance(move, End):
        await call_hook(node.on_exit, ctx)
        if round_ is not None:
            round_.write_tool_messages(memory, node)
        return move
    if target_id not in flow.by_id:
        raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: go({target_id!r}) names no node of the flow",
                              flow=flow.id, node=node.id)
    target = flow.by_id[target_id]
    moving = move.kind == "go" and target_id != node.id
    bk = book(run)
    # 1. the transition: the step left, then the step entered
    if moving:
        await call_hook(node.on_exit, ctx)
        bk.update(at=target_id, entered=target_id, prior=node.id)
        if isinstance(target, AgentNode):
            await call_hook(target.on_enter, ctx.at(target))
    # 2. the prompt and 3. the state, on the destination
    if move.prompt is not None:
        (ctx._frame.prompts if ctx._frame is not None else bk["prompts"])[target_id] = move.prompt
    if move.state:
        ctx.set(**move.state)
    # 4. the content type
    if move.content_type is not None and ctx._frame is None:
        bk["content_types"][target_id] = move.content_type
    # 5. one tool message per tool call
    if round_ is not None:
        round_.write_tool_messages(memory, node)
    # 6. the message
    if move.kind == "direct" and ctx._frame is not None:
        append_to(memory, "assistant", move.message or "", step=node.id)
        return ChildReply(move.message or "")
    if move.kind == "direct":
        _reply(ts, run, node, move.message or "")
        ts.outcome(run, kind="agent", node_id=node.id, detail="direct")
        run.status = "asking"
        return ASKING
    if move.message is not None:
        destination = memory_of(ts, target, ctx) if isinstance(target, AgentNode) else memory
        append_to(destination, "user", move.message, step=target_id)
    if moving:
        return Goto(target_id)
    return None


# ---------------------------------------------------------------------------------- model calls


def _prompt(ts: TurnState, run: Run, node: AgentNode, ctx: StepView) -> str:
    prompts = ctx._frame.prompts if ctx._frame is not None else book(run)["prompts"]
    override = prompts.get(node.id)
    if isinstance(override, str):
        return override
    state = ctx.state
    if callable(node.prompt):
        return str(node.prompt(state))
    if isinstance(node.prompt, str):
        return ts.render(node.prompt, run, where="prompt", state=state)
    return f"You are the step {node.id!r} of a conversation."


def _model(ts: TurnState, flow: Flow, node: AgentNode) -> Model:
    if node.model is not None and not isinstance(node.model, str):
        return node.model  # type: ignore[no-any-return]
    if isinstance(node.model, str):
        named = getattr(ts.models, "model_named", None)
        if named is None:
            raise ModelConfigurationError(f"agent node {node.id!r} of flow {flow.id!r} names model {node.model!r}, "
                                          "and this host cannot resolve models by name (pass a Model)")
        return named(node.model)  # type: ignore[no-any-return]
    return ts.model(node.tier, needed_for=f"agent node {node.id!r} of flow {flow.id!r}")


async def _attempts(ts: TurnState, run: Run, flow: Flow, node: AgentNode, effects: Effects,
                    ctx: StepView) -> ModelResponse:
    """One model call of the step, with its attempts: an empty reply is retried with the
    corrective message, and ``check_response`` may ask for another attempt."""
    model = _model(ts, flow, node)
    specs = exposed_specs(ts, flow, node)
    schema = node.response_schema
    corrective = False
    problem = ""
    response = ModelResponse()
    for attempt in range(node.retry_attempts):
        if attempt and ts.options.sleep is not None and node.retry_delay:
            await ts.options.sleep(node.retry_delay)
        messages = [*as_chat(memory_of(ts, node, ctx))]
        if corrective:
            messages.append(ChatMessage("user", CORRECTIVE_MESSAGE))
        request = ModelRequest(call="agent", system=_prompt(ts, run, node, ctx), messages=tuple(messages), tools=specs,
                               response_format=ResponseFormat(schema.__name__, schema.model_json_schema())
                               if schema is not None else None, tier=node.tier or "default")

        async def call(request: ModelRequest = request) -> dict[str, Any]:
            ts.agent_calls += 1
            ts.session.usage.agent_calls += 1
            return _recordable(await ts.call(model, request))

        response = _response(await effects.computed("model", "agent", call))
        if response.tool_calls:
            return response
        if not response.text.strip() and response.data is None:
            corrective = True
            problem = "the model returned an empty reply"
            continue
        if node.check_response is not None and await call_hook(node.check_response, response):
            problem = "check_response asked for another attempt"
            continue
        return response
    raise NodeFailedError(f"flow {flow.id!r}, node {node.id!r}: LLM call failed. Reason:"
                          f"{response.finish_reason or 'unknown'}. Error:{problem} ({node.retry_attempts} attempts)",
                          flow=flow.id, node=node.id)


def _recordable(response: ModelResponse) -> dict[str, Any]:
    return {"text": response.text, "data": response.data, "finish_reason": response.finish_reason,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls]}


def _response(recorded: Mapping[str, Any]) -> ModelResponse:
    calls = tuple(ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
                  for c in recorded.get("tool_calls") or ())
    return ModelResponse(text=recorded.get("text") or "", data=recorded.get("data"), tool_calls=calls,
                         finish_reason=recorded.get("finish_reason"))
