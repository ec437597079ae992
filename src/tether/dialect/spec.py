"""The flow-file dialect as pydantic models: what a YAML or JSON agent or flow file may say.

Every object is closed (``extra="forbid"``): an unknown key is an error naming its dotted path,
never ignored. Keys are snake_case, like the keyword arguments of Python authoring
(``max_turns``, ``verbatim_fields``, ``clear_on_start``). Node kinds and triggers are
discriminated on ``kind``, predicates on ``op``. Code is never written in a file: tools,
registered actions and conditions are named, and resolved against a
:class:`~tether.dialect.registry.Registry` when the file is built.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "ActionSpec",
    "AgentSpec",
    "And",
    "BranchSpec",
    "ChoiceSpec",
    "CollectSpec",
    "Compare",
    "CompactionSpec",
    "ConditionCall",
    "DecideSpec",
    "EndRef",
    "EscalateRef",
    "EventTriggerSpec",
    "Exists",
    "FieldSpec",
    "FlowSpec",
    "GateSpec",
    "GotoRef",
    "HandoffRef",
    "JudgeGateSpec",
    "Literal_",
    "MappingSource",
    "Membership",
    "MentionTriggerSpec",
    "MessageTriggerSpec",
    "NodeSpec",
    "Not",
    "Operand",
    "Or",
    "Path",
    "Predicate",
    "PredicateGateSpec",
    "ReplySpec",
    "ResolverSpec",
    "ResponseSpec",
    "RouteSpec",
    "RouterSpec",
    "SilenceTriggerSpec",
    "StartFlowRef",
    "TransitionRef",
    "TriggerSpec",
    "Truth",
    "VerifySpec",
    "WaitSpec",
]

NodeId = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")]
Tier = Literal["small", "default", "deep"]  # the order of workflow.ModelTier: typing caches equal Literals
Context = Literal["append", "reset", "reset_with_summary"]
Repeat = Literal["once", "always"] | dict[Literal["cooldown"], str]


class Strict(BaseModel):
    """Base of every dialect object: closed, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- predicates


class Path(Strict):
    """A value read from the run: ``state.x``, ``input.x``, ``context.x`` (``${...}`` accepted)."""

    path: str = Field(min_length=1)


class Literal_(Strict):
    """A literal value."""

    literal: JsonValue


Operand = Path | Literal_


class Compare(Strict):
    """``left <op> right``; a missing side makes it false; ordering only number/number or
    string/string."""

    op: Literal["eq", "ne", "lt", "lte", "gt", "gte"]
    left: Operand
    right: Operand


class Membership(Strict):
    """``value`` in (``in``) or not in (``notIn``) the list ``set``."""

    op: Literal["in", "notIn"]
    value: Operand
    set: Operand


class Exists(Strict):
    """Whether ``path`` has a value (None counts as missing)."""

    op: Literal["exists", "notExists"]
    path: str = Field(min_length=1)


class Truth(Strict):
    """Whether ``value`` is truthy (missing is not) or falsy."""

    op: Literal["truthy", "falsy"]
    value: Operand


class And(Strict):
    op: Literal["and"]
    args: list[Predicate] = Field(min_length=1)


class Or(Strict):
    op: Literal["or"]
    args: list[Predicate] = Field(min_length=1)


class Not(Strict):
    op: Literal["not"]
    arg: Predicate


class ConditionCall(Strict):
    """A condition registered in code, by name, with an optional argument."""

    op: Literal["condition"]
    name: str = Field(min_length=1)
    arg: JsonValue = None


PredicateObject = Annotated[Compare | Membership | Exists | Truth | And | Or | Not | ConditionCall,
                            Field(discriminator="op")]
Predicate = Annotated[str, Field(min_length=1)] | PredicateObject
"""A condition: a CEL string over ``state``, ``input`` and ``context`` (``"state.size == 'large'"``,
the expression language of Python flows and workflows too), or the older predicate object."""


# --------------------------------------------------------------------------- mappings


class ValueSource(Strict):
    value: JsonValue


class TemplateSource(Strict):
    template: str


class PathSource(Strict):
    path: str = Field(min_length=1)


