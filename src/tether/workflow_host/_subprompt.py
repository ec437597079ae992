"""Subprompt nodes: one isolated model call per attempt, and what its reply means.

- The prompt is the node's interpolated instruction, its bound inputs (when it declares any),
  and, when ``contract.output.fields`` is declared, a directive to answer with only a JSON
  object matching that schema. It is sent alone: no system prompt, no conversation, no session
  history, no tools.
- ``run.model`` picks the tier: ``default`` or absent is the run's model; an undeclared
  ``small``/``deep`` fails the node instead of substituting another model.
- With declared fields the payload is extracted fail-closed (:func:`tether.models.parsing.
  extract_json`: the whole reply, a fence around all of it, or its sole bracket structure
  standing on its own lines; never repaired) and validated against the contract. The reply is
  the ``summary`` either way.
- The output is classified ``obtained_by="agent"``: a check consuming it is ``asserted``.
- ``control.retries``, ``timeoutSec`` and ``optional`` work as for function nodes: attempts run
  one after the other, a timeout or an abort cancels the call and waits for it to end before
  anything else happens, and a stale result (cancel, retry, hydrate) is discarded.
- Every call made is counted on the run (``model_calls``, ``usage``), a failed or stopped one too
  (with no tokens: none were reported).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from tether.errors import ModelConfigurationError, TetherError, WorkflowExpressionError
from tether.executors.provenance import Binding
from tether.models.parsing import ReplyParseError, extract_json, storable_text, storable_value
from tether.models.types import ChatMessage, Model, ModelRequest, ModelResponse, Usage
from tether.workflow import Attempt, NodeOutput, WorkflowGraph, ops
from tether.workflow._agent import instruction_text, output_problem
from tether.workflow._contract import SubpromptRun
from tether.workflow._expr import Wait
from tether.workflow_host._process import complete_or_park, record_attempt

if TYPE_CHECKING:
    from tether.workflow_host._host import RunHost

__all__ = ["JSON_DIRECTIVE", "parse_reply", "run_subprompt", "subprompt_prompt"]

JSON_DIRECTIVE = ("Respond with only a JSON object that matches this JSON Schema, with no other text:\n")


def subprompt_prompt(graph: WorkflowGraph, node_id: str, instruction: str, bindings: dict[str, Binding]) -> str:
    """The whole prompt of subprompt ``node_id``."""
    parts = [instruction]
    if bindings:
        values = {name: binding.value for name, binding in bindings.items()}
        parts.append("Inputs:\n" + json.dumps(values, indent=2, ensure_ascii=False, default=str))
    output = graph.nodes[node_id].contract.output
    if output is not None and output.fields is not None:
        parts.append(JSON_DIRECTIVE + json.dumps(output.fields, ensure_ascii=False))
    return "\n\n".join(parts)


def parse_reply(graph: WorkflowGraph, node_id: str, reply: str) -> NodeOutput:
    """The node output of a subprompt reply; :class:`ValueError` naming why it is refused."""
    summary = storable_text(reply)
    output = graph.nodes[node_id].contract.output
    if output is None or output.fields is None:
        return NodeOutput(summary=summary)
    try:
        payload = storable_value(extract_json(reply))
    except ReplyParseError as exc:
        raise ValueError(f"the reply holds no usable JSON ({exc.reason}): {exc.message}") from None
    problem = output_problem(graph, node_id, payload)
    if problem is not None:
        raise ValueError(f"the reply does not match the output contract at {problem}")
    return NodeOutput(fields=payload, summary=summary)


async def _call(model: Model, request: ModelRequest, timeout: float | None, abort: asyncio.Event) -> ModelResponse:
    """One call, cancelled (and awaited) on timeout or abort."""
    call = asyncio.ensure_future(model.complete(request))
    stop = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait({call, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if call in done:
        return call.result()
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    raise _Stopped("aborted" if abort.is_set() else f"the model call timed out after {timeout:g}s")


class _Stopped(Exception):
    pass


async def run_subprompt(run: RunHost, node_id: str) -> bool:
    """Run available subprompt ``node_id`` to its end; ``False`` while a producer it reads is not
    complete (it waits)."""
    graph = run.graph
    node = graph.nodes[node_id]
    assert isinstance(node.run, SubpromptRun)
    bindings = await run.resolve_or_fail(node_id)
    if bindings is None:
        return run.node(node_id).status != "available"
    try:
        instruction = instruction_text(graph, run.snapshot, node_id)
    except WorkflowExpressionError as exc:
        await run.apply(ops.fail_node(graph, node_id, exc.message))
        return True
    if isinstance(instruction, Wait):
        return False
    tier = node.run.model or "default"
    try:
        model = run.model_for(tier)
    except ModelConfigurationError as exc:
        await run.apply(ops.fail_node(graph, node_id, f"node {node_id!r}: model tier {tier!r}: {exc.message}"))
        return True
    if model is None:
        await run.apply(ops.fail_node(graph, node_id, f"subprompt {node_id!r} needs a language model, and none is "
                                      "configured (set TETHER_MODEL or pass model=...)"))
        return True
    prompt = subprompt_prompt(graph, node_id, instruction, bindings)
    request = ModelRequest(call="subprompt", messages=(ChatMessage(role="user", content=prompt),), tier=tier)
    abort = run.aborts[node_id] = asyncio.Event()
    await run.apply(ops.start_node(node_id))
    generation = run.node(node_id).generation
    failures: list[Attempt] = []
    output: NodeOutput | None = None
    try:
        for _ in range(node.control.retries + 1):
            reply = None
            try:
                try:
                    response = await _call(model, request, node.control.timeout_sec, abort)
                except (_Stopped, TetherError):
                    await run.count_model_call(Usage())  # the call was made; its tokens are unknown
                    raise
                await run.count_model_call(response.usage)
                reply = storable_text(response.text)
                output = parse_reply(graph, node_id, response.text)
                break
            except (_Stopped, ValueError, TetherError) as exc:
                error = exc.message if isinstance(exc, TetherError) else str(exc)
                failures.append(Attempt(generation=generation, status="failed", error=f"node {node_id!r}: {error}",
                                        summary=reply))
                if abort.is_set():
                    break
    finally:
        run.aborts.pop(node_id, None)
    state = run.node(node_id)
    if state.generation != generation or state.status != "running":
        return True  # stale: cancelled, retried or hydrated while it ran
    origins = {name: binding.origins for name, binding in bindings.items()}
    changes: list[ops.Change] = []
    if output is not None:
        changes += [record_attempt(node_id, attempt) for attempt in failures]
        attempt = Attempt(generation=generation, status="complete", fields=dict(output.fields),
                          summary=output.summary)
        changes.append(complete_or_park(graph, run.snapshot, node_id, output, origins=origins, obtained_by="agent",
                                        attempt=attempt))
    else:
        changes += [record_attempt(node_id, attempt) for attempt in failures[:-1]]
        last = failures[-1]
        changes.append(ops.fail_node(graph, node_id, last.error or "failed", last))
    await run.apply(*changes)
    return True
