"""The ``collect`` node: gather fields, then complete.

Each pass (seed 000): complete when the required fields are all present; otherwise, with fresh
input, count the pass (over ``max_turns``: complete only if truly satisfied, else escalate
naming the missing fields), run the tier-0 resolvers on the user's text, make one non-speaking
extraction call for the fields that remain (at most one model call before the turn speaks),
merge (dropping ``verbatim_fields`` values the user never wrote), and if still incomplete ask
deterministically and stay. A node whose question is phrased by the model becomes the turn's
speaker instead: its speak envelope reads the fields.

Schema fields live under ``__collect_<id>`` while gathering and are promoted into the run's state
on completion; agent fields live in the session's data. ``on_complete`` receives only the
projected required fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tether.engine.events import CollectUpdate
from tether.engine.extract import extract_values, passes_verbatim_guard, validate_value
from tether.engine.moves import silenced
from tether.engine.pauses import ASKING, Pause, Static
from tether.engine.reuse import confirm_reused
from tether.engine.session import Run
from tether.engine.state import SpeakRequest, TurnState
from tether.engine.templates import render
from tether.flow.choices import match_choice
from tether.flow.fields import is_known
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node, Reply
from tether.flow.resolvers import WholeMessage
from tether.flow.transitions import Escalate, is_code

__all__ = ["ask_text", "clear_caches", "complete", "dispatch_collect", "merge_values", "missing", "pending",
           "question_first"]


def clear_caches(run: Run, node_id: str) -> None:
    """Forget a collect node's gathered values and pass count (when the run leaves the node)."""
    run.state.pop(f"__collect_{node_id}", None)
    run.state.pop(f"__collectTurns_{node_id}", None)


def _frame(run: Run, node: Collect) -> dict[str, Any]:
    frame = run.state.get(f"__collect_{node.id}")
    if not isinstance(frame, dict):
        frame = {}
        run.state[f"__collect_{node.id}"] = frame
    return frame


def _is_schema_field(node: Collect, name: str) -> bool:
    return node.schema is not None and name in node.schema.model_fields


def value_of(ts: TurnState, run: Run, node: Collect, name: str) -> Any:
    if _is_schema_field(node, name):
        return _frame(run, node).get(name)
    return ts.session.data.get(name)


def missing(ts: TurnState, run: Run, node: Collect) -> list[str]:
    """Required fields without a known value, in order."""
    return [name for name in node.required if not is_known(value_of(ts, run, node, name))]


def missing_names(ts: TurnState, run: Run | None, node: Collect) -> list[str]:
    """Required fields without a known value; with no run yet, every schema field is missing."""
    if run is not None:
        return missing(ts, run, node)
    return [n for n in node.required if _is_schema_field(node, n) or not is_known(ts.session.data.get(n))]


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
            _frame(run, node)[name] = value
        else:
            ts.session.data[name] = value
        sources[name] = source
    return sources, rejected


def _purge_invalid(ts: TurnState, run: Run, node: Collect) -> None:
    frame = _frame(run, node)
    for name in list(frame):
        ok, value, _, _ = validate_value(ts, node, name, frame[name])
        if ok:
            frame[name] = value
        else:
            del frame[name]


def resolve(ts: TurnState, run: Run, node: Collect, wanted: list[str],
             judged: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], set[str]]:
    """The deterministic resolvers' reading of the message. A ``whole_message`` resolver takes
    anything, so it never overrides the model's explicit null for its field (``judged``): a
    question typed mid-form is not the answer to the form's question."""
    hits: dict[str, Any] = {}
    ambiguous: set[str] = set()
    if node.choices and node.slots[0] in wanted and (picked := match_choice(ts.message_text, node.choices)):
        hits[node.slots[0]] = picked.id  # the customer tapped (or typed) a choice: no model call
    frame = {"input": run.input, "state": ts.state_view(run), "results": run.state.get("__results", {})}
    for resolver in node.resolvers:
        if resolver.field not in wanted or resolver.field in hits or resolver.field in ambiguous:
            continue
        if isinstance(resolver, WholeMessage) and judged is not None and resolver.field in judged \
                and judged[resolver.field] is None:
            continue
        found = resolver.resolve(ts.message_text, frame)
        if found.status == "hit":
            hits[resolver.field] = found.value
        elif found.status == "ambiguous":
            ambiguous.add(resolver.field)
    return hits, ambiguous


