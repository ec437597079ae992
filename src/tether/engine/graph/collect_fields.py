"""A collect node's fields: where their values live, what is missing, merging, the deterministic
resolvers and the deterministic question.

Schema fields live under ``__collect_<id>`` while gathering; agent fields live in the session's
data. The ``collect`` node's dispatch (:mod:`tether.engine.graph.collect`), the speak call and the
prompt parts read and write fields through this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.extract import passes_verbatim_guard, validate_value
from tether.flow.choices import match_choice
from tether.flow.fields import is_known
from tether.flow.nodes import Collect
from tether.flow.resolvers import Pattern, WholeMessage
from tether.flow.triggers import MessageTrigger

__all__ = ["ask_text", "asking_text", "clear_caches", "gathered", "has_value", "humanize", "merge_values", "missing",
           "missing_names", "pending", "purge_invalid", "question_text", "resolve", "resolver_frame",
           "started_by_catch_all", "value_of"]


def clear_caches(run: Run, node_id: str) -> None:
    """Forget a collect node's gathered values and pass counts (when the run leaves the node)."""
    run.state.pop(f"__collect_{node_id}", None)
    run.state.pop(f"__collectTurns_{node_id}", None)
    run.state.pop(f"__cannotHandle_{node_id}", None)


def gathered(run: Run, node: Collect) -> dict[str, Any]:
    """The schema-field values a collect node has gathered so far (created empty when absent)."""
    frame = run.state.get(f"__collect_{node.id}")
    if not isinstance(frame, dict):
        frame = {}
        run.state[f"__collect_{node.id}"] = frame
    return frame


def _is_schema_field(node: Collect, name: str) -> bool:
    return node.schema is not None and name in node.schema.model_fields


def value_of(ts: TurnState, run: Run, node: Collect, name: str) -> Any:
    """The value of field ``name`` at ``node``: its gathered frame for a schema field, else the session's data."""
    if _is_schema_field(node, name):
        return gathered(run, node).get(name)
    return ts.session.data.get(name)


def has_value(ts: TurnState, run: Run, node: Collect, name: str) -> bool:
    """Whether field ``name`` holds an answer at ``node``: a known value, or an empty list where
    the agent field allows it (``Field.allow_empty``)."""
    schema = node.schema
    if schema is not None and name in schema.model_fields:
        return is_known(gathered(run, node).get(name))
    return ts.answered(name)


def missing(ts: TurnState, run: Run, node: Collect) -> list[str]:
    """Required fields without an answer, in order."""
    return [name for name in node.required if not has_value(ts, run, node, name)]


def missing_names(ts: TurnState, run: Run | None, node: Collect) -> list[str]:
    """Required fields without an answer; with no run yet, every schema field is missing."""
    if run is not None:
        return missing(ts, run, node)
    return [n for n in node.required if _is_schema_field(node, n) or not ts.answered(n)]


def pending(ts: TurnState, run: Run, node: Collect) -> list[str]:
    """Missing fields not yet asked ``max_asks`` times (what a model-phrased question asks)."""
    return [name for name in missing(ts, run, node) if run.asked.get(name, 0) < node.max_asks]


def merge_values(ts: TurnState, run: Run, node: Collect, values: dict[str, Any], *, source: str,
                 guard: bool) -> tuple[dict[str, str], list[str]]:
    """Validate and write values; returns ``(sources, rejected)``."""
    sources: dict[str, str] = {}
    rejected: list[str] = []
    for name, raw in values.items():
        if guard and name in node.verbatim_fields and not passes_verbatim_guard(raw, ts.message_text):
            rejected.append(name)
            continue
        ok, value, code, detail = validate_value(ts, node, name, raw)
        if not ok:
            rejected.append(name)
            ts.outcome(None, code=code, status="skipped", kind="collect", node_id=node.id, detail=detail)
            continue
        if _is_schema_field(node, name):
            gathered(run, node)[name] = value
        else:
            ts.session.data[name] = value
        sources[name] = source
    return sources, rejected


def purge_invalid(ts: TurnState, run: Run, node: Collect) -> None:
    """Revalidate the gathered schema fields, dropping the values that no longer pass."""
    frame = gathered(run, node)
    for name in list(frame):
        ok, value, _, _ = validate_value(ts, node, name, frame[name])
        if ok:
            frame[name] = value
        else:
            del frame[name]