MappingSource = ValueSource | TemplateSource | PathSource
"""One entry of a mapping: exactly one of ``value``, ``template`` or ``path``."""


# --------------------------------------------------------------------------- transitions


class GotoRef(Strict):
    goto: NodeId
    data: dict[str, MappingSource] | None = None
    clear: list[str] | None = None


class EndRef(Strict):
    end: str = "end"


class HandoffRef(Strict):
    handoff: str = Field(min_length=1)
    reason: str | None = None


class EscalateRef(Strict):
    escalate: str = Field(min_length=1)


class StartFlowRef(Strict):
    start_flow: str = Field(min_length=1)
    input: dict[str, MappingSource] | None = None


TransitionRef = NodeId | GotoRef | EndRef | HandoffRef | EscalateRef | StartFlowRef
"""A node id (``stay`` and ``next`` are the two reserved words), or one transition object."""


class RouteSpec(Strict):
    """Take ``to`` when ``when`` holds; routes are tried in order."""

    when: Predicate
    to: TransitionRef


class BranchSpec(Strict):
    """A branch of a reply or collect node, judged while the node is asking: ``when`` (text the
    understand call judges true or false) or ``if`` (a predicate, no model call); exactly one.
    The first true branch takes ``then``."""

    then: TransitionRef
    when: str | None = Field(default=None, min_length=1)
    if_: Predicate | None = Field(default=None, alias="if")


class VerifySpec(Strict):
    """Checked before a goto out of the node commits, over the state merged with the node's
    data: ``output_schema`` (a JSON Schema) and ``check`` (a predicate; a check registered in code
    is ``{op: condition, name: ...}``). On failure the run stays on the node."""

    output_schema: dict[str, Any] | None = None
    check: Predicate | None = None


class ChoiceSpec(Strict):
    id: str = Field(min_length=1)
    label: str = Field(min_length=1)
    description: str | None = None


# --------------------------------------------------------------------------- resolvers


class PatternResolver(Strict):
    kind: Literal["pattern"]
    field: str
    regex: str
    value: str | None = Field(default=None, description="the value, made from the match's groups (\\1 or "
                              "\\g<name>); default: the first group, or the whole match")
    case: Literal["upper", "lower"] | None = Field(default=None, description="the value in upper or lower case")
    early: bool = Field(default=False, description="true: reached with its field never asked, its step also reads "
                        "the messages sent since the run started (the latest value found wins)")


class EnumResolver(Strict):
    kind: Literal["enum"]
    field: str
    values: list[str] = Field(min_length=1)


class RangeResolver(Strict):
    kind: Literal["range"]
    field: str
    min: float | None = None
    max: float | None = None


class JsonPathResolver(Strict):
    kind: Literal["jsonpath"]
    field: str
    path: str = Field(min_length=1)


class WholeMessageResolver(Strict):
    kind: Literal["whole_message"]
    field: str
    min_length: int = Field(default=1, ge=1)
    questions: bool = Field(default=True, description='false: a message that asks something (ends with "?") is '
                            'not the answer')
    keep_intro: bool = Field(default=False, description="true: the message as said, with the words that introduce "
                             "the value (\"it's\", \"my new address is\"), which are left out by default")


ResolverSpec = Annotated[PatternResolver | EnumResolver | RangeResolver | JsonPathResolver | WholeMessageResolver,
                         Field(discriminator="kind")]


# --------------------------------------------------------------------------- nodes


class ResponseSpec(Strict):
    template: str


class _NodeBase(Strict):
    id: NodeId
    label: str | None = None
    output_schema: dict[str, Any] | None = None


class ReplySpec(_NodeBase):
    """Exactly one of ``response`` (engine-rendered, no model call) or ``generate: true`` (the
    model speaks, steered by ``instructions``)."""

    kind: Literal["reply"]
    response: ResponseSpec | None = None
    generate: bool = False
    instructions: str | None = None
    fallback: str | None = None
    context: Context | None = None
    once: bool = False
    tools: list[str] | None = None
    model: Tier | None = None
    verify: VerifySpec | None = None
    branches: list[BranchSpec] = []
    routes: list[RouteSpec] = []
    next: TransitionRef | None = None


