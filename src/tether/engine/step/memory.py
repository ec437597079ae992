"""Memory namespaces of agent steps, and their opt-in summaries.

A namespace is a named message history (``session.memory``), one per agent node by default; steps
that share a namespace share history. The system message is not stored: it is the executing
step's prompt, installed on every call. A namespace with summaries on (``summary=`` on a step
using it) is compacted at the end of the turn, before the save: once it holds ``min_messages``
(the system slot counted), the older messages are folded into a cumulative summary and the last
``recent_messages`` kept, never separating an assistant's tool calls from their results. The
summary reaches the model as a second system message. A failure is a warning (``Memory
compaction skipped: ...``) and the turn still succeeds; the transcript is never touched.

A namespace without summaries is bounded too: at the end of the turn it keeps at most the agent's
``history_window`` messages (40 by default), the oldest leaving it so that what stays opens with a
user message (a tool call never loses its results). The transcript is not touched.
"""

from __future__ import annotations

import json
from typing import Any

from tether.engine.core.session import MemorySpace
from tether.engine.core.state import TurnState
from tether.errors import ModelConfigurationError, ModelError, TetherError
from tether.flow.steps import AgentNode, MemorySummary
from tether.models.types import ChatMessage, ModelRequest, ToolCall

__all__ = ["SUMMARY_NOTE", "append", "append_to", "as_chat", "compact_memories", "space", "summaries"]

SUMMARY_NOTE = "Conversation memory for this step:\n"
SUMMARY_INSTRUCTIONS = (
    "You keep the memory of a conversation between a customer and an assistant. Write an updated, "
    "cumulative summary that merges the previous summary (if any) with the messages below: keep every "
    "fact, decision, value and open question; drop small talk. Reply with the summary text only."
)


def space(ts: TurnState, name: str) -> MemorySpace:
    """The namespace ``name`` (created empty when new)."""
    found = ts.session.memory.get(name)
    if found is None:
        found = ts.session.memory[name] = MemorySpace()
    return found


def append(ts: TurnState, name: str, role: str, content: str, *, step: str,
           tool_calls: tuple[ToolCall, ...] = (), tool_call_id: str | None = None,
           tool_name: str | None = None) -> dict[str, Any]:
    """Append one message to namespace ``name``."""
    return append_to(space(ts, name), role, content, step=step, tool_calls=tool_calls, tool_call_id=tool_call_id,
                     tool_name=tool_name)


