"""Phase 6, Speak: the turn's one speaker, one ``speak`` call (plus one per tool round).

The request is laid out for provider prompt caches (:mod:`tether.engine.graph.prompt_parts`). The
stable ``system`` part: identity, knowledge, the speaker's standing orders and the flow
catalogue. The per-turn ``instructions``, in the seed's order: the flow's name and description,
the step's guideline, the pending fields with their asks, what the run knows (its flow's known
fields, what its steps collected and what its actions stored; fields of other, finished flows are
not presented as this task's facts), the instructions (agent, then flow, then step), a note when
there is no new customer message, what this turn already sent. The customer's message is not
quoted: it is the last user message of the conversation. Departure from seed 003's order: the
response format (what the envelope's keys mean) is part of the stable standing orders, not the
per-turn tail, so that tail stays short and the cacheable prefix long; the schema itself travels
as the request's response format. Likewise what each part of the task means ("Known: use these
values as they are...") is said once in the standing orders, the task's parts carry only their
headings, and the flow's description is its entry in the catalogue (the task names the flow).
When the step's fixed question follows the reply word for word, the task is only to answer the
customer.

The envelope is ``{message, ...pending fields}``, every property required and nullable, so one
call both answers and extracts. A reply is offered only the tools its node declares (``tools=``
on the reply, else on its flow; none by default); the idle speaker, the agent's own voice, is
offered ``idle.tools``, none by default: a tool registered for an action to call (a booking, an
order) is not one the model may call while it chats. Tools run in rounds; after ``max_tool_loops``
rounds the model is asked once more without tools. A provider failure or an empty message is
``deferred``. With no model, a reply with a ``fallback`` says it; any other speaker says the
agent's ``failure_reply`` (the developer's "set TETHER_MODEL" hint goes to the log and an
``error`` event, never to the customer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tether.engine.core.events import ErrorEvent
from tether.engine.core.session import Run
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.collect_fields import ask_text
from tether.engine.graph.corrections import correctable
from tether.engine.graph.extract import collect_field_schema, correction_note
from tether.engine.graph.identity import identity
from tether.engine.graph.prompt_parts import catalogue, run_facts, session_facts
from tether.engine.turn.cannot_handle import cannot_handle_reply
from tether.errors import ModelError, ToolError
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node, Reply, Tier
from tether.flow.tools import Tool, ToolResult
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ChatMessage, ModelRequest, ResponseFormat, ToolSpec
from tether.spoken import spoken

__all__ = ["NO_MODEL_TEXT", "SpeakResult", "choose_speaker", "fallback_text", "speak", "speak_unless_answered"]

NO_MODEL_TEXT = (
    "This step needs a language model to answer, and none is configured. "
    "Set TETHER_MODEL (for example openai:gpt-4o-mini) or start with --model."
)
DEFAULT_GUIDELINE = "Collect what is still missing, one question at a time, in a natural way."
ANSWER_GUIDELINE = "Answer the customer."
SPEAKER_ORDERS = (
    "You speak to the customer for a flow engine that decides what happens next. Say what the task "
    "below asks, using the values it gives as they are; never invent an id, number or status. Answer "
    "the customer's latest message (the last user message of the conversation) unless the task says "
    "there is none, from what you are given only (the knowledge, the task's values, the conversation): "
    "when they do not say, say you don't know rather than guess a policy, price, date or fact, and "
    "offer what you can do. Reply with one JSON object with exactly the keys of the schema: `message` is what "
    "you say to the customer; any other key is a value to read from the customer's messages (null when "
    "not given).\n"
    "The task has these parts, each only when it applies: Today (the date); Current flow (its entry in the "
    "flows below); "
    "Your task now; Still to collect: ask for these naturally, and fill the ones the customer gave; Known: "
    "the task's values, to use as they are and never to ask for again; Background: known from earlier in "
    "the conversation, not a current task; Instructions; Already sent this turn: do not repeat it; Sent "
    "after your reply: sent word for word right after your reply, so ask nothing yourself."
)
BATCH_GUIDELINE = "one message that does each of these, in this order:"
THEN_ASK_GUIDELINE = "Answer the customer's latest message briefly."  # "Sent after your reply" says: ask nothing


@dataclass
class SpeakResult:
    """What the speak phase produced."""

    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    tool_data: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    error: ModelError | None = None
    interrupted: bool = False
    no_model: bool = False
    fallback: bool = False
    covers: tuple[str, ...] = ()
    """With no model, the batched segment whose fallbacks ``text`` joins (every member has one)."""
    corrections: tuple[str, ...] = ()
    """Fields collected before that the envelope offered for correction (a collect step the model
    phrases, answering a message no understand call read for it)."""


def _correctable_here(ts: TurnState, run: Run | None, flow: Flow | None, node: Node | None,
                      fields: tuple[str, ...]) -> list[str]:
    """The fields collected before that this speak call offers for correction: at a collect step
    the model phrases, reading the answer to its question, when no understand call judged that step
    (the correction pattern, within the call the turn makes anyway)."""
    if run is None or flow is None or not isinstance(node, Collect) or ts.message is None \
            or ts.asking_at.get(run.id) != node.id or (run.id, node.id) in ts.judgement.collect \
            or (run.flow, node.id) in ts.judgement.collect:
        return []
    return [name for name in correctable(ts, run, flow, node) if name not in fields]


def _instruction_lines(ts: TurnState, run: Run | None, items: tuple[Any, ...]) -> list[str]:
    from tether.engine.graph.conditions import holds

    lines: list[str] = []
    for item in items:
        if isinstance(item, str):
            lines.append(f"- {item}")
        elif isinstance(item, dict) and "prompt" in item and holds(ts, item.get("if"), run):
            kind = item.get("kind", "should").upper()
            when = item.get("when")
            suffix = f" (apply only when: {' OR '.join(when) if isinstance(when, list) else when})" if when else ""
            lines.append(f"- {kind}: {item['prompt']}{suffix}")
    return lines


def _tools_for(ts: TurnState, flow: Flow | None, node: Node | None) -> list[Tool]:
    """The tools this speaker may call: what its node (else its flow) declares, none by default;
    the idle speaker gets ``idle.tools``, none by default."""
    if ts.agent.max_tool_loops == 0:
        return []
    names: tuple[str, ...] = ()
    if isinstance(node, Reply) and node.tools is not None:
        names = node.tools
    elif flow is not None:
        names = flow.tools or ()
    elif ts.agent.idle is not None and ts.agent.idle.tools is not None:
        names = ts.agent.idle.tools
    return [ts.agent.tools_by_name[n] for n in names if n in ts.agent.tools_by_name]


def speaker_system(ts: TurnState) -> str:
    """The stable system text of every speak call of this agent."""
    return "\n\n".join([identity(ts), SPEAKER_ORDERS, catalogue(ts.agent)])


def _reply_guideline(ts: TurnState, run: Run | None, node: Node) -> Any:
    """A reply's instructions, rendered against the run."""
    if not isinstance(node, Reply):
        return None
    state = ts.state_view(run)
    if isinstance(node.instructions, str):
        return ts.render(node.instructions, run, where="instructions", state=state)
    return node.instructions(state) if callable(node.instructions) else node.instructions