class CollectSpec(_NodeBase):
    """Gathers fields; ``ask`` is one question, or one per field (``{field: question}``)."""

    kind: Literal["collect"]
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    fields: list[str] = []
    required: list[str] | None = None
    ask: str | dict[str, str] | None = None
    question: str | None = None
    prompt: str | None = None
    instructions: str | None = None
    max_turns: int = Field(default=10, ge=1)
    max_asks: int = Field(default=3, ge=1)
    resolvers: list[ResolverSpec] = []
    verbatim_fields: list[str] = []
    choices: list[ChoiceSpec | str] = []
    assign: dict[str, str] | None = None
    """Also write a collected field to another state key: ``{destination: field}``."""
    model: Tier | None = None
    verify: VerifySpec | None = None
    branches: list[BranchSpec] = []
    routes: list[RouteSpec] = []
    next: TransitionRef | None = None


class ActionSpec(_NodeBase):
    """Calls an agent ``tool`` (or a registered action, ``do``) with ``args``; ``bind`` writes
    the result into the run's state (a path for the whole result, or a mapping whose sources
    may read ``result.*``)."""

    kind: Literal["action"]
    tool: str | None = None
    do: str | None = None
    args: dict[str, MappingSource] = {}
    bind: str | dict[str, MappingSource] | None = None
    approval: bool = False
    verify: VerifySpec | None = None
    routes: list[RouteSpec] = []
    next: TransitionRef | None = None
    on_fail: TransitionRef | None = None


class DecideSpec(_NodeBase):
    """One structured model call against ``schema`` (or choosing among ``choices``); the reply's
    values join the state, then ``routes`` are tried in order, else ``otherwise`` (else stay)."""

    kind: Literal["decide"]
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    instructions: str | None = None
    prompt: str | None = None
    choices: list[ChoiceSpec | str] = []
    model: Tier | None = None
    verify: VerifySpec | None = None
    routes: list[RouteSpec] = []
    otherwise: TransitionRef | None = None


class RouterSpec(_NodeBase):
    """No model call: ``then`` when ``when`` holds, else ``else`` (default: end)."""

    kind: Literal["router"]
    when: Predicate
    then: TransitionRef | None = None
    else_: TransitionRef | None = Field(default=None, alias="else")


class WaitSpec(_NodeBase):
    kind: Literal["wait"]
    timer: str | None = None
    event: str | None = None
    up_to: str = "30d"
    business_hours: bool = False
    then: TransitionRef | None = None
    else_: TransitionRef | None = Field(default=None, alias="else")


NodeSpec = Annotated[ReplySpec | CollectSpec | ActionSpec | DecideSpec | RouterSpec | WaitSpec,
                     Field(discriminator="kind")]


# --------------------------------------------------------------------------- triggers


class MessageTriggerSpec(Strict):
    kind: Literal["message"]
    phrases: list[str] = []
    repeat: Repeat = "once"
    if_: Predicate | None = Field(default=None, alias="if")


class MentionTriggerSpec(Strict):
    """``extract``: values the understand call reads from the message when the mention counts,
    given to the run as its input: ``{name: type}`` (string, number, integer, boolean) or
    ``{name: JSON Schema}``."""

    kind: Literal["mention"]
    phrases: list[str] = Field(min_length=1)
    extract: dict[str, Literal["string", "number", "integer", "boolean"] | dict[str, Any]] | None = None
    repeat: Repeat = "once"
    if_: Predicate | None = Field(default=None, alias="if")


class SilenceTriggerSpec(Strict):
    kind: Literal["silence"]
    after: str
    repeat: Repeat = "once"
    business_hours: bool = False
    if_: Predicate | None = Field(default=None, alias="if")


class EventTriggerSpec(Strict):
    kind: Literal["event"]
    name: str = Field(min_length=1)
    after: str | None = None
    repeat: Repeat = "always"
    business_hours: bool = False
    if_: Predicate | None = Field(default=None, alias="if")


