"""The ``agent`` node kind: a step that is a model turn with its own prompt and tools, whose tool
handlers move the flow (seed 004).

::

    @tool
    def set_dates(check_in: str, check_out: str):
        '''Record the stay's dates.'''
        return go("guests").with_state({"check_in": check_in, "check_out": check_out})

    dates = agent("dates", prompt="Ask for the check-in and check-out dates.",
                  tools=[set_dates, "terminate_session"])

A tool is a :func:`~tether.flow.tools.tool` (its function is its handler), the name of an
agent tool, ``"terminate_session"`` (built in: it goes to the flow's terminal step), or a
pydantic model class (a schema-only tool, named in snake case, whose handler is in
``handlers``). Dispatch precedence for the tool calls of one model reply (seed 004, A2.4):

1. a group handler, ``handlers[("a", "b")]``, whose names are exactly the distinct names called;
2. per call: ``handlers["a"]``, else the tool's own function;
3. an exposed tool with no handler: a session warning ``missing tool handler: <name>``, and the
   tool message ``input validated``; a tool the step does not expose: a warning
   ``hallucinated tool: <name>`` and the tool message ``LLM hallucinates a non-existing tool:
   <name>``. Neither aborts the turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.nodes import Node, Tier
from tether.flow.options import callable_name, is_model_class, listed
from tether.flow.tools import Tool

__all__ = [
    "CLOSING_PROMPT",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "DEFAULT_RETRY_ATTEMPTS",
    "DEFAULT_RETRY_DELAY",
    "DEFAULT_SUMMARY_MIN_MESSAGES",
    "DEFAULT_SUMMARY_RECENT_MESSAGES",
    "NAMESPACE_PATTERN",
    "TERMINATE_TOOL",
    "AgentNode",
    "MemorySummary",
    "agent",
    "namespace_problem",
    "schema_tool_name",
    "step_problems",
    "terminal",
]

TERMINATE_TOOL = "terminate_session"
"""The built-in tool any agent step may expose: it goes to the flow's terminal step."""

DEFAULT_RETRY_ATTEMPTS = 3
DEFAULT_RETRY_DELAY = 0.5
"""Seconds between attempts of a step's model call (an empty reply, or ``check_response``)."""
DEFAULT_MAX_TOOL_ROUNDS = 8
"""Model replies with tool calls one step may take in one turn before it fails loudly."""

DEFAULT_SUMMARY_MIN_MESSAGES = 16
DEFAULT_SUMMARY_RECENT_MESSAGES = 8
NAMESPACE_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,127}$")
RESERVED_NAMESPACES = frozenset({"__proto__", "constructor", "prototype"})

CLOSING_PROMPT = ("The conversation has ended as the customer requested. Say so briefly and politely, "
                  "and discuss nothing else.")
CLOSING_MESSAGE = "I'm done with chat"
"""What a terminal step's arrival puts in its memory (the model answers it with the goodbye)."""