def _prompt(ts: TurnState, run: Run | None, flow: Flow | None, node: Node | None, fields: tuple[str, ...],
            batch: tuple[str, ...] = ()) -> str:
    sections: list[str] = [f"Today: {ts.now:%A %Y-%m-%d}"]  # "within 30 days", "by Thursday": no fact without it
    if flow is not None:
        sections.append(f"Current flow: {flow.id}")  # what it does is in the catalogue (stable text)
    guideline: Any = None
    if isinstance(node, Reply) and len(batch) > 1 and flow is not None:  # a batched segment: seed 000's join
        parts = [part for member in batch if (part := _reply_guideline(ts, run, flow.by_id[member]))]
        guideline = f"{BATCH_GUIDELINE}\n\n" + "\n\n".join(parts) if parts else None
    elif isinstance(node, Reply):
        guideline = _reply_guideline(ts, run, node)
    elif isinstance(node, Collect) and ts.speaker is not None and ts.speaker.then_ask and not fields:
        guideline = THEN_ASK_GUIDELINE  # the step's own question follows, word for word
    elif isinstance(node, Collect):
        guideline = node.prompt or DEFAULT_GUIDELINE
    elif flow is None and ts.agent.idle is not None:
        guideline = ts.agent.idle.prompt or None
    sections.append(f"Your task now: {guideline or ANSWER_GUIDELINE}")
    if isinstance(node, Collect) and fields and run is not None:
        asks = [f"- {name}: {ask_text(ts, run, node, [name])}" for name in fields]
        sections.append("Still to collect:\n" + "\n".join(asks))
    if run is not None and flow is not None:
        if facts := run_facts(ts, run, flow, node):
            listed = "\n".join(f"- {k}: {spoken(v)}" for k, v in facts.items())
            sections.append(f"Known:\n{listed}")
    elif facts := session_facts(ts):
        listed = "\n".join(f"- {k}: {spoken(v)}" for k, v in facts.items())
        sections.append(f"Background:\n{listed}")
    items = ts.agent.instructions + (flow.instructions if flow is not None else ())
    if flow is None and ts.agent.idle is not None:
        items += ts.agent.idle.instructions
    if lines := _instruction_lines(ts, run, items):
        sections.append("Instructions:\n" + "\n".join(lines))
    last = ts.session.messages[-1] if ts.session.messages else None
    # a new message is the conversation's last user message: it is not quoted here again
    if ts.message is None and run is not None and run.id in ts.retrying and last is not None and last.role == "user":
        # only a speak retry: any other wake speaks first, even after a customer message
        sections.append("The customer's last message has no answer yet: answer it.")
    elif ts.message is None:
        sections.append("There is no new customer message: you speak first.")
    if ts.messages:
        sent = "\n".join(f"- {m.text}" for m in ts.messages)
        sections.append(f"Already sent this turn:\n{sent}")
    if ts.speaker is not None and ts.speaker.then_ask:  # the customer asked first: answer, the question follows
        sections.append(f"Sent after your reply:\n{ts.speaker.then_ask}")
    return "\n\n".join(sections)


