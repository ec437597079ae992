"""A conversation that starts a workflow and answers its pending gates and inputs.

:class:`WorkflowChat` gives a conversation flow (:mod:`tether.flow`) the nodes to do it:

- ``<prefix>_request`` (a collect) takes the message that started the flow as
  ``workflow_request`` (so the question below waits for the human's next message);
- ``<prefix>_start`` (an action) starts the run, saved in the store, and advances it (drain plus
  agent turns when the run has a model). The run id comes from the turn's deterministic key, so
  a replayed turn finds the run it already started instead of starting another;
- ``<prefix>_ask`` (a collect) asks the human the pending question: a gate's or an approval's
  summary (answer yes or no, with an optional reason after it), or an input request's prompt;
- ``<prefix>_answer`` (an action) applies the answer (``apply_approval`` or ``apply_input``),
  advances the run and asks the next question; a refused answer is said, and asked again;
- ``<prefix>_done`` (a reply) says how the run ended.

The model calls the run makes while an action drives it (its subprompts and agent turns) are
counted on the conversation too: in the turn's ``llm_calls``/``usage`` and the session's
``usage`` (``workflow_calls`` among them), besides the run's own ``model_calls``/``usage``.

The conversation's data carries ``workflow_run``, ``workflow_status``, ``workflow_question`` and
``workflow_output``; declare :meth:`WorkflowChat.fields` on the agent, and clear
``workflow_request``/``workflow_answer`` on the flow's start to run it again.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.executors import Executor
from tether.flow import Field, action, collect, goto, reply, whole_message
from tether.models.tiers import ModelTiers
from tether.models.types import Model, Usage
from tether.stores.base import Store
from tether.workflow import WorkflowGraph, load_workflow
from tether.workflow_host._run import Definition, Resolver, WorkflowRun
from tether.workflow_host._store import SnapshotStore

__all__ = ["WorkflowChat"]

_YES = re.compile(r"^\s*(yes|y|approve|approved|ok|okay|sure)\b[\s,.:;!-]*", re.IGNORECASE)
_NO = re.compile(r"^\s*(no|n|reject|rejected|deny)\b[\s,.:;!-]*", re.IGNORECASE)


class WorkflowChat:
    """Conversation nodes that start ``definition`` and answer its questions from the chat.

    Args:
        definition: the workflow.
        store: where the run is saved (the conversation's store or another).
        input: the run input, from the conversation's data (a function of it) or fixed.
        executor, model, workspace, resolve: as for :class:`WorkflowRun`.
        prefix: the node ids' prefix.
    """

    def __init__(self, definition: Definition, *, store: Store, input: Callable[[dict[str, Any]], dict[str, Any]]
                 | Mapping[str, Any] | None = None, executor: Executor | None = None,
                 model: Model | ModelTiers | str | None = None, workspace: str | Path = ".",
                 resolve: Resolver | Mapping[str, Definition] | None = None, prefix: str = "workflow") -> None:
        self.graph: WorkflowGraph = definition if isinstance(definition, WorkflowGraph) else load_workflow(definition)
        # the conversation drives its runs itself (and they have no launch file a worker could load)
        self.snapshots = SnapshotStore(store, queue=False)
        self.input = input
        self.options: dict[str, Any] = {"executor": executor, "model": model, "workspace": workspace,
                                        "resolve": resolve}
        self.prefix = prefix

    def fields(self) -> dict[str, Field]:
        """The agent fields the nodes collect (pass them to ``Agent(fields=...)``)."""
        return {"workflow_request": Field("string", description="What the human asked for", extract="asked"),
                "workflow_answer": Field("string", description="The human's answer to the workflow's question",
                                         extract="asked")}

    def nodes(self) -> list[Any]:
        """The conversation nodes, in order (enter the flow at the first)."""
        p = self.prefix
        return [
            collect(f"{p}_request", fields=["workflow_request"], ask=f"What should {self.graph.workflow.name} do?",
                    resolvers=[whole_message("workflow_request")], max_turns=3),
            action(f"{p}_start", self.start, label=f"start workflow {self.graph.id}"),
            collect(f"{p}_ask", fields=["workflow_answer"], ask=lambda missing, state: str(state["workflow_question"]),
                    resolvers=[whole_message("workflow_answer")], max_turns=3),
            action(f"{p}_answer", self.answer),
            reply(f"{p}_done", response="${workflow_summary}"),
        ]

    async def _run(self, run_id: str) -> WorkflowRun:
        return await WorkflowRun.load(self.snapshots, run_id, self.graph, **self.options)

    async def start(self, state: dict[str, Any], ctx: Any) -> Any:
        """Start (or, on a replay, find) the run and advance it."""
        run_id = f"{self.graph.id}-{ctx.key}"
        if await self.snapshots.load(run_id) is not None:
            run = await self._run(run_id)
        else:
            given = self.input(state) if callable(self.input) else dict(self.input or {})
            run = WorkflowRun(self.graph, store=self.snapshots, run_id=run_id, input=given, **self.options)
        before = _spent(run)
        try:
            await run.advance()
        finally:
            _count(ctx, run, before)
        return self._next(run)

    async def answer(self, state: dict[str, Any], ctx: Any) -> Any:
        """Apply the human's answer to the pending gate, approval or input request, and advance."""
        run = await self._run(str(state["workflow_run"]))
        text = str(state.get("workflow_answer") or "")
        before = _spent(run)
        try:
            try:
                await self._apply(run, text)
            except TetherError as exc:
                return self._next(run, refused=exc.message)
            await run.advance()
        finally:
            _count(ctx, run, before)
        return self._next(run)

    async def _apply(self, run: WorkflowRun, text: str) -> None:
        node_id, kind = _pending(run)
        if node_id is None:
            return
        if kind == "input":
            request = run.node(node_id).input_request
            schema = (request.schema_ if request is not None else {}) or {}
            answer: Any = text
            if schema.get("kind") in ("form", "file") or (schema.get("kind") == "choice" and schema.get("multiple")):
                try:
                    answer = json.loads(text)
                except json.JSONDecodeError:
                    answer = [part.strip() for part in text.split(",")] if schema.get("kind") == "choice" else text
            await run.apply_input(node_id, answer, provided_by="chat")
            return
        approval = run.node(node_id).approval
        schema = (approval.schema_ if approval is not None else None) or {}
        if schema.get("kind") == "choice" and not (_YES.match(text) or _NO.match(text)):
            await run.apply_approval(node_id, "approved", response=text.strip(), decided_by="chat")
            return
        yes, no = _YES.match(text), _NO.match(text)
        if not (yes or no):
            raise _Unclear("please answer yes or no (a reason may follow)")
        matched = yes or no
        assert matched is not None
        reason = text[matched.end():].strip() or None
        await run.apply_approval(node_id, "approved" if yes else "rejected", feedback=reason, decided_by="chat")

    def _next(self, run: WorkflowRun, refused: str | None = None) -> Any:
        node_id, kind = _pending(run)
        data: dict[str, Any] = {"workflow_run": run.run_id, "workflow_status": run.status}
        if node_id is not None and run.status not in ("complete", "failed", "cancelled"):
            question = _question(run, node_id, kind)
            data["workflow_question"] = f"{refused}. {question}" if refused else question
            return goto(f"{self.prefix}_ask", data=data, clear=["workflow_answer"])
        data["workflow_output"] = dict(run.snapshot.output or {})
        data["workflow_summary"] = _summary(run)
        return goto(f"{self.prefix}_done", data=data)


def _spent(run: WorkflowRun) -> tuple[int, dict[str, int]]:
    return run.snapshot.model_calls, dict(run.snapshot.usage)


def _count(ctx: Any, run: WorkflowRun, before: tuple[int, dict[str, int]]) -> None:
    """Count the model calls ``run`` made since ``before`` on the conversation (its turn and its
    session's usage), also when the run raised: they were spent."""
    calls, tokens = before
    made = run.snapshot.model_calls - calls
    if made > 0:
        grown = {name: max(0, value - tokens.get(name, 0)) for name, value in run.snapshot.usage.items()}
        ctx.count_model_calls(made, Usage(**{n: v for n, v in grown.items() if n in _TOKENS}), workflow=True)


_TOKENS = frozenset(field.name for field in dataclasses.fields(Usage))


class _Unclear(TetherError):
    code = "unclear-answer"


def _pending(run: WorkflowRun) -> tuple[str | None, str]:
    for node_id in run.graph.order:
        state = run.snapshot.nodes[node_id]
        if state.status == "awaiting_input":
            return node_id, "input"
        if state.status == "awaiting_approval" and state.approval is not None and state.approval.decision is None:
            return node_id, "approval"
    return None, ""


def _question(run: WorkflowRun, node_id: str, kind: str) -> str:
    if kind == "input":
        request = run.node(node_id).input_request
        return request.prompt if request is not None else f"{node_id}?"
    approval = run.node(node_id).approval
    assert approval is not None
    schema = approval.schema_ or {}
    options = schema.get("options")
    if schema.get("kind") == "choice" and isinstance(options, list):
        return f"{approval.summary} ({' / '.join(map(str, options))})"
    return f"{approval.summary} (yes or no)"


def _summary(run: WorkflowRun) -> str:
    name = run.graph.workflow.name
    if run.status == "complete":
        return f"{name} is complete."
    failed = [(n, s.error) for n, s in run.snapshot.nodes.items() if s.status == "failed"]
    if failed:
        return f"{name} stopped: {failed[0][0]} failed ({failed[0][1]})."
    return f"{name} is {run.status}."