def namespace_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a memory namespace, or None."""
    if not isinstance(name, str) or not NAMESPACE_PATTERN.match(name):
        return f"memory namespace {name!r} must match {NAMESPACE_PATTERN.pattern}"
    if name in RESERVED_NAMESPACES:
        return f"memory namespace {name!r} is reserved"
    return None


@dataclass(frozen=True)
class MemorySummary:
    """Opt-in summaries for one memory namespace: when it holds ``min_messages`` or more (the
    system slot counted), everything but the last ``recent_messages`` is folded into a cumulative
    summary at the end of the turn, before the save (never splitting a tool call from its results).
    ``tier`` is the model tier that writes the summary."""

    min_messages: int = DEFAULT_SUMMARY_MIN_MESSAGES
    recent_messages: int = DEFAULT_SUMMARY_RECENT_MESSAGES
    tier: Tier = "small"

    def problems(self) -> list[str]:
        found: list[str] = []
        if not isinstance(self.min_messages, int) or isinstance(self.min_messages, bool) or self.min_messages < 8:
            found.append(f"min_messages must be an integer >= 8, got {self.min_messages!r}")
        elif not isinstance(self.recent_messages, int) or isinstance(self.recent_messages, bool) or \
                not 1 <= self.recent_messages <= self.min_messages - 2:
            found.append(f"recent_messages must be an integer from 1 to min_messages - 2 "
                         f"({self.min_messages - 2}), got {self.recent_messages!r}")
        if self.tier not in ("default", "small", "deep"):
            found.append(f"tier must be 'default', 'small' or 'deep', got {self.tier!r}")
        return found


def schema_tool_name(model: type[BaseModel]) -> str:
    """The tool name of a schema-only tool: its class name in snake case (``SetDates`` ->
    ``set_dates``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()


@dataclass(eq=False, kw_only=True)
class AgentNode(Node):
    """A model-and-tools step: see :func:`agent`."""

    kind: ClassVar[str] = "agent"

    prompt: str | Callable[[Mapping[str, Any]], str] | None = None
    tools: tuple[Any, ...] = ()
    handlers: Mapping[Any, Callable[..., Any]] = field(default_factory=dict)
    response_schema: type[BaseModel] | None = None
    model: Any = None
    tier: Tier | None = None
    memory: str | None = None
    summary: MemorySummary | None = None
    content_type: str = "text/plain"
    check_response: Callable[..., Any] | None = None
    on_response: Callable[..., Any] | None = None
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_delay: float = DEFAULT_RETRY_DELAY
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    on_start: Callable[..., Any] | None = None
    on_enter: Callable[..., Any] | None = None
    on_crossing: Callable[..., Any] | None = None
    on_exit: Callable[..., Any] | None = None
    on_restore: Callable[..., Any] | None = None
    end: bool = False

    @property
    def namespace(self) -> str:
        """The memory namespace (the node id unless ``memory`` names a shared one)."""
        return self.memory or self.id

    def tool_names(self) -> list[str]:
        """The names of the tools this step exposes, in order."""
        names: list[str] = []
        for entry in self.tools:
            name = entry if isinstance(entry, str) else entry.name if isinstance(entry, Tool) else \
                schema_tool_name(entry) if is_model_class(entry) else None
            if name is not None and name not in names:
                names.append(name)
        return names

    def is_opaque(self) -> bool:
        return not self.end  # tool handlers decide where it goes

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "prompt": self.prompt if isinstance(self.prompt, str | None) else callable_name(self.prompt),
            "tools": self.tool_names(),
            "handlers": {("+".join(k) if isinstance(k, tuple) else str(k)): callable_name(v)
                         for k, v in self.handlers.items()},
            "response_schema": None if self.response_schema is None else self.response_schema.model_json_schema(),
            "model": self.model if isinstance(self.model, str | None) else type(self.model).__name__,
            "tier": self.tier, "memory": self.namespace, "content_type": self.content_type,
            "summary": None if self.summary is None else [self.summary.min_messages, self.summary.recent_messages],
            "retry_attempts": self.retry_attempts, "max_tool_rounds": self.max_tool_rounds, "end": self.end,
            "hooks": {name: callable_name(getattr(self, name)) for name in
                      ("check_response", "on_response", "on_start", "on_enter", "on_crossing", "on_exit",
                       "on_restore")},
        }

    def problems(self) -> list[tuple[str, str]]:
        """Option problems found when the node is defined, as ``(option, message)``."""
        found: list[tuple[str, str]] = []
        if self.prompt is not None and not isinstance(self.prompt, str) and not callable(self.prompt):
            found.append(("prompt", f"prompt must be text or a function of the state, got {self.prompt!r}"))
        for i, entry in enumerate(self.tools):
            if not (isinstance(entry, str | Tool) or is_model_class(entry)):
                found.append((f"tools.{i}", f"a tool is a @tool, a tool name or a pydantic model class, got {entry!r}"))
        exposed = set(self.tool_names())
        for key, handler in self.handlers.items():
            group = key if isinstance(key, tuple) else (key,)
            label = key if isinstance(key, str) else list(key)
            if not group:
                found.append(("handlers", "a group handler needs at least one tool name"))
            elif len(set(group)) != len(group):
                found.append(("handlers", f"group handler {label!r} names a tool more than once"))
            for name in group:
                if not isinstance(name, str) or not name:
                    found.append(("handlers", f"handler key {key!r} must be a tool name or a tuple of names"))
                elif name not in exposed:
                    found.append(("handlers", f"handler for {name!r}: the step does not expose that tool"))
            if not callable(handler):
                found.append(("handlers", f"the handler for {label!r} is not a function"))
        if self.response_schema is not None and not is_model_class(self.response_schema):
            found.append(("output_schema", f"output_schema must be a pydantic model class, got "
                                           f"{self.response_schema!r}"))
        if self.tier is not None and self.tier not in ("default", "small", "deep"):
            found.append(("tier", f"tier must be 'default', 'small' or 'deep', got {self.tier!r}"))
        if self.memory is not None and (problem := namespace_problem(self.memory)):
            found.append(("memory", problem))
        if self.summary is not None:
            found.extend(("summary", message) for message in self.summary.problems())
        if not isinstance(self.content_type, str) or "/" not in self.content_type:
            found.append(("content_type", f"content_type must be a MIME type, got {self.content_type!r}"))
        for option, low in (("retry_attempts", 1), ("max_tool_rounds", 1)):
            value = getattr(self, option)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                found.append((option, f"{option} must be an integer >= {low}, got {value!r}"))
        if not isinstance(self.retry_delay, int | float) or self.retry_delay < 0:
            found.append(("retry_delay", f"retry_delay must be a number of seconds >= 0, got {self.retry_delay!r}"))
        for option in ("check_response", "on_response", "on_start", "on_enter", "on_crossing", "on_exit",
                       "on_restore"):
            value = getattr(self, option)
            if value is not None and not callable(value):
                found.append((option, f"{option} must be a function, got {value!r}"))
        return found