def _envelope(ts: TurnState, node: Node | None, fields: tuple[str, ...]) -> dict[str, Any]:
    properties: dict[str, Any] = {"message": {"type": ["string", "null"]}}
    if isinstance(node, Collect):
        for name in fields:
            properties[name] = collect_field_schema(ts, node, name)
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _ending_with_the_customer(ts: TurnState, messages: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` without the assistant messages this turn already sent at their end: the task
    lists them ("Already sent this turn"), and a conversation that ends with an assistant message
    is a prefill to Anthropic and to llama.cpp's server, which continue it instead of answering."""
    sent = {m.text for m in ts.messages}
    while messages and messages[-1].role == "assistant" and messages[-1].content in sent:
        messages.pop()
    return messages


def _parse(text: str, data: Any) -> dict[str, Any]:
    if isinstance(data, dict):
        return data
    try:
        parsed = extract_json(text)
    except ReplyParseError:  # prose is the message; a broken object (cut off at max tokens) is no message
        return {} if text.lstrip().startswith("{") else {"message": text}
    return parsed if isinstance(parsed, dict) else {"message": text}


def fallback_text(ts: TurnState, run: Run, node: Node) -> str:
    """What a reply says when no model is configured, or its speak call failed (its ``fallback``, rendered)."""
    assert isinstance(node, Reply) and node.fallback is not None
    state = ts.state_view(run)
    if callable(node.fallback):
        return str(node.fallback(state))
    return ts.render(node.fallback, run, where="fallback", state=state)


async def speak(ts: TurnState, request: SpeakRequest) -> SpeakResult:
    """Make the speak call(s) for ``request``."""
    run = ts.run(request.run_id) if request.run_id else None
    flow = ts.agent.flows_by_id.get(run.flow) if run is not None else None
    node = flow.by_id.get(run.node or "") if flow is not None and run is not None else None
    tier: Tier = getattr(node, "model", None) or "default"
    model = ts.models.model_for(tier)
    if model is None:
        fallback = node.fallback if isinstance(node, Reply) else None
        if fallback is not None:
            assert run is not None and flow is not None and node is not None
            members = [flow.by_id[m] for m in request.batch] if request.batch[:1] == (node.id,) else []
            if len(members) > 1 and all(isinstance(m, Reply) and m.fallback is not None for m in members):
                # a batched segment says every member's fallback, as its one model turn would have
                texts = [fallback_text(ts, run, m) for m in members]
                return SpeakResult(text="\n\n".join(texts), no_model=True, fallback=True, covers=request.batch)
            return SpeakResult(text=fallback_text(ts, run, node), no_model=True, fallback=True)
        where = f"flow {flow.id!r}, node {node.id!r}" if flow is not None and node is not None else "the idle speaker"
        hint = f"{where}: {NO_MODEL_TEXT}"
        if run is None and (ts.consumed_by or ts.started):
            # a run took the message and said nothing (it waits on a signal, or ended quietly):
            # the message was understood, so "I didn't understand" would be false; nothing is said
            return SpeakResult(text="", no_model=True)
        if run is None and ts.agent.repair.on("cannot_handle"):
            # nothing understood the message: saying what the agent can do (the cannot-handle
            # pattern) is how an agent with no model answers it, not a failure: a warning only
            ts.log("warn", hint, code="no-model")
            return SpeakResult(text=cannot_handle_reply(ts), no_model=True)
        # the developer's hint goes to the log and an event; the customer hears the safe reply
        ts.emit(ErrorEvent(run_id=run.id if run else None, flow=flow.id if flow else None, at=ts.now,
                           node=node.id if node else None, error=hint))
        ts.log("error", hint, code="no-model")
        return SpeakResult(text=ts.agent.failure_reply, no_model=True)
    tools = _tools_for(ts, flow, node)
    specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
    messages = _ending_with_the_customer(ts, list(ts.history(run)))
    fixable = _correctable_here(ts, run, flow, node, request.fields)
    result = SpeakResult(corrections=tuple(fixable))
    envelope = ResponseFormat("speak", _envelope(ts, node, request.fields + tuple(fixable)))
    for round_ in range(ts.agent.max_tool_loops + 1):
        offered = specs if round_ < ts.agent.max_tool_loops else ()
        call = ModelRequest(call="speak", system=speaker_system(ts),
                            instructions=_prompt(ts, run, flow, node, request.fields, request.batch)
                            + (f"\n\n{correction_note(ts, fixable).strip()}" if fixable else ""),
                            messages=tuple(messages), tools=offered, response_format=envelope, tier=tier)
        result.calls += 1
        try:
            response = await ts.call(model, call, stream=True)
        except ModelError as exc:
            result.error = exc
            return result
        if response.tool_calls and offered:
            messages.append(ChatMessage("assistant", response.text, tool_calls=response.tool_calls))
            for tool_call in response.tool_calls:
                output = await _run_tool(ts, tools, tool_call.name, tool_call.arguments, result)
                messages.append(ChatMessage("tool", output, tool_call_id=tool_call.id, name=tool_call.name))
            continue
        envelope_data = _parse(response.text, response.data)
        result.data.update({k: v for k, v in envelope_data.items() if k != "message" and v is not None})
        message = envelope_data.get("message")
        result.text = message.strip() if isinstance(message, str) else ""
        barge_in = ts.options.barge_in
        result.interrupted = response.finish_reason == "interrupted" or bool(barge_in is not None and
                                                                              barge_in.is_set())
        break
    if not result.text and not result.interrupted:
        result.error = ModelError("the model returned an empty message", kind="unknown")
    return result


async def _run_tool(ts: TurnState, tools: list[Tool], name: str, arguments: dict[str, Any],
                    result: SpeakResult) -> str:
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        ts.log("warn", f"hallucinated tool: {name}")
        return json.dumps({"error": f"unknown tool {name!r}"})
    try:
        value = await tool.call(arguments)
    except ToolError as exc:
        return json.dumps({"error": str(exc)})
    except Exception as exc:  # a tool's own failure goes back to the model, not out of the turn
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
    if isinstance(value, ToolResult):
        result.tool_data.update(value.data)
        value = value.value
    result.tool_results.append({"tool": name, "arguments": arguments, "value": value})
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    limit = ts.agent.compaction.max_tool_result_chars if ts.agent.compaction is not None else None
    if limit is not None and len(text) > limit:
        text = text[:limit] + f" …[{len(text) - limit} characters cut]"
    return text


def choose_speaker(ts: TurnState) -> SpeakRequest | None:
    """The turn's one speaker: the node that asked to speak, else the idle speaker when a message
    got no answer, nothing is asking and no flow handed the conversation off (none under
    ``silenced``)."""
    if ts.options.silence is not None:
        ts.speaker = None
        return None
    if ts.speaker is not None:
        return ts.speaker
    if ts.message is not None and not ts.answered_by and not ts.messages and ts.agent.idle is not None \
            and ts.handoff is None and not any(r.status == "asking" for r in ts.session.runs):
        ts.speaker = SpeakRequest(None, None)
        return ts.speaker
    return None


async def speak_unless_answered(ts: TurnState, request: SpeakRequest) -> SpeakResult | None:
    """Speak for ``request``, unless another run already answered this message (one answer per
    message: the floor then stays asking)."""
    run = ts.run(request.run_id) if request.run_id else None
    if run is not None and ts.message is not None and run.id == ts.floor and any(
            other != run.id for other in ts.answered_by):
        # one answer per message: another run already answered; the floor stays asking
        ts.outcome(run, code="another-reply", status="skipped", kind="talk", node_id=run.node)
        run.status = "asking"
        return None
    return await speak(ts, request)
