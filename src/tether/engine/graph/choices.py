"""Choices at run time: the ``interactive`` event on entering a node with choices, and the
lexical match that answers a decide node with no model call (see ``tether.flow.choices``)."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ValidationError

from tether.engine.core.events import FlowEvent
from tether.engine.core.pauses import ASKING
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.flow.choices import NO_CHOICE, Choice, match_choice
from tether.flow.nodes import Collect, Decide, Node
from tether.templating import fill_names

__all__ = ["Interactive", "announce_choices", "constrained_schema", "decide_by_choice", "unmatched_choice"]


@dataclass(frozen=True, kw_only=True)
class Interactive(FlowEvent):
    """A node with choices was entered: ``options`` (``{id, label, description?}``) for a UI to show
    as buttons, with the node's ``prompt`` when it has one."""

    type: ClassVar[str] = "interactive"
    node: str
    options: list[dict[str, Any]] = field(default_factory=list)
    prompt: str | None = None


def _prompt(ts: TurnState, run: Run, node: Collect | Decide) -> str | None:
    """What the node says when it waits for a pick (its ``prompt``, a collect's ``question`` or
    ``ask``), its placeholders filled."""
    text, where = (node.prompt, "prompt") if isinstance(node, Decide) else \
        (node.question, "question") if node.question is not None else \
        (node.ask if isinstance(node.ask, str) else None, "ask")
    return ts.render(text, run, where=where) if text else None


def announce_choices(ts: TurnState, run: Run, flow_id: str, node: Node) -> None:
    """Emit ``interactive`` when ``node`` (just entered) offers choices; after ``node-enter``."""
    if isinstance(node, Collect | Decide) and node.choices:
        options = [c.as_dict() for c in node.choices if isinstance(c, Choice)]
        ts.emit(Interactive(run_id=run.id, flow=flow_id, at=ts.now, node=node.id, options=options,
                            prompt=_prompt(ts, run, node)))


def constrained_schema(node: Decide, schema: dict[str, Any]) -> dict[str, Any]:
    """The decide call's schema with ``choice`` limited to the choice ids plus ``__none``."""
    if not node.choices or "choice" not in schema.get("properties", {}):
        return schema
    constrained = copy.deepcopy(schema)
    ids = [c.id for c in node.choices if isinstance(c, Choice)]
    constrained["properties"]["choice"] = {**constrained["properties"]["choice"], "enum": [*ids, NO_CHOICE]}
    return constrained


async def decide_by_choice(ts: TurnState, run: Run, node: Decide) -> Any:
    """A decide node with choices, before any model call: with no fresh message for the run it
    waits for the customer's pick (saying its ``prompt``); a message that is exactly a choice is
    decided with no model call. None: the model decides."""
    if not ts.message_available(run):
        if (prompt := _prompt(ts, run, node)) is not None:
            ts.say(prompt, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        ts.outcome(run, code="awaiting-choice", status="waiting", kind="decide", node_id=node.id)
        run.status = "asking"
        return ASKING
    picked = match_choice(ts.message_text, node.choices)
    if picked is None:
        return None
    try:
        data = node.schema.model_validate({"choice": picked.id})
    except ValidationError:
        return None  # the schema wants more than the choice: the model fills it in
    ts.consumed_by[run.id] = node.id
    result = node.decide(data, ts.state_view(run))
    if inspect.isawaitable(result):
        result = await result
    ts.outcome(run, code="choice-matched", kind="decide", node_id=node.id, detail=picked.id, llm_calls=0)
    return result


def unmatched_choice(ts: TurnState, run: Run, node: Decide) -> Any:
    """A decide node with choices and no model to read a message that names none of them: the
    customer is asked to pick one (``Repair.pick_choice``) and the node waits; no call, no error.
    None when a model may decide (or there is no message for the node)."""
    if ts.has_model(node.model) or not ts.message_available(run) or ts.asking_at.get(run.id) != node.id:
        return None
    labels = [c.label for c in node.choices if isinstance(c, Choice)]
    if not labels:
        return None
    ts.consumed_by[run.id] = node.id
    options = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]
    ts.say(fill_names(ts.agent.repair.pick_choice, {"choices": options}), kind="verbatim",
           key=f"{ts.key(run, node.id)}:pick:{ts.user_seq}", run=run, node_id=node.id)
    ts.outcome(run, code="choice-unmatched", status="waiting", kind="decide", node_id=node.id, llm_calls=0)
    run.status = "asking"
    return ASKING