TriggerSpec = Annotated[MessageTriggerSpec | MentionTriggerSpec | SilenceTriggerSpec | EventTriggerSpec,
                        Field(discriminator="kind")]


# --------------------------------------------------------------------------- gates


class PredicateGateSpec(Strict):
    """A post-run gate: ``when`` over ``state``, ``input``, ``context`` and ``results``."""

    id: str = Field(min_length=1)
    kind: Literal["predicate"]
    when: Predicate
    severity: Literal["blocking", "advisory"] = "blocking"


class JudgeGateSpec(Strict):
    """A post-run gate judged by a model over the listed run-record paths
    (``state.x``, ``results.node``, ``input.x``, ``request_context.x``)."""

    id: str = Field(min_length=1)
    kind: Literal["judge"]
    inputs: list[str] = Field(min_length=1)
    rubric: str | None = None
    severity: Literal["blocking", "advisory"] = "blocking"


GateSpec = Annotated[PredicateGateSpec | JudgeGateSpec, Field(discriminator="kind")]


# --------------------------------------------------------------------------- flows and agents


class FlowSpec(Strict):
    """One flow. ``start`` defaults to the first node."""

    id: NodeId
    version: str | None = None
    description: str = ""
    start: NodeId | None = None
    context: Context | None = None
    max_oscillations: int = Field(default=2, ge=1)
    on: list[TriggerSpec] = []
    clear_on_start: list[str] = []
    on_end: Literal["end", "stay", "reset"] = "end"
    on_drift: Literal["error", "restart"] = Field(
        default="error", description="what a run parked on an older definition of the flow does when it cannot "
        "continue at its node (the node is gone or changed kind): error (the request fails with flow-drift) or "
        "restart (the run starts over at the flow's start)")
    instructions: list[str] = []
    tools: list[str] | None = None
    collect: list[str] = []
    gates: list[GateSpec] = []
    on_cancel: NodeId | None = Field(default=None, description="the node a cancel goes to instead of ending the run")
    on_skip: NodeId | None = Field(default=None, description="the node a step goes to when the customer cannot "
                                   "answer it (\"I don't know\"), instead of a hand-off to a person")
    on_escalate: NodeId | None = Field(default=None, description="the node an escalating step goes to (max_turns "
                                       "spent, answers not understood), instead of a hand-off to a person")
    nodes: list[NodeSpec] = Field(min_length=1)


class FieldSpec(Strict):
    type: Literal["string", "number", "integer", "boolean", "enum", "date", "list"] = "string"
    enum: list[JsonValue] | None = None
    items: Literal["string", "number", "integer", "boolean", "enum", "date"] = "string"
    description: str | None = None
    label: str | None = None
    ask: str | None = None
    extract: Literal["anywhere", "asked"] | None = None
    reuse: Literal["keep", "confirm"] = "keep"
    allow_empty: bool = Field(default=False, description='a list: an empty list is an answer ("no toppings")')


class CompactionSpec(Strict):
    max_tokens: int = Field(gt=0)
    threshold: float = 0.8
    preserve_recent: int = 4
    max_tool_result_chars: int = 5000
    enabled: bool = True


class AgentSpec(Strict):
    """An agent: identity, fields, the tools it may use (registered names) and its flows."""

    name: str = Field(min_length=1)
    code: str | None = None
    persona: str | None = None
    goal: str | None = None
    knowledge: str | None = None
    instructions: list[str] = []
    fields: dict[str, FieldSpec] = {}
    tools: list[str] | None = None
    idle: str | None = None
    idle_tools: list[str] = []
    """The tools the idle speaker (the agent's voice when no flow answers) may call; none by default."""
    history_window: int = Field(default=40, ge=1)
    compaction: CompactionSpec | None = None
    failure_reply: str | None = None
    flows: list[FlowSpec] = Field(min_length=1)


class FlowFile(Strict):
    """A file holding one flow."""

    flow: FlowSpec


class AgentFile(Strict):
    """A file holding one agent."""

    agent: AgentSpec


for _model in (And, Or, Not, RouteSpec, BranchSpec, VerifySpec, PredicateGateSpec, MessageTriggerSpec):
    _model.model_rebuild()