def ask_text(ts: TurnState, run: Run, node: Collect, names: list[str]) -> str:
    """The deterministic question for ``names``."""
    state = ts.state_view(run)
    if callable(node.ask):
        return str(node.ask(list(names), state))
    if isinstance(node.ask, str):
        return render(node.ask, state, run.input, ts.options.context, where="ask")
    asks: list[str] = []
    for name in names:
        if isinstance(node.ask, dict) and name in node.ask:
            asks.append(render(node.ask[name], state, run.input, ts.options.context, where=f"ask.{name}"))
        elif (field := ts.agent.fields.get(name)) is not None and field.ask:
            asks.append(field.ask)
    if asks:
        return " ".join(asks)
    human = [_humanize(ts, name) for name in names]
    if len(human) == 1:
        return f"Could you share your {human[0]}?"
    if human:
        return f"Could you share: {', '.join(human)}?"
    return "Could you tell me a bit more?"


def _humanize(ts: TurnState, name: str) -> str:
    field = ts.agent.fields.get(name)
    if field is not None and field.label:
        return field.label
    return name.replace("_", " ").replace("-", " ").strip()


def complete(ts: TurnState, run: Run, node: Collect, *, code: str | None = None) -> Any:
    """Project the required fields, promote schema fields into the state, call ``on_complete``."""
    projected = {name: value_of(ts, run, node, name) for name in node.required}
    run.state.update(_frame(run, node))  # every gathered schema field is promoted; caches go on the goto
    ts.outcome(run, code=code, status="skipped" if code else "ok", kind="collect", node_id=node.id)
    if node.on_complete is None or not is_code(node.on_complete) or isinstance(node.on_complete, Node):
        return Static(node.on_complete if node.on_complete is not None else _next())
    return node.on_complete(projected, ts.state_view(run))


def _next() -> Any:
    from tether.flow.transitions import NEXT

    return NEXT