def append_to(memory: MemorySpace, role: str, content: str, *, step: str, tool_calls: tuple[ToolCall, ...] = (),
              tool_call_id: str | None = None, tool_name: str | None = None) -> dict[str, Any]:
    """Append one message to ``memory``."""
    message: dict[str, Any] = {"n": memory.next_n, "role": role, "content": content, "step": step}
    if tool_calls:
        message["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in tool_calls]
    if tool_call_id is not None:
        message["tool_call_id"] = tool_call_id
        message["name"] = tool_name
    memory.next_n += 1
    memory.messages.append(message)
    return message


UNANSWERED = json.dumps({"error": "the tool call failed and returned nothing"})
"""The tool message a model call gets for a call of an earlier turn that has none (its handler
raised and the turn failed): every provider refuses a history with a tool call left unanswered."""


def as_chat(memory: MemorySpace) -> list[ChatMessage]:
    """The namespace as the chat messages a model call sees (the summary first, as a system note).
    A tool call with no tool message after it gets :data:`UNANSWERED` right after its message."""
    chat: list[ChatMessage] = []
    if memory.summary:
        chat.append(ChatMessage("system", SUMMARY_NOTE + memory.summary))
    answered = {m.get("tool_call_id") for m in memory.messages if m["role"] == "tool"}
    for message in memory.messages:
        calls = tuple(ToolCall(c["id"], c["name"], dict(c.get("arguments") or {}))
                      for c in message.get("tool_calls", ()))
        chat.append(ChatMessage(message["role"], message.get("content") or "", tool_calls=calls,
                                tool_call_id=message.get("tool_call_id"), name=message.get("name")))
        chat.extend(ChatMessage("tool", UNANSWERED, tool_call_id=call.id, name=call.name)
                    for call in calls if call.id not in answered)
    return chat


def summaries(ts: TurnState) -> dict[str, MemorySummary]:
    """The namespaces with summaries on, from every agent step that sets ``summary``."""
    found: dict[str, MemorySummary] = {}
    for flow in ts.agent.flows:
        for node in flow.nodes:
            if isinstance(node, AgentNode) and node.summary is not None:
                found.setdefault(node.namespace, node.summary)
    return found


def _cut(messages: list[dict[str, Any]], recent: int) -> int:
    """How many of the oldest messages to fold away: all but ``recent``, moved back so the kept
    tail never opens with a tool result whose call would be folded away."""
    cut = len(messages) - recent
    while cut > 0 and messages[cut]["role"] == "tool":
        cut -= 1
    return cut


def _trim(messages: list[dict[str, Any]], limit: int) -> int:
    """How many of the oldest messages leave a namespace without summaries: enough that at most
    ``limit`` stay, moved on so the kept tail opens with a user message (0 when none would)."""
    cut = len(messages) - limit
    if cut <= 0:
        return 0
    while cut < len(messages) and messages[cut]["role"] != "user":
        cut += 1
    return cut if cut < len(messages) else 0


async def compact_memories(ts: TurnState) -> None:
    """Compact every namespace with summaries on that is due, and trim the others to the agent's
    ``history_window`` (end of turn, before the save)."""
    configs = summaries(ts)
    for name, namespace in ts.session.memory.items():
        if name not in configs and (cut := _trim(namespace.messages, ts.agent.history_window)):
            del namespace.messages[:cut]
            ts.outcome(None, kind="compaction", detail=f"memory {name!r}: the {cut} oldest message(s) left it")
    for name, config in configs.items():
        memory = ts.session.memory.get(name)
        if memory is None or len(memory.messages) + 1 < config.min_messages:  # + the system slot
            continue
        cut = _cut(memory.messages, config.recent_messages)
        if cut <= 0:
            continue
        evicted, kept = memory.messages[:cut], memory.messages[cut:]
        try:
            summary = await _summarize(ts, config, memory.summary, evicted)
        except (ModelError, TetherError) as exc:
            ts.log("warn", f"Memory compaction skipped: {exc}", namespace=name)
            continue
        ts.session.memory[name] = memory.model_copy(update={
            "messages": kept, "summary": summary, "summarized_through": evicted[-1]["n"]})


async def _summarize(ts: TurnState, config: MemorySummary, previous: str | None,
                     evicted: list[dict[str, Any]]) -> str:
    lines = []
    for message in evicted:
        if message.get("tool_calls"):
            calls = ", ".join(f"{c['name']}({c.get('arguments')})" for c in message["tool_calls"])
            lines.append(f"assistant called: {calls}")
        if message.get("content"):
            who = f"tool {message.get('name')}" if message["role"] == "tool" else message["role"]
            lines.append(f"{who}: {message['content']}")
    body = (f"Previous summary:\n{previous}\n\n" if previous else "") + "Messages:\n" + "\n".join(lines)
    tier = config.tier
    try:
        model = ts.model(tier, needed_for="memory compaction")
    except ModelConfigurationError:  # the tier is not configured: the default model summarises
        tier = "default"
        model = ts.model(tier, needed_for="memory compaction")
    response = await ts.call(model, ModelRequest(call="summary", instructions=SUMMARY_INSTRUCTIONS,
                                                 messages=(ChatMessage("user", body),), tier=tier))
    text = response.text.strip()
    if not text:
        raise ModelError("the summary model returned no text", kind="invalid")
    return text
