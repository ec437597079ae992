"""The strict v2 workflow contract as pydantic models.

Every object is closed (``extra="forbid"``): an unknown key is an error, never ignored. A file's
keys are snake_case (``schema_version``, ``success_exit``, ``timeout_sec``, ...), as a flow file's
are, and :meth:`~_Strict.to_dict` writes them so; seed 001's camelCase keys (``schemaVersion``,
``timeoutSec``) are read too. A definition's digest is taken over the camelCase form, the one runs
stored before files went snake_case were pinned to (see ``WorkflowGraph.digest``). ``run`` is a discriminated union on
``run.kind`` over the seven kinds, so ``model`` on a ``function`` is an unrecognised key.

Graph-level rules (unique ids, edges over existing nodes, acyclicity, route targets, bounded
expressions) are checked by :mod:`tether.workflow._validate` after these models parse.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

__all__ = [
    "AgentRun",
    "Artifact",
    "CheckRun",
    "ChoiceSchema",
    "Contract",
    "Control",
    "Defaults",
    "Edge",
    "EdgeType",
    "FileSchema",
    "FormSchema",
    "FunctionRun",
    "GateRun",
    "GateSchema",
    "GateSettings",
    "Guard",
    "Meta",
    "ModelTier",
    "Node",
    "NodeRun",
    "OutputContract",
    "Route",
    "RouterRun",
    "RunKind",
    "SubflowRun",
    "SubpromptRun",
    "TextSchema",
    "Workflow",
    "DEFAULT_ROUTE",
]

RunKind = Literal["agent", "subprompt", "function", "check", "gate", "router", "sub-flow"]
EdgeType = Literal["flow", "parallel", "optional"]
ModelTier = Literal["small", "default", "deep"]
DEFAULT_ROUTE = "default"
"""The ``when`` of a router's catch-all route."""

_ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The file form: snake_case keys (``timeout_sec``), unset optional keys left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def camel_dict(self) -> dict[str, Any]:
        """Seed 001's camelCase wire form (``timeoutSec``), unset optional keys left out: what a
        definition's digest is taken over."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _schema_key(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data`` (a model dumped by field name) with its ``schema_`` field under ``key``, first."""
    if "schema_" not in data:
        return data
    value = data.pop("schema_")
    return {key: value, **data}


# --------------------------------------------------------------------------- run kinds


class AgentRun(_Strict):
    """Work the agent does through the flow tools (``tether.workflow_host.AgentDriver``)."""

    kind: Literal["agent"]
    instruction: str = Field(min_length=1)
    model: ModelTier | None = None
    assets: list[str] = Field(default_factory=list)


class SubpromptRun(_Strict):
    """One isolated model call on bound inputs; with ``contract.output.fields`` the reply must
    hold one JSON object (extracted fail-closed, never repaired)."""

    kind: Literal["subprompt"]
    instruction: str = Field(min_length=1)
    model: ModelTier | None = None
    assets: list[str] = Field(default_factory=list)


class Capture(_Strict):
    """Which output streams become output fields (``fields.<name>``)."""

    stdout: str | None = None
    stderr: str | None = None


class FunctionRun(_Strict):
    """Deterministic code run for its effect, as a subprocess on the executor.

    ``env`` names parent environment variables (shell globs) the command may inherit beyond the
    executor's allow-list; bindings (``contract.input``) always reach it.
    """

    kind: Literal["function"]
    command: str | list[str]
    runtime: Literal["shell", "node", "python"] = "shell"
    cwd: str | None = None
    success_exit: list[int] = Field(default_factory=lambda: [0], alias="successExit", min_length=1)
    capture: Capture | None = None
    env: list[str] = Field(default_factory=list)
    assets: list[str] = Field(default_factory=list)

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, command: str | list[str]) -> str | list[str]:
        if not command or (isinstance(command, list) and not command[0]):
            raise ValueError("command must not be empty")
        return command


class CheckRun(FunctionRun):
    """A deterministic pass/fail verdict: the exit status decides, no human needed."""

    kind: Literal["check"]  # type: ignore[assignment]
    on_fail: Literal["escalate", "fail"] = Field(default="escalate", alias="onFail")


class TextSchema(_Strict):
    """A free-text answer."""

    kind: Literal["text"]
    multiline: bool = False


class ChoiceSchema(_Strict):
    """A choice among ``options``."""

    kind: Literal["choice"]
    options: list[str] = Field(min_length=1)
    multiple: bool = False


class FormSchema(_Strict):
    """A form: ``fields`` maps each field name to its JSON Schema.

    ``required`` lists the fields an answer must hold; when absent, every field without a
    ``default`` is required.
    """

    kind: Literal["form"]
    fields: dict[str, dict[str, JsonValue]] = Field(min_length=1)
    required: list[str] | None = None


class FileSchema(_Strict):
    """A file upload."""

    kind: Literal["file"]
    accept: list[str] | None = None
    max_size: int | None = Field(default=None, alias="maxSize", gt=0)
    multiple: bool = False


GateSchema = Annotated[TextSchema | ChoiceSchema | FormSchema | FileSchema, Field(discriminator="kind")]