async def dispatch_collect(ts: TurnState, run: Run, flow: Flow, node: Collect) -> Any:
    """Dispatch a collect node; returns a transition, a static target, or a pause."""
    if (asked := confirm_reused(ts, run, flow, node)) is not None:
        return asked
    known = not missing(ts, run, node) and not run.staying
    answering = ts.message_available(run) and ts.asking_at.get(run.id) == node.id
    if known and not (ts.message_available(run) and (answering or not node.phrased_by_model)):
        # nothing to ask: skipped, and the message (if any) stays for the next step that reads it.
        # A deterministic node with a fresh message still makes its correction pass (below).
        return complete(ts, run, node, code="already-known")
    quiet = silenced(ts, run, flow, node, then=Static(node.on_complete if node.on_complete is not None and
                                                      not is_code(node.on_complete) else _next()))
    if quiet is not None:
        return quiet
    if node.phrased_by_model:
        return await _dispatch_phrased(ts, run, node)
    sources: dict[str, str] = {}
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
        before = missing(ts, run, node)
        turns = int(run.state.get(f"__collectTurns_{node.id}", 0)) + 1
        run.state[f"__collectTurns_{node.id}"] = turns
        if turns > node.max_turns:
            if not before:
                return complete(ts, run, node)
            return Escalate(f'Could not collect {", ".join(before)} for "{node.id}" after {node.max_turns} turns.')
        _purge_invalid(ts, run, node)
        # the node schema made partial: every field not yet known (all of them on a correction pass)
        unknown = [n for n in node.slots if not is_known(value_of(ts, run, node, n))]
        wanted = unknown if missing(ts, run, node) else list(node.slots)
        judged = ts.judgement.collect.get((run.id, node.id), ts.judgement.collect.get((run.flow, node.id)))
        hits, ambiguous = resolve(ts, run, node, wanted, judged or {})
        sources, rejected = merge_values(ts, run, node, hits, source="deterministic", guard=False)
        targets = [n for n in wanted if n not in sources and n not in ambiguous]
        needed = [n for n in missing(ts, run, node) if n in targets]
        if before and not needed:
            targets = []  # satisfied by the resolvers: optional fields are not worth a call
        if targets and judged is not None:
            values = {k: v for k, v in judged.items() if k in targets and v is not None}
        elif targets and ts.has_model(node.model) and ts.pre_speak_calls == 0 and not ts.spoke:
            values = await extract_values(ts, run, node, targets, needed)
        else:
            values = {}
        if values:
            more, dropped = merge_values(ts, run, node, values, source="model", guard=True)
            sources.update(more)
            rejected.extend(dropped)
        ts.emit(CollectUpdate(run_id=run.id, flow=flow.id, at=ts.now, node=node.id,
                              collected={n: value_of(ts, run, node, n) for n in node.slots
                                         if is_known(value_of(ts, run, node, n))},
                              missing=missing(ts, run, node), sources=sources, rejected=rejected))
    still = missing(ts, run, node)
    if not still and run.staying:
        return _stay_answer(ts, run, node)
    if not still:
        return complete(ts, run, node, code="already-known" if known and not sources and not answering else None)
    if question_first(ts, run, node):
        # a confirm step (or any fixed ask) answers the customer's question first; Settle re-asks
        ts.speaker = SpeakRequest(run.id, node.id, (), then_ask=ask_text(ts, run, node, still))
        run.status = "asking"
        return Pause("speak")
    ts.say(ask_text(ts, run, node, still), kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
    ts.outcome(run, status="waiting", kind="collect", node_id=node.id, detail=", ".join(still))
    run.status = "asking"
    return ASKING


def _stay_answer(ts: TurnState, run: Run, node: Collect) -> Any:
    """The step an ``on_end="stay"`` run stays on answers anyway (seed 003), with nothing to ask."""
    run.status = "asking"
    if ts.speaker is None and not ts.spoke and ts.has_model(node.model):
        ts.speaker = SpeakRequest(run.id, node.id)
        return Pause("speak")
    return ASKING


def question_first(ts: TurnState, run: Run, node: Collect | Reply) -> bool:
    """The message ``run`` was asking for at ``node`` asks a question (the understand call judged
    ``asks``), and the turn can still speak a model answer before the node's fixed text."""
    return (ts.message is not None and bool(ts.judgement.asks) and ts.floor == run.id
            and ts.consumed_by.get(run.id, node.id) == node.id and ts.asking_at.get(run.id) == node.id
            and ts.speaker is None and not ts.spoke and ts.has_model(node.model))


async def _dispatch_phrased(ts: TurnState, run: Run, node: Collect) -> Any:
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
        hits, _ = resolve(ts, run, node, missing(ts, run, node))
        merge_values(ts, run, node, hits, source="deterministic", guard=False)
    if not missing(ts, run, node):
        return _stay_answer(ts, run, node) if run.staying else complete(ts, run, node)
    asking = pending(ts, run, node)
    if not asking and run.staying:
        return _stay_answer(ts, run, node)
    if not asking:
        for name in missing(ts, run, node):
            ts.outcome(run, code="max-asks", status="skipped", kind="collect", node_id=node.id, detail=name)
        return complete(ts, run, node)
    run.status = "asking"
    first_ask = all(run.asked.get(n, 0) == 0 for n in node.required) and not any(
        is_known(value_of(ts, run, node, n)) for n in node.required)
    if node.question is not None and first_ask and not run.staying:
        if ts.message is not None and ts.judgement.asks and ts.speaker is None and not ts.spoke:
            # the customer asked something: answer first, the fixed question follows in Settle
            ts.speaker = SpeakRequest(run.id, node.id, tuple(asking), then_ask=node.question)
            return Pause("speak")
        ts.say(node.question, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        for name in asking:
            run.asked[name] = run.asked.get(name, 0) + 1
        ts.outcome(run, code="asked-fixed", kind="collect", node_id=node.id)
        return ASKING
    if ts.speaker is None and not ts.spoke:
        ts.speaker = SpeakRequest(run.id, node.id, tuple(asking))
        return Pause("speak")
    return ASKING