def resolve(ts: TurnState, run: Run, node: Collect, wanted: list[str], judged: Mapping[str, Any] | None = None,
            *, patterns_only: bool = False) -> tuple[dict[str, Any], set[str]]:
    """The deterministic resolvers' reading of the message. A ``whole_message`` resolver takes
    anything, so it never overrides the model's reading of its field (``judged``): an explicit
    null (a question typed mid-form is not the answer to the form's question) or a value (the
    answer without what was said around it: "9 Kings Road, Oxford, like I said" is "9 Kings Road,
    Oxford"), and the resolvers after it leave that field to the model too, as they would have left
    it to the whole message. ``patterns_only``: only the ``pattern`` resolvers read it (see :func:`read_again`)."""
    hits: dict[str, Any] = {}
    ambiguous: set[str] = set()
    if not patterns_only and node.choices and node.slots[0] in wanted \
            and (picked := match_choice(ts.message_text, node.choices)):
        hits[node.slots[0]] = picked.id  # the customer tapped (or typed) a choice: no model call
    frame = resolver_frame(ts, run)
    to_model: set[str] = set()  # a free-text field the model read: its reading stands
    for resolver in node.resolvers:
        if resolver.field not in wanted or resolver.field in hits or resolver.field in ambiguous \
                or resolver.field in to_model:
            continue
        if patterns_only and not isinstance(resolver, Pattern):
            continue
        if isinstance(resolver, WholeMessage) and judged is not None and resolver.field in judged \
                and _model_read(judged[resolver.field]):
            to_model.add(resolver.field)
            continue
        if isinstance(resolver, WholeMessage) and _small_talk(ts):
            continue  # "goodbye" or "thanks" is not a refund's reason: the step asks again
        found = resolver.resolve(ts.message_text, frame)
        if found.status == "hit":
            hits[resolver.field] = found.value
        elif found.status == "ambiguous":
            ambiguous.add(resolver.field)
    return hits, ambiguous


def _model_read(value: Any) -> bool:
    """The model's reading of a free-text field that stands for the message: a null, or a text."""
    return value is None or (isinstance(value, str) and bool(value.strip()))


def _small_talk(ts: TurnState) -> bool:
    """The message is only thanks, small talk or a closing ("thanks, bye"): no free-text answer."""
    return bool(ts.agent.repair.small_talk(ts.message_text))


def resolver_frame(ts: TurnState, run: Run) -> dict[str, Any]:
    """What a resolver reads besides the message: the run's input, state view and node results."""
    return {"input": run.input, "state": ts.state_view(run), "results": run.state.get("__results", {})}


def question_text(ts: TurnState, run: Run, node: Collect) -> str:
    """The step's fixed first question (``question``), its placeholders filled."""
    return ts.render(node.question or "", run, where="question")


def asking_text(ts: TurnState, run: Run, node: Collect, names: list[str]) -> str:
    """What a step the engine phrases says to ask for ``names``: its ``question`` (a fixed opening)
    when the run was not already asking at the step when the turn began, else :func:`ask_text`.
    So a re-ask (after small talk, an answer that gave nothing, a detour) says ``ask``. A catch-all
    flow's question is the agent's opening ("Hi, I'm Sam..."): once the agent has spoken in the
    session, a new run of it (after a finished task) says ``ask`` too, not the greeting again."""
    if node.question is not None and ts.asking_at.get(run.id) != node.id \
            and not (ts.session.last_assistant_at is not None and _catch_all(ts, run)):
        return question_text(ts, run, node)
    return ask_text(ts, run, node, names)


def _catch_all(ts: TurnState, run: Run) -> bool:
    flow = ts.agent.flows_by_id.get(run.flow)
    return flow is not None and any(isinstance(t, MessageTrigger) and t.catch_all for t in flow.on)


def started_by_catch_all(ts: TurnState, run: Run) -> bool:
    """``run`` started this turn, its flow a catch-all: the message may have named no task at all."""
    return any(started.run_id == run.id for started in ts.started) and _catch_all(ts, run)


def ask_text(ts: TurnState, run: Run, node: Collect, names: list[str]) -> str:
    """The deterministic question for ``names``."""
    if callable(node.ask):
        return str(node.ask(list(names), ts.state_view(run)))
    if isinstance(node.ask, str):
        return ts.render(node.ask, run, where="ask")
    asks: list[str] = []
    for name in names:
        if isinstance(node.ask, dict) and name in node.ask:
            asks.append(ts.render(node.ask[name], run, where=f"ask.{name}"))
        elif (field := ts.agent.fields.get(name)) is not None and field.ask:
            asks.append(field.ask)
    if asks:
        return " ".join(asks)
    human = [humanize(ts, name) for name in names]
    if len(human) == 1:
        return f"Could you share your {human[0]}?"
    if human:
        return f"Could you share: {', '.join(human)}?"
    return "Could you tell me a bit more?"


def humanize(ts: TurnState, name: str) -> str:
    """A field's name as the customer reads it: its ``label``, else its name without underscores."""
    field = ts.agent.fields.get(name)
    if field is not None and field.label:
        return field.label
    return name.replace("_", " ").replace("-", " ").strip()
