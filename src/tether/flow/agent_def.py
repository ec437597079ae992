"""The pure part of an agent: its definition and its validation.

``tether.Agent`` builds on this with model binding and ``turn()``; the engine reads only what is
defined here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from tether.cel import compile_condition
from tether.errors import DefinitionIssue, FlowDefinitionError
from tether.flow.choices import Choice
from tether.flow.fields import Field, FieldType, ItemType
from tether.flow.flow import Flow
from tether.flow.hints import did_you_mean
from tether.flow.nodes import Action, Collect, Decide, Reply, Router, Wait
from tether.flow.old_forms import conditions_of
from tether.flow.old_forms import old_forms as flow_old_forms
from tether.flow.placeholders import placeholder_issues
from tether.flow.repair import Repair
from tether.flow.steps import TERMINATE_TOOL, AgentNode
from tether.flow.tools import Tool
from tether.flow.transitions import StartFlow
from tether.flow.triggers import MentionTrigger, MessageTrigger

__all__ = [
    "BUSY_POLICIES",
    "DEFAULT_FAILURE_REPLY",
    "DEFAULT_HISTORY_WINDOW",
    "AgentDefinition",
    "Compaction",
    "Idle",
]

BUSY_POLICIES = ("queue", "reject", "interrupt")
"""What a host does with a message that arrives while a turn of the same session runs (``on_busy``):
wait behind it in arrival order, refuse it, or interrupt the reply being spoken and then run it."""

RESERVED_CONDITIONS = frozenset({"equals", "known", "silenced"})
CONDITION_NAMES = frozenset({"state", "data", "input", "context", "silenced"})
"""The names a CEL condition of a flow reads (``"state.size == 'large'"``)."""
DEFAULT_FAILURE_REPLY = "I'm sorry — something went wrong on my side. Let me try to help you another way."
"""What the customer hears when a step fails (seed 000's fixed apology), unless the agent sets
``failure_reply``."""
DEFAULT_HISTORY_WINDOW = 40
"""How many of the latest messages an agent's model calls see, unless it sets ``history_window``."""


@dataclass(frozen=True)
class Compaction:
    """Keep the history under ``threshold * max_tokens`` (about 4 characters a token).

    Older messages are shortened, then folded into a summary (one ``summary`` call), else
    truncated; the summary only for an agent whose calls read it (``reads_window``).

    Attributes:
        max_tokens: the model's budget for history.
        threshold: when to compact (0.5-0.95, default 0.8).
        preserve_recent: how many recent messages always stay (>= 2, default 4).
        max_tool_result_chars: a tool result longer than this is cut before the model sees it.
        enabled: switch it off without removing it.
    """

    max_tokens: int
    threshold: float = 0.8
    preserve_recent: int = 4
    max_tool_result_chars: int = 5000
    enabled: bool = True

    def problems(self) -> list[str]:
        found = []
        if not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            found.append(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if not 0.5 <= self.threshold <= 0.95:
            found.append(f"threshold must be between 0.5 and 0.95, got {self.threshold!r}")
        if not isinstance(self.preserve_recent, int) or self.preserve_recent < 2:
            found.append(f"preserve_recent must be an integer >= 2, got {self.preserve_recent!r}")
        if not isinstance(self.max_tool_result_chars, int) or self.max_tool_result_chars <= 0:
            found.append(f"max_tool_result_chars must be a positive integer, got {self.max_tool_result_chars!r}")
        return found


@dataclass(frozen=True)
class Idle:
    """The speaker when no flow answers: a ``prompt`` (``""``: no guideline of its own)."""

    prompt: str = ""
    tools: tuple[str, ...] | None = None
    instructions: tuple[Any, ...] = ()


class AgentDefinition:
    """An agent's definition: identity, fields, flows, actions, tools. Validated on construction.

    Raises:
        FlowDefinitionError: naming the flow and node of every problem found.
    """

    def __init__(
        self,
        name: str,
        *,
        persona: str | None = None,
        goal: str | None = None,
        knowledge: Any = None,
        instructions: Sequence[Any] | str = (),
        fields: Mapping[str, Field] | None = None,
        flows: Sequence[Flow] = (),
        actions: Mapping[str, Callable[..., Any]] | None = None,
        events: Mapping[str, Any] | None = None,
        conditions: Mapping[str, Callable[..., bool]] | None = None,
        tools: Sequence[Tool] = (),
        idle: Idle | str | None = None,
        business_hours: Callable[..., Any] | None = None,
        max_tool_loops: int = 5,
        history_window: int = DEFAULT_HISTORY_WINDOW,
        compaction: Compaction | None = None,
        failure_reply: str | None = None,
        on_busy: str = "queue",
        repair: Repair | None = None,
        id: str | None = None,
    ) -> None:
        self.name = name
        self.id = id or name
        self.persona = persona
        self.goal = goal
        self.knowledge = knowledge
        self.instructions: tuple[Any, ...] = (instructions,) if isinstance(instructions, str) else tuple(instructions)
        self.fields: dict[str, Field] = dict(fields or {})
        self.flows: tuple[Flow, ...] = tuple(flows)
        self.flows_by_id: dict[str, Flow] = {f.id: f for f in self.flows if isinstance(f, Flow)}
        self.actions: dict[str, Callable[..., Any]] = dict(actions or {})
        self.events: dict[str, Any] = dict(events or {})
        self.conditions: dict[str, Callable[..., bool]] = dict(conditions or {})
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.tools_by_name: dict[str, Tool] = {t.name: t for t in self.tools if isinstance(t, Tool)}
        if idle is None:
            self.idle: Idle | None = Idle()
        elif idle == "silent":
            self.idle = None
        elif isinstance(idle, str):
            self.idle = Idle(prompt=idle)
        else:
            self.idle = idle
        self.business_hours = business_hours
        self.max_tool_loops = max_tool_loops
        self.history_window = history_window
        self.compaction = compaction
        self.failure_reply = DEFAULT_FAILURE_REPLY if failure_reply is None else failure_reply
        self.on_busy = on_busy
        self.repair = repair if repair is not None else Repair()
        issues = self._validate()
        if issues:
            raise FlowDefinitionError(issues, title=f"Agent {name!r} failed validation with {len(issues)} issue(s)")
        self.reads_window = self._reads_window(self.flows)
        """Whether some model call of this agent can read the conversation window beyond its latest
        messages, and with it the compaction summary: decided once, from the definition
        (:meth:`_reads_window`). When none can, the window slides without a ``summary`` call."""

    def _reads_window(self, flows: Iterable[Flow]) -> bool:
        """Can a model call read the conversation window beyond its latest messages (and the
        compaction summary)? Only ``understand`` and ``speak`` calls do; ``extract`` and ``decide``
        read the latest four messages, agent steps their own memory, ``ctx.model`` its prompt. So
        True, erring on the side of a summary nobody reads rather than a window that slides
        unsummarised under a call that reads it, when the agent has an idle voice, or a flow of
        ``flows``:

        - may be judged by an understand call: a message trigger with phrases (scored), a mention
          trigger, a ``when`` branch, an agent field it lists that is extracted ``anywhere``;
        - may speak: a reply without a fixed ``response``, a collect the model phrases, ``on_end="stay"``
          (a staying step answers with a speak call);
        - has a node of a kind not known here to read only the latest messages.
        """
        if self.idle is not None:
            return True
        for flow in flows:
            if flow.on_end == "stay" or any(isinstance(t, MentionTrigger) or (
                    isinstance(t, MessageTrigger) and not t.catch_all) for t in flow.on):
                return True
            listed = [*flow.collect, *(n for node in flow.nodes if isinstance(node, Collect) for n in node.fields)]
            if any(name in self.fields and self.fields[name].extract_mode == "anywhere" for name in listed):
                return True
            for node in flow.nodes:
                if isinstance(node, Reply | Collect):
                    if any(b.when for b in node.branches) or (isinstance(node, Reply) and node.response is None) or (
                            isinstance(node, Collect) and node.phrased_by_model):
                        return True
                elif not isinstance(node, Action | Decide | Router | Wait | AgentNode):
                    return True
        return False

    def _validate(self) -> list[DefinitionIssue]:
        issues: list[DefinitionIssue] = []

        def issue(code: str, message: str, *, flow: str | None = None, node: str | None = None,
                  path: str | None = None, hint: str | None = None) -> None:
            issues.append(DefinitionIssue(code, message, flow=flow, node=node, path=path, hint=hint))

        if not isinstance(self.name, str) or not self.name.strip():
            issue("invalid-agent", "an agent needs a non-empty name", path="name")
        if self.compaction is not None:
            for message in self.compaction.problems():
                issue("invalid-option", message, path="compaction")
        if not isinstance(self.failure_reply, str) or not self.failure_reply.strip():
            issue("invalid-option", f"failure_reply must be a non-empty string, got {self.failure_reply!r}",
                  path="failure_reply")
        if not isinstance(self.repair, Repair):
            issue("invalid-option", f"repair must be a Repair, got {self.repair!r}", path="repair")
        else:
            for message in self.repair.problems():
                issue("invalid-option", message, path="repair")
        if self.on_busy not in BUSY_POLICIES:
            issue("invalid-option", f"on_busy must be one of {', '.join(BUSY_POLICIES)}, got {self.on_busy!r}",
                  path="on_busy")
        if not isinstance(self.history_window, int) or self.history_window < 2:
            issue("invalid-option", f"history_window must be an integer >= 2, got {self.history_window!r}",
                  path="history_window")
        if not isinstance(self.max_tool_loops, int) or self.max_tool_loops < 0:
            issue("invalid-option", f"max_tool_loops must be an integer >= 0, got {self.max_tool_loops!r}",
                  path="max_tool_loops")
        for name, declared in self.fields.items():
            for message in _field_problems(declared):
                issue("invalid-field", message, path=f"fields.{name}")
        seen: set[str] = set()
        for i, flow in enumerate(self.flows):
            if not isinstance(flow, Flow):
                issue("invalid-flow", f"flows[{i}] is not a Flow", path=f"flows.{i}")
                continue
            if flow.id in seen:
                issue("duplicate-flow-id", f"flow id {flow.id!r} is used more than once", flow=flow.id,
                      path=f"flows.{i}")
            seen.add(flow.id)
            self._validate_flow(flow, issue)
        tool_names: set[str] = set()
        for i, tool in enumerate(self.tools):
            if not isinstance(tool, Tool):
                issue("invalid-tool", f"tools[{i}] is not a Tool (decorate the function with @tool)", path=f"tools.{i}")
                continue
            if tool.name in tool_names:
                issue("duplicate-tool", f"tool {tool.name!r} is registered more than once", path=f"tools.{i}")
            tool_names.add(tool.name)
        for name in self.conditions:
            if name in RESERVED_CONDITIONS:
                issue("reserved-condition", f"condition name {name!r} is reserved (equals, known, silenced)",
                      path=f"conditions.{name}")
        speak_tools = bool(self.tools) and not (isinstance(self.max_tool_loops, int) and self.max_tool_loops == 0)
        issues.extend(placeholder_issues(self.fields, [f for f in self.flows if isinstance(f, Flow)],
                                         has_tools=speak_tools))
        if self.idle is not None and self.idle.tools is not None:
            for name in self.idle.tools:
                if name not in self.tools_by_name:
                    issue("unknown-tool", f"idle names tool {name!r}, which the agent does not have", path="idle.tools",
                          hint=did_you_mean(name, self.tools_by_name))
        return issues

    def _check_condition(self, condition: Any, issue: Callable[..., None], *, flow: str, node: str | None,
                         path: str) -> None:
        """A CEL condition is compiled now (bounded, reading only :data:`CONDITION_NAMES`); a JSON
        condition may use ``equals``/``known`` on declared fields, ``silenced``, and the agent's
        registered conditions; code predicates are not inspected."""
        if condition is None or callable(condition):
            return
        if isinstance(condition, str):
            try:
                compile_condition(condition, CONDITION_NAMES)
            except ValueError as exc:
                issue("invalid-condition", str(exc), flow=flow, node=node, path=path)
            return
        if not isinstance(condition, Mapping):
            issue("invalid-condition", f"a condition is a function, a CEL string or a mapping, got {condition!r}",
                  flow=flow, node=node, path=path)
            return
        for key, arg in condition.items():
            if key == "equals":
                names = list(arg) if isinstance(arg, Mapping) else []
                if not isinstance(arg, Mapping):
                    issue("invalid-condition", f"equals takes a mapping of field to value, got {arg!r}", flow=flow,
                          node=node, path=path)
            elif key == "known":
                names = list(arg) if isinstance(arg, list | tuple) else []
                if not isinstance(arg, list | tuple):
                    issue("invalid-condition", f"known takes a list of fields, got {arg!r}", flow=flow, node=node,
                          path=path)
            elif key == "silenced":
                names = []
            elif key not in self.conditions:
                issue("unknown-condition", f"condition {key!r} is not registered on the agent", flow=flow, node=node,
                      path=path, hint=did_you_mean(key, [*self.conditions, "equals", "known", "silenced"]))
                continue
            else:
                names = []
            for name in names:
                if name not in self.fields:
                    issue("unknown-field", f"condition names field {name!r}, which is not declared on the agent",
                          flow=flow, node=node, path=path, hint=did_you_mean(name, self.fields))

    def old_forms(self) -> list[DefinitionIssue]:
        """A warning for every older form in the agent's flows (a ``{"equals": ...}`` condition...),
        with the form that replaces it (``tether check`` lists them)."""
        return [issue for flow in self.flows if isinstance(flow, Flow) for issue in flow_old_forms(flow)]

    def _validate_flow(self, flow: Flow, issue: Callable[..., None]) -> None:
        for condition, node_id, path in conditions_of(flow):
            self._check_condition(condition, issue, flow=flow.id, node=node_id, path=path)
        for name in (*flow.collect, *flow.clear_on_start):
            if name not in self.fields:
                issue("unknown-field", f"field {name!r} is not declared on the agent", flow=flow.id,
                      hint=did_you_mean(name, self.fields))
        for name in flow.tools or ():
            if name not in self.tools_by_name:
                issue("unknown-tool", f"tool {name!r} is not registered on the agent", flow=flow.id, path="tools",
                      hint=did_you_mean(name, self.tools_by_name))
        for node in flow.nodes:
            if isinstance(node, Collect):
                for name in node.fields:
                    if name not in self.fields:
                        issue("unknown-field", f"field {name!r} is not declared on the agent", flow=flow.id,
                              node=node.id, path="fields", hint=did_you_mean(name, self.fields))
                declared = self.fields.get(node.slots[0]) if len(node.slots) == 1 else None
                enum: tuple[Any, ...] = tuple(declared.enum or ()) if isinstance(declared, Field) else ()
                for choice in node.choices if enum else ():
                    if isinstance(choice, Choice) and choice.id not in enum:
                        issue("invalid-option", f"choice {choice.id!r} is not one of field {node.slots[0]!r}'s "
                              f"values ({', '.join(map(repr, enum))})", flow=flow.id, node=node.id, path="choices")
            if isinstance(node, Reply) and node.tools is not None:
                for name in node.tools:
                    if name not in self.tools_by_name:
                        issue("unknown-tool", f"tool {name!r} is not registered on the agent", flow=flow.id,
                              node=node.id, path="tools", hint=did_you_mean(name, self.tools_by_name))
            if isinstance(node, AgentNode):
                for i, entry in enumerate(node.tools):
                    if isinstance(entry, str) and entry != TERMINATE_TOOL and entry not in self.tools_by_name:
                        issue("unknown-tool", f"tool {entry!r} is not registered on the agent", flow=flow.id,
                              node=node.id, path=f"tools.{i}", hint=did_you_mean(entry, self.tools_by_name))
            for name in node.uses if isinstance(node, Action) else ():
                if name not in self.tools_by_name:
                    issue("unknown-tool", f"action uses tool {name!r}, which is not registered on the agent "
                          f"(registered: {', '.join(sorted(self.tools_by_name)) or 'none'})", flow=flow.id,
                          node=node.id, path="uses", hint=did_you_mean(name, self.tools_by_name))
            if isinstance(node, Action) and node.do is not None and node.do not in self.actions:
                issue("unknown-action", f"action {node.do!r} is not registered on the agent", flow=flow.id,
                      node=node.id, path="do", hint=did_you_mean(node.do, self.actions))
            in_code = [(f"targets.{k}", t) for k, t in enumerate(node.targets)]
            for option, target in node.static_targets() + in_code:
                # a literal start_flow target must name a flow of this agent (a template is rendered at run time)
                if isinstance(target, StartFlow) and isinstance(target.flow, str) and "{" not in target.flow \
                        and target.flow not in self.flows_by_id:
                    issue("unknown-flow", f"{option} starts flow {target.flow!r}, which the agent does not have",
                          flow=flow.id, node=node.id, path=option, hint=did_you_mean(target.flow, self.flows_by_id))


def _field_problems(declared: Any) -> list[str]:
    """What is wrong with one declared agent field, as sentences."""
    if not isinstance(declared, Field):
        return [f"{declared!r} is not a Field (use Field('string'), Field('number'), ...)"]
    problems: list[str] = []
    types = get_args(FieldType)
    if declared.type not in types:
        problems.append(f"type is {declared.type!r}; a field's type is one of {', '.join(map(repr, types))}")
    if declared.extract not in (None, "anywhere", "asked"):
        problems.append(f"extract is {declared.extract!r}; use 'anywhere' or 'asked'")
    if declared.reuse not in ("keep", "confirm"):
        problems.append(f"reuse is {declared.reuse!r}; use 'keep' or 'confirm'")
    if declared.enum is not None and (isinstance(declared.enum, str) or not isinstance(declared.enum, tuple | list)):
        problems.append(f"enum is {declared.enum!r}; give a list of the allowed values")
    if (declared.type == "enum" or (declared.type == "list" and declared.items == "enum")) and not declared.enum:
        problems.append(f"type is {declared.type!r} but enum= lists no allowed values")
    if declared.allow_empty not in (False, True) or (declared.allow_empty and declared.type != "list"):
        problems.append(f"allow_empty is {declared.allow_empty!r}; it is True or False, and True only for a list")
    items = get_args(ItemType)
    if declared.type == "list" and declared.items not in items:
        problems.append(f"items is {declared.items!r}; a list's items are one of {', '.join(map(repr, items))}")
    return problems