def step_problems(nodes: Sequence[Node]) -> list[tuple[str, str, str]]:
    """Flow-level problems of agent steps, as ``(node id, path, message)``: a step that exposes
    ``terminate_session`` needs a terminal step (``end=True``) in its flow."""
    steps = [n for n in nodes if isinstance(n, AgentNode)]
    if any(n.end for n in steps):
        return []
    return [(n.id, "tools", f"the step exposes {TERMINATE_TOOL!r}, and the flow has no terminal step "
             "(add terminal() or an agent node with end=True)") for n in steps if TERMINATE_TOOL in n.tool_names()]


def agent(
    id: str,
    *,
    prompt: str | Callable[[Mapping[str, Any]], str] | None = None,
    tools: Sequence[Any] = (),
    handlers: Mapping[Any, Callable[..., Any]] | None = None,
    output_schema: type[BaseModel] | None = None,
    model: Any = None,
    tier: Tier | None = None,
    memory: str | None = None,
    summary: MemorySummary | bool | None = None,
    content_type: str = "text/plain",
    check_response: Callable[..., Any] | None = None,
    on_response: Callable[..., Any] | None = None,
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
    retry_delay: float = DEFAULT_RETRY_DELAY,
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    on_start: Callable[..., Any] | None = None,
    on_enter: Callable[..., Any] | None = None,
    on_crossing: Callable[..., Any] | None = None,
    on_exit: Callable[..., Any] | None = None,
    on_restore: Callable[..., Any] | None = None,
    end: bool = False,
    label: str | None = None,
) -> AgentNode:
    """An agent step: a model turn with its own prompt and tools, whose tool handlers return where
    the conversation goes (``go``, ``stay``, ``direct``, ``end``).

    Args:
        prompt: the system message (text with ``${field}`` placeholders, or ``prompt(state)``);
            ``with_prompt`` from a handler replaces it.
        tools: the tools the step exposes (see the module notes).
        handlers: ``{"name": handler(args, ctx)}`` and group handlers
            ``{("a", "b"): handler(calls, ctx)}``; a handler returns a move.
        output_schema: structured output: the reply is JSON matching this model.
        model: a model for this step (a ``Model`` or a ``provider:name`` selection) instead of the
            agent's; ``tier``: the agent's model tier to use (``default``, ``small``, ``deep``).
        memory: the memory namespace (default: the node id); steps sharing one share history.
        summary: opt-in summaries for this step's namespace (``True`` for the defaults, or a
            :class:`MemorySummary`).
        content_type: what the step's replies are (``text/plain``, ``application/json``, ...).
        check_response: ``check_response(response)``; True asks for another attempt.
        on_response: ``on_response(content, ctx)`` may return new text or a move.
        retry_attempts: attempts of one model call (default 3), ``retry_delay`` seconds apart
            (default 0.5); after the last the step fails naming the finish reason.
        max_tool_rounds: model replies with tool calls one turn may take (default 8).
        on_start, on_enter, on_crossing, on_exit, on_restore: step hooks (seed 004's table).
            ``on_crossing(message, prior, ctx)`` may return a message for the step's memory.
        end: a terminal step: arriving completes the session; its reply is the closing message.
    """
    if summary is True:
        summary = MemorySummary()
    node = AgentNode(id=id, prompt=prompt, tools=listed(id, "tools", tools), handlers=dict(handlers or {}),
                     response_schema=output_schema, model=model, tier=tier, memory=memory,
                     summary=summary or None, content_type=content_type, check_response=check_response,
                     on_response=on_response, retry_attempts=retry_attempts, retry_delay=retry_delay,
                     max_tool_rounds=max_tool_rounds, on_start=on_start, on_enter=on_enter, on_crossing=on_crossing,
                     on_exit=on_exit, on_restore=on_restore, end=end, label=label)
    problems = node.problems()
    if problems:
        raise FlowDefinitionError([DefinitionIssue("invalid-option", message, node=id, path=path)
                                   for path, message in problems])
    return node


def terminal(id: str = "terminate", *, prompt: str | None = None, memory: str | None = "temp",
             tier: Tier | None = None, label: str | None = None) -> AgentNode:
    """The terminal step (seed 004's ``TerminateSessionStep``): arriving completes the session, and
    its one reply is the closing message (``prompt``, else a built-in closing instruction)."""
    return agent(id, prompt=prompt or CLOSING_PROMPT, memory=memory, tier=tier, end=True, label=label)