class GateRun(_Strict):
    """Parks for a human: ``prompt`` is the summary shown, ``schema`` the answer's shape."""

    kind: Literal["gate"]
    prompt: str = Field(min_length=1)
    schema_: GateSchema = Field(alias="schema")

    @model_serializer(mode="wrap")
    def _keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _schema_key(handler(self), "schema")


class Route(_Strict):
    """One route: when ``when`` holds, select ``target`` (``None``: select nothing).

    ``when: "default"`` is the catch-all; it must be the last route.
    """

    when: str = Field(min_length=1)
    target: str | None

    @model_serializer(mode="wrap")
    def _keys(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if info.by_alias:  # the camelCase form digests are taken over: as it always was
            return data
        return {"target": None, **data}  # a null target (select nothing) is required: written, not left out


class RouterRun(_Strict):
    """Branching: routes are evaluated in authored order and the first match wins."""

    kind: Literal["router"]
    routes: list[Route] = Field(min_length=1)
    assets: list[str] = Field(default_factory=list)


class SubflowRun(_Strict):
    """A nested run of another workflow, inline; the node waits for it."""

    kind: Literal["sub-flow"]
    flow: str = Field(min_length=1)
    pass_context: bool = Field(default=False, alias="passContext")
    assets: list[str] = Field(default_factory=list)


NodeRun = Annotated[
    AgentRun | SubpromptRun | FunctionRun | CheckRun | GateRun | RouterRun | SubflowRun,
    Field(discriminator="kind"),
]

# --------------------------------------------------------------------------- node parts


class Guard(_Strict):
    """A precondition: ``expr`` (CEL) must hold before the node becomes available."""

    expr: str = Field(min_length=1)
    message: str | None = None


class Artifact(_Strict):
    """A declared output artifact."""

    name: str = Field(min_length=1)
    lifetime: Literal["session", "persistent"] = "session"


class OutputContract(_Strict):
    """What a node produces: ``fields`` is a JSON Schema for its output fields object."""

    fields: dict[str, JsonValue] | None = None
    artifacts: list[Artifact] = Field(default_factory=list)


class Contract(_Strict):
    """Guards, bindings consumed (``input``: name -> value or ``${expr}`` template), output."""

    requires: list[Guard] = Field(default_factory=list)
    input: dict[str, JsonValue] = Field(default_factory=dict)
    output: OutputContract | None = None


class GateSettings(_Strict):
    """Node-level approval: ``mandatory`` always stops for a human, even in autonomous mode."""

    approval: Literal["none", "optional", "mandatory"] = "none"


class Control(_Strict):
    """Execution control: optional (failure skips), retries, timeout, parallel group."""

    optional: bool = False
    retries: int = Field(default=0, ge=0, le=100)
    timeout_sec: float | None = Field(default=None, alias="timeoutSec", gt=0)
    parallel_group: str | None = Field(default=None, alias="parallelGroup")


class Node(_Strict):
    """One node: ``description`` is a human label and is never executed."""

    id: str = Field(pattern=_ID_PATTERN)
    label: str
    description: str
    run: NodeRun
    phase: str | None = None
    contract: Contract = Field(default_factory=Contract)
    gate: GateSettings = Field(default_factory=GateSettings)
    control: Control = Field(default_factory=Control)


class Edge(_Strict):
    """A declared edge. Only ``flow`` edges block the target."""

    id: str = Field(min_length=1)
    source: str
    target: str
    type: EdgeType = "flow"


class Defaults(_Strict):
    """Run defaults; ``parameters`` is the catch-all."""

    approval: Literal["checkpoint", "auto", "manual"] | None = None
    research_depth: str | None = Field(default=None, alias="researchDepth")
    auto_review: bool | None = Field(default=None, alias="autoReview")
    verbosity: str | None = None
    cli_mode: str | None = Field(default=None, alias="cliMode")
    run_input: dict[str, JsonValue] | None = None
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


class Meta(_Strict):
    """Catalogue metadata (never executed)."""

    icon: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    stage: str | None = None
    onboarding: str | None = None


class Workflow(_Strict):
    """A v2 workflow definition: a DAG of nodes over declared edges.

    ``input`` declares the run input with default values; ``output`` maps run output names to
    values or ``${expr}`` templates, resolved when the run completes.
    """

    schema_: str | None = Field(default=None, alias="$schema")
    schema_version: Literal[2] = Field(alias="schemaVersion")
    id: str = Field(pattern=_ID_PATTERN)
    version: str = Field(min_length=1)
    name: str
    description: str | None = None
    input: dict[str, JsonValue] = Field(default_factory=dict)
    output: dict[str, JsonValue] = Field(default_factory=dict)
    defaults: Defaults = Field(default_factory=Defaults)
    entry: str | None = None
    meta: Meta | None = None
    nodes: list[Node] = Field(min_length=1)
    edges: list[Edge]

    @model_serializer(mode="wrap")
    def _keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _schema_key(handler(self), "$schema")

    def node(self, node_id: str) -> Node:
        """The node ``node_id`` (``KeyError`` when there is none)."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)
