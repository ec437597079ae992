"""Agent turns: the model drives a run's agent nodes through the flow tools.

A turn is one bounded tool loop (at most ``max_tool_rounds`` rounds of tool calls; asking for
more is an ``agent-turn-budget`` error). It starts with the run's pending stimuli
(``input_received``, ``approval_received``: taken off the run once the model has answered the
turn's first call, so a failed call leaves them for the next turn) and the agent nodes ready for
work, and ends when the
model answers without calling a tool, or when a ``request_input`` / ``request_approval`` parks a
node for a human. Deterministic work is drained before the turn and after every write, so the
agent always sees the runtime's results. Turns on one run are serialized.

Every tool call and its result is written to the store's effect journal (``kind="flow-tool"``,
``name`` the tool, ``request`` its call id and arguments, ``result`` what the model was sent,
``status`` ``finished`` or ``error`` for a refusal). A write's change and
its journal entry are saved (with compare-and-swap) before its result goes back to the model; a
read's entry goes with the next save, at the latest when the turn ends. Turns are rebuilt from
the saved snapshot, so a crash never applies a call twice.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import ModelConfigurationError, WorkflowOperationError
from tether.models.types import ChatMessage, ModelRequest, ToolCall, ToolSpec
from tether.workflow import _agent as agent_ops
from tether.workflow import ops
from tether.workflow._contract import AgentRun, GateRun, ModelTier

if TYPE_CHECKING:
    from tether.workflow_host._host import RunHost

__all__ = ["DEFAULT_TOOL_ROUNDS", "FLOW_TOOLS", "AgentDriver", "TurnReport"]

DEFAULT_TOOL_ROUNDS = 8
"""How many rounds of tool calls one agent turn may make."""

_NODE = {"node_id": {"type": "string", "description": "the node id"}}
_FIELDS = {"type": "object", "description": "output fields matching the node's output contract"}
_INPUT_SCHEMA = {
    "type": "object",
    "description": "what to ask for: {kind: text, multiline?} | {kind: choice, options, multiple?} | "
                   "{kind: form, fields: {name: JSON Schema}, required?} | {kind: file, accept?, maxSize?, multiple?}",
}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(name, description, {"type": "object", "properties": properties, "required": required,
                                        "additionalProperties": False})


FLOW_TOOLS: tuple[ToolSpec, ...] = (
    _tool("get_state", "The run's state: each node's kind, status and output.", {}, []),
    _tool("get_globals", "Run-scoped globals: the run input and the workflow defaults.", {}, []),
    _tool("get_available", "The agent nodes ready for work now.", {}, []),
    _tool("validate_node", "Whether a node can be worked on now, and what blocks it.", _NODE, ["node_id"]),
    _tool("build_handoff", "What a node needs: its instruction, bound inputs with their origins, assets, output "
          "contract, and its completed predecessors' fields.", _NODE, ["node_id"]),
    _tool("start_node", "Start work on an available agent node.", _NODE, ["node_id"]),
    _tool("complete_node", "Finish a running agent node with a summary and its output fields.",
          {**_NODE, "summary": {"type": "string"}, "fields": _FIELDS}, ["node_id", "summary"]),
    _tool("skip_node", "Skip an optional agent node.", {**_NODE, "reason": {"type": "string"}}, ["node_id"]),
    _tool("fail_node", "Give up on a running agent node; recoverable=true lets it be tried again.",
          {**_NODE, "message": {"type": "string"}, "recoverable": {"type": "boolean"}},
          ["node_id", "message", "recoverable"]),
    _tool("request_approval", "Ask a human to approve a running node's result (ends your turn), or ask again on "
          "a gate a human rejected.", {**_NODE, "summary": {"type": "string"}, "fields": _FIELDS},
          ["node_id", "summary"]),
    _tool("request_input", "Ask a human for typed input on a running node (ends your turn).",
          {**_NODE, "prompt": {"type": "string"}, "schema": _INPUT_SCHEMA}, ["node_id", "prompt"]),
)
_ENDS_TURN = frozenset({"request_input", "request_approval"})
_WRITES = frozenset({"start_node", "complete_node", "skip_node", "fail_node", "request_approval", "request_input"})

SYSTEM_PROMPT = (
    "You drive the agent nodes of a workflow through the flow tools. The runtime runs every other node "
    "(functions, checks, routers, subprompts) and humans decide gates and approvals. For each ready agent node: "
    "call build_handoff to read its instruction and inputs, start_node, do the work, then complete_node with "
    "fields matching its output contract. Use request_input to ask the human for something you do not know, "
    "and request_approval when the node needs sign-off; both end your turn. Never invent values a human must "
    "give. When no agent node is ready, reply with a short status and no tool call."
)


@dataclass
class TurnReport:
    """What one agent turn did: its tool calls (name, arguments, result), how it ended, its text."""

    ended_by: Literal["reply", "request_input", "request_approval", "no-work"]
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    text: str = ""
    rounds: int = 0


class AgentDriver:
    """Gives the model turns on one run's agent nodes, one at a time."""

    def __init__(self, run: RunHost) -> None:
        self.run = run
        self._lock = asyncio.Lock()

    def tools(self) -> tuple[ToolSpec, ...]:
        """The flow tools offered on this run (``skip_node`` only when an agent node is optional)."""
        graph = self.run.graph
        optional = any(isinstance(n.run, AgentRun) and n.control.optional for n in graph.nodes.values())
        return tuple(tool for tool in FLOW_TOOLS if optional or tool.name != "skip_node")

    def ready(self) -> list[str]:
        """Agent nodes ready for work (available or running)."""
        return agent_ops.get_available(self.run.graph, self.run.snapshot)

    def rejected_gates(self) -> list[str]:
        """Gates a human rejected since the agent's last turn: each rejection gives the agent one
        revision turn (seed 001), in which it may ``request_approval`` afresh, even when no
        agent node is ready."""
        graph = self.run.graph
        return [str(s["node"]) for s in self.run.snapshot.stimuli
                if s.get("type") == "approval_received" and s.get("decision") == "rejected"
                and s.get("node") in graph.nodes and isinstance(graph.nodes[str(s["node"])].run, GateRun)]

    def has_work(self) -> bool:
        """Whether an agent turn has anything to do: a ready agent node or a rejected gate."""
        return bool(self.ready() or self.rejected_gates())

    async def turn(self) -> TurnReport:
        """One agent turn (see the module docstring)."""
        async with self._lock:
            run = self.run
            await run.drain()
            ready = self.ready()
            work = ready or self.rejected_gates()
            if not work:
                return TurnReport("no-work")
            tiers = [run.graph.nodes[i].run for i in ready]
            tier: ModelTier = next((r.model for r in tiers if isinstance(r, AgentRun) and r.model), "default")
            try:
                model = run.model_for(tier)
            except ModelConfigurationError as exc:
                await run.apply(ops.fail_node(run.graph, work[0], f"node {work[0]!r}: model tier {tier!r}: "
                                              f"{exc.message}"))
                return TurnReport("no-work")
            if model is None:
                raise WorkflowOperationError(f"nodes {work} need a language model, and none is configured "
                                             "(set TETHER_MODEL or pass model=...)", code="no-model", node=work[0])
            stimuli = list(run.snapshot.stimuli)  # taken once the model has answered: a failed call keeps them
            opening: dict[str, Any] = {"workflow": run.graph.id, "run": run.run_id, "ready_agent_nodes": ready}
            if stimuli:
                opening["stimuli"] = stimuli
            messages: list[ChatMessage] = [ChatMessage("user", json.dumps(opening, ensure_ascii=False, default=str))]
            report = TurnReport("reply")
            for round_index in range(run.max_tool_rounds + 1):
                request = ModelRequest(call="agent", system=SYSTEM_PROMPT, messages=tuple(messages),
                                       tools=self.tools(), tier=tier)
                response = await model.complete(request)
                if stimuli:
                    await run.apply(_take_stimuli(len(stimuli)))
                    stimuli = []
                await run.count_model_call(response.usage)
                report.text = response.text
                if not response.tool_calls:
                    await run.flush_journal()
                    return report
                if round_index == run.max_tool_rounds:
                    raise WorkflowOperationError(
                        f"the agent turn on run {run.run_id!r} asked for more than {run.max_tool_rounds} rounds of "
                        "tool calls (max_tool_rounds)", code="agent-turn-budget")
                report.rounds += 1
                messages.append(ChatMessage("assistant", response.text, tool_calls=response.tool_calls))
                for call in response.tool_calls:
                    result = await self._dispatch(call)
                    report.calls.append((call.name, dict(call.arguments), result))
                    messages.append(ChatMessage("tool", json.dumps(result, ensure_ascii=False, default=str),
                                                tool_call_id=call.id, name=call.name))
                    if call.name in _ENDS_TURN and result.get("ok"):
                        report.ended_by = "request_input" if call.name == "request_input" else "request_approval"
                        return report
            raise AssertionError("unreachable")  # pragma: no cover

    async def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Perform flow tool ``name`` as the model would, without a model: the same checks,
        journal entry and save (``run.agent.call("complete_node", node_id="ask", summary="done",
        fields={"name": "Ada"})``). Returns what the model would be sent; a refused write is
        ``{"ok": False, "code": ..., "error": ...}`` and changes nothing."""
        async with self._lock:
            await self.run.drain()
            return await self._dispatch(ToolCall(id=f"host-{name}", name=name, arguments=arguments))

    async def _dispatch(self, call: ToolCall) -> dict[str, Any]:
        run = self.run
        args = call.arguments
        graph, snapshot = run.graph, run.snapshot
        node_id = args.get("node_id")
        try:
            if call.name not in {tool.name for tool in self.tools()}:
                result: dict[str, Any] = {"ok": False, "error": f"unknown tool {call.name!r}", "code": "unknown-tool"}
            elif call.name == "get_state":
                result = {"ok": True, **agent_ops.get_state(graph, snapshot)}
            elif call.name == "get_globals":
                result = {"ok": True, **agent_ops.get_globals(graph, snapshot)}
            elif call.name == "get_available":
                result = {"ok": True, "nodes": agent_ops.get_available(graph, snapshot)}
            elif call.name == "validate_node":
                result = {"ok": True, **agent_ops.validate_node(graph, snapshot, node_id)}
            elif call.name == "build_handoff":
                result = {"ok": True, **agent_ops.build_handoff(graph, snapshot, node_id)}
            else:
                result = await self._write(call.name, args, node_id)
        except WorkflowOperationError as exc:
            result = {"ok": False, "error": exc.message, "code": exc.code}
        run.journal.append({"run_id": run.run_id, "kind": "flow-tool", "name": call.name,
                            "status": "finished" if result.get("ok") else "error", "result": result,
                            "error": None if result.get("ok") else str(result.get("error") or result.get("correction")),
                            "node_id": node_id if isinstance(node_id, str) else None,
                            "request": {"call_id": call.id, "arguments": dict(args)}})
        if call.name in _WRITES:
            await run.flush_journal()  # a write's entry is durable before the model sees its result
        return result

    async def _write(self, name: str, args: dict[str, Any], node_id: Any) -> dict[str, Any]:
        run = self.run
        graph, snapshot = run.graph, run.snapshot
        correction = None
        if name == "start_node":
            change = agent_ops.agent_start(graph, snapshot, node_id)
        elif name == "complete_node":
            change, correction = agent_ops.agent_complete(graph, snapshot, node_id, args.get("summary"),
                                                          args.get("fields"))
        elif name == "skip_node":
            change = agent_ops.agent_skip(graph, snapshot, node_id, args.get("reason"))
        elif name == "fail_node":
            change = agent_ops.agent_fail(graph, snapshot, node_id, args.get("message"), args.get("recoverable"))
        elif name == "request_approval":
            change = agent_ops.agent_request_approval(graph, snapshot, node_id, args.get("summary"),
                                                      args.get("fields"))
        else:
            change = agent_ops.agent_request_input(graph, snapshot, node_id, args.get("prompt"), args.get("schema"))
        await run.apply(change)
        await run.drain()
        status = run.node(node_id).status
        if correction is not None:
            return {"ok": False, "code": "output-contract", "correction": correction, "status": status}
        if name == "complete_node" and status != "complete":
            return {"ok": False, "code": "output-contract", "error": run.node(node_id).error, "status": status}
        return {"ok": True, "node": node_id, "status": status, "run_status": run.status,
                "ready_agent_nodes": self.ready()}


def _take_stimuli(count: int) -> ops.Change:
    def change(snapshot: Any) -> None:
        del snapshot.stimuli[:count]
    return change

