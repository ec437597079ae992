"""The ``collect`` node: gather fields, then complete.

Each pass (seed 000): complete when the required fields are all present; otherwise, with fresh
input, count the pass (over ``max_turns``: complete only if truly satisfied, else escalate
naming the missing fields), run the tier-0 resolvers on the user's text, make one non-speaking
extraction call for the fields that remain (at most one model call before the turn speaks),
merge (dropping ``verbatim_fields`` values the user never wrote), and if still incomplete ask
deterministically and stay. A node whose question is phrased by the model becomes the turn's
speaker instead: its speak envelope reads the fields.

Schema fields (:mod:`tether.engine.graph.collect_fields`) are promoted into the run's state on
completion. ``on_complete`` receives only the projected required fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from tether.engine.core.events import CollectUpdate
from tether.engine.core.pauses import ASKING, Pause, Static
from tether.engine.core.session import Run
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.collect_fields import (
    asking_text,
    gathered,
    has_value,
    merge_values,
    missing,
    pending,
    purge_invalid,
    question_text,
    resolve,
    resolver_frame,
    started_by_catch_all,
    value_of,
)
from tether.engine.graph.corrections import (
    apply_corrections,
    correctable,
    earlier_fields,
    marked_as_correction,
    marked_free_text,
    refused_free_text,
    resolver_corrections,
    yes_or_no,
)
from tether.engine.graph.extract import ASKS_KEY, INTENT_KEY, extract_values
from tether.engine.graph.moves import silenced
from tether.engine.graph.reuse import confirm_reused
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node, Reply
from tether.flow.repair import asks_about, content_words
from tether.flow.resolvers import Pattern
from tether.flow.transitions import NEXT, Escalate, Goto, is_code
from tether.flow.yes_no import NO_WORDS, YES_WORDS

__all__ = ["complete", "dispatch_collect", "question_first", "read_again"]


def complete(ts: TurnState, run: Run, node: Collect, *, code: str | None = None) -> Any:
    """Project the required fields, promote schema fields into the state, call ``on_complete``.
    Schema fields are passed on as the node's schema validates them as a whole (seed 000: its
    ``field_validator`` cleanup applies), not as they were gathered one by one."""
    _validate_as_a_whole(ts, run, node)
    projected = {name: value_of(ts, run, node, name) for name in node.required}
    run.state.update(gathered(run, node))  # every gathered schema field is promoted; caches go on the goto
    ts.outcome(run, code=code, status="skipped" if code else "ok", kind="collect", node_id=node.id)
    if node.on_complete is None or not is_code(node.on_complete) or isinstance(node.on_complete, Node):
        return Static(node.on_complete if node.on_complete is not None else _next())
    return node.on_complete(projected, ts.state_view(run))


def _validate_as_a_whole(ts: TurnState, run: Run, node: Collect) -> None:
    """Replace the gathered schema fields with the values the schema's model gives them (its
    validators' cleanup). A model that refuses the gathered values as a whole (a model validator
    that needs a field not gathered) leaves them as gathered, with a warning."""
    if node.schema is None:
        return
    frame = gathered(run, node)
    given = {name: value for name, value in frame.items() if name in node.schema.model_fields}
    try:
        model = node.schema.model_validate(given)
    except ValidationError as exc:
        ts.log("warn", f"collect {node.id!r}: the schema refused the gathered values as a whole "
                       f"({exc.errors()[0]['msg']}); they are passed on as gathered")
        return
    frame.update({name: getattr(model, name) for name in given})


def _next() -> Any:
    return NEXT


async def dispatch_collect(ts: TurnState, run: Run, flow: Flow, node: Collect) -> Any:
    """Dispatch a collect node; returns a transition, a static target, or a pause."""
    if (asked := confirm_reused(ts, run, flow, node)) is not None:
        return asked
    read = read_again(ts, run, flow, node) | read_earlier(ts, run, flow, node)
    before = missing(ts, run, node)
    known = not before and not run.staying
    answering = ts.message_available(run) and ts.asking_at.get(run.id) == node.id
    if known and not (ts.message_available(run) and (answering or not node.phrased_by_model)):
        # nothing to ask: skipped, and the message (if any) stays for the next step that reads it.
        # A deterministic node with a fresh message still makes its correction pass (below).
        return complete(ts, run, node, code=None if read else "already-known")
    quiet = silenced(ts, run, flow, node, then=Static(node.on_complete if node.on_complete is not None and
                                                      not is_code(node.on_complete) else _next()))
    if quiet is not None:
        return quiet
    if node.phrased_by_model:
        return await _dispatch_phrased(ts, run, flow, node)
    sources: dict[str, str] = {}
    fixed: tuple[str, ...] = ()  # the step's own fields a correction changed (it goes on asking)
    # an answer to this step's question (not a message that started it): a pass that understands
    # nothing counts toward the cannot-handle hand-off
    answer_pass = ts.message_available(run) and ts.asking_at.get(run.id) == node.id
    still: list[str] | None = None
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
        turns = int(run.state.get(f"__collectTurns_{node.id}", 0)) + 1
        run.state[f"__collectTurns_{node.id}"] = turns
        if turns > node.max_turns:
            if not before:
                return complete(ts, run, node)
            return Escalate(f'Could not collect {", ".join(before)} for "{node.id}" after {node.max_turns} turns.')
        purge_invalid(ts, run, node)
        # the node schema made partial: every field not yet known (all of them on a correction pass)
        unknown = [n for n in node.slots if not has_value(ts, run, node, n)]
        wanted = unknown if missing(ts, run, node) else list(node.slots)
        judged = ts.judgement.collect.get((run.id, node.id), ts.judgement.collect.get((run.flow, node.id)))
        hits, ambiguous = resolve(ts, run, node, wanted, judged or {})
        fixable = [n for n in correctable(ts, run, flow, node) if n not in wanted]
        back, fixed = _correction(ts, run, flow, node, hits, judged, fixable)
        if back is not None:
            return back
        sources, rejected = merge_values(ts, run, node, hits, source="deterministic", guard=False)
        targets = [n for n in wanted if n not in sources and n not in ambiguous]
        needed = [n for n in missing(ts, run, node) if n in targets]
        if before and not needed:
            targets = []  # satisfied by the resolvers: optional fields are not worth a call
        if targets and judged is not None:
            values = {k: v for k, v in judged.items() if k in targets and v is not None}
        elif targets and ts.has_model(node.model) and ts.pre_speak_calls == 0 and not ts.spoke:
            # an answer to this step's question may instead cancel, chat or give up; a message that started
            # the run only as its flow's catch-all ("forget it, cancel the order" after an order, "hey, how
            # are you?", "that'll do, cheers") may be no task at all
            intents = [i for i in ("cancel", "chitchat", "skip") if ts.agent.repair.on(i)] \
                if ts.asking_at.get(run.id) == node.id else \
                [i for i in ("cancel", "chitchat", "completed") if ts.agent.repair.on(i)] \
                if started_by_catch_all(ts, run) else []
            # a question typed at the step ("how much is a large?") is answered before its question,
            # as the understand call's ``asks`` would have it (no understand call this turn)
            ask_slot = ts.judgement.asks is None and not node.phrased_by_model
            values = await extract_values(ts, run, node, targets, needed, correctable=fixable, intents=intents,
                                          asks=ask_slot)
            if ask_slot and values.pop(ASKS_KEY, None) is True:
                ts.judgement.asks = True
            intent = values.pop(INTENT_KEY, None)
            if isinstance(intent, str) and intent in intents:
                # not an answer: the turn applies the repair pattern after the run phase; the pass is not counted
                run.state[f"__collectTurns_{node.id}"] = turns - 1
                ts.late_intent = (run.id, intent)
                run.status = "asking"
                return ASKING
            fixes = {k: values.pop(k) for k in list(values) if k in fixable}
            if fixes:
                back, own = _corrected(ts, run, flow, node, fixes, "model")
                if back is not None:
                    return back
                fixed += own
        else:
            values = {}
        if values:
            more, dropped = merge_values(ts, run, node, values, source="model", guard=True)
            sources.update(more)
            rejected.extend(dropped)
        still = missing(ts, run, node)
        ts.emit(CollectUpdate(run_id=run.id, flow=flow.id, at=ts.now, node=node.id,
                              collected={n: value_of(ts, run, node, n) for n in node.slots
                                         if has_value(ts, run, node, n)},
                              missing=still, sources=sources, rejected=rejected))
    if still is None:
        still = missing(ts, run, node)
    if not still and run.staying:
        return _stay_answer(ts, run, node)
    if not still:
        return complete(ts, run, node, code="already-known" if known and not sources and not answering else None)
    if answer_pass and (escalate := _not_understood(ts, run, node, understood=bool(sources or fixed))) is not None:
        return escalate
    if question_first(ts, run, node):
        # a confirm step (or any fixed ask) answers the customer's question first; Settle re-asks
        ts.speaker = SpeakRequest(run.id, node.id, (), then_ask=asking_text(ts, run, node, still))
        run.status = "asking"
        return Pause("speak")
    ts.say(asking_text(ts, run, node, still), kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
    ts.outcome(run, status="waiting", kind="collect", node_id=node.id, detail=", ".join(still))
    run.status = "asking"
    return ASKING


def read_again(ts: TurnState, run: Run, flow: Flow, node: Collect) -> dict[str, str]:
    """Read the message an earlier collect step of the run read this turn with this step's
    ``pattern`` resolvers, for the fields it still misses: "a refund for A-1003, it arrived
    broken" gives the order step its number and the reason step its reason, with no model, as a
    form fills every slot a message names. Only patterns: a whole-message or yes/no resolver
    answers the question its step asked, never one the step has not asked yet. Returns the
    fields read, with their source."""
    by = ts.consumed_by.get(run.id)
    if by is None or by == node.id or ts.message is None or not isinstance(flow.by_id.get(by), Collect) \
            or flow.nodes.index(node) < flow.nodes.index(flow.by_id[by]) or (run.id, node.id) in ts.read_again:
        return {}  # only a later step, once a turn: a step gone back to (a correction, a refused value) asks
    ts.read_again.add((run.id, node.id))
    wanted = missing(ts, run, node)
    if not any(isinstance(r, Pattern) and r.field in wanted for r in node.resolvers):
        return {}
    hits, _ = resolve(ts, run, node, wanted, patterns_only=True)
    return _read_ahead(ts, run, flow, node, hits)


def read_earlier(ts: TurnState, run: Run, flow: Flow, node: Collect) -> dict[str, str]:
    """Read what the customer said earlier in the run with this step's ``early`` patterns, for the
    fields it misses and never asked: "it arrived damaged, I want my money back", then "A-1003",
    gives the reason step its reason. The latest message with a value gives it. Returns the fields
    read, with their source."""
    early = node.early_patterns
    wanted = [name for name in missing(ts, run, node) if not run.asked.get(name)] if early else []
    if not any(r.field in wanted for r in early):
        return {}
    frame = resolver_frame(ts, run)
    hits: dict[str, Any] = {}
    for text in reversed(said_in_run(ts, run)):
        for resolver in early:
            if resolver.field in wanted and resolver.field not in hits:
                found = resolver.resolve(text, frame)
                if found.status == "hit":
                    hits[resolver.field] = found.value
    return _read_ahead(ts, run, flow, node, hits)


def _read_ahead(ts: TurnState, run: Run, flow: Flow, node: Collect, hits: dict[str, Any]) -> dict[str, str]:
    """Write the values a step read before it asked (``hits``, by its patterns) and say so; the
    fields written, with their source."""
    if not hits:
        return {}
    sources, rejected = merge_values(ts, run, node, hits, source="deterministic", guard=False)
    ts.emit(CollectUpdate(run_id=run.id, flow=flow.id, at=ts.now, node=node.id,
                          collected={n: value_of(ts, run, node, n) for n in sources},
                          missing=missing(ts, run, node), sources=sources, rejected=rejected))
    return sources


def said_in_run(ts: TurnState, run: Run) -> list[str]:
    """The customer's messages of earlier turns since ``run`` started (the message that started it
    first), as far as the session's window holds them."""
    window = ts.session.messages
    first = next((i for i, m in enumerate(window) if m.run_id == run.id), None)
    if first is None:
        return []
    while first > 0 and window[first - 1].role != "assistant":
        first -= 1  # the customer's message(s) before the run's first words: what started it
    current = ts.user_seq if ts.message is not None else None
    return [m.text for m in window[first:] if m.role == "user" and m.seq != current]


def _not_understood(ts: TurnState, run: Run, node: Collect, *, understood: bool) -> Escalate | None:
    """The cannot-handle count of an answer pass: a value resets it; a question (answered before
    the step asks again) is not counted, toward ``max_turns`` either; anything else counts, and
    ``Repair.cannot_handle_limit`` passes in a row hand the session to a person."""
    key = f"__cannotHandle_{node.id}"
    if understood:
        run.state.pop(key, None)
        return None
    if question_first(ts, run, node):
        run.state[f"__collectTurns_{node.id}"] = int(run.state.get(f"__collectTurns_{node.id}", 1)) - 1
        return None
    count = int(run.state.get(key, 0)) + 1
    run.state[key] = count
    repair = ts.agent.repair
    if repair.on("cannot_handle") and count >= repair.cannot_handle_limit:
        return Escalate(f'Nothing the customer said at "{node.id}" could be understood ({count} times in a row).')
    return None


def _correction(ts: TurnState, run: Run, flow: Flow, node: Collect, hits: Any, judged: Any,
                fixable: list[str]) -> tuple[Goto | None, tuple[str, ...]]:
    """A correction of a field collected before (read by its step's resolvers, or judged by the
    model), taken only when the message answers nothing here, says it corrects, only takes
    values out of a list given before ("no olives" at a yes/no question is not a "no"), or only
    answers yes or no and changes an earlier step's value ("no, medium", "yes please, medium"):
    the move back to an earlier step (None: stay) and the fields of this step's own it changed.
    ``fixable``: the fields a correction may change here (:func:`correctable`)."""
    if not fixable:
        return None, ()
    if hits and not marked_as_correction(ts):
        found = _removals(ts, run, flow, node, fixable)
        if not found and yes_or_no(hits):  # "no, medium", "yes please, medium": not what was read back
            earlier = earlier_fields(flow, run, node, fixable)
            found = resolver_corrections(ts, run, flow, node, earlier) \
                or refused_free_text(ts, run, flow, node, earlier)
            if not found and judged and _says_more(ts):  # "yes, but add flat 3": the model read the new value
                found = {k: v for k, v in judged.items() if k in earlier and v is not None}
                return _corrected(ts, run, flow, node, found, "model") if found else (None, ())
        return _corrected(ts, run, flow, node, found, "deterministic") if found else (None, ())
    corrected = {} if judged is None and asks_about(ts.message_text) else resolver_corrections(ts, run, flow, node,
                                                                                              fixable)
    corrected.update({k: v for k, v in (judged or {}).items() if k in fixable and v is not None})
    if not corrected and judged is None and not hits and marked_as_correction(ts):
        corrected = marked_free_text(ts, run, flow, node, fixable)  # "actually make it 14 Main Street"
    elif not corrected and judged is None and yes_or_no(hits):  # "no wait, make it 6 Main St"
        corrected = refused_free_text(ts, run, flow, node, earlier_fields(flow, run, node, fixable))
    if corrected:
        return _corrected(ts, run, flow, node, corrected, "model" if judged else "deterministic")
    return None, ()


def _says_more(ts: TurnState) -> bool:
    """The message says more than a yes or a no ("yes, but add flat 3", not "yes please")."""
    return bool(content_words(ts.message_text) - YES_WORDS - NO_WORDS)


def _removals(ts: TurnState, run: Run, flow: Flow, node: Collect, fixable: list[str]) -> dict[str, Any]:
    """The lists given before that the message only takes values out of ("no olives")."""
    lists = [name for name in fixable if isinstance(ts.session.data.get(name), list)]
    found = resolver_corrections(ts, run, flow, node, lists)
    return {name: value for name, value in found.items() if isinstance(value, list)
            and len(value) < len(held := ts.session.data[name]) and all(item in held for item in value)}


def _corrected(ts: TurnState, run: Run, flow: Flow, node: Collect, values: dict[str, Any],
               source: str) -> tuple[Goto | None, tuple[str, ...]]:
    """Write the corrections: a move back to the earliest earlier step that collected one (the
    step's own answer in the same message is not used), or None and the step's own fields changed."""
    done = apply_corrections(ts, run, flow, node, values, source=source)
    return (Goto(done.back), ()) if done.back is not None else (None, done.fields)


def _stay_answer(ts: TurnState, run: Run, node: Collect) -> Any:
    """The step an ``on_end="stay"`` run stays on answers anyway (seed 003), with nothing to ask."""
    run.status = "asking"
    if ts.speaker is None and not ts.spoke and ts.has_model(node.model):
        ts.speaker = SpeakRequest(run.id, node.id)
        return Pause("speak")
    return ASKING


def question_first(ts: TurnState, run: Run, node: Collect | Reply) -> bool:
    """The message ``run`` was asking for at ``node`` asks a question (the understand call judged
    ``asks``), and the turn can still speak a model answer before the node's fixed text. A run the
    message started asks its first collect step's question after the answer too (a question that
    starts a flow is answered, not dropped)."""
    started_here = isinstance(node, Collect) and run.id not in ts.asking_at and any(
        s.run_id == run.id for s in ts.started)
    return (ts.message is not None and bool(ts.judgement.asks) and ts.floor == run.id
            and ts.consumed_by.get(run.id, node.id) == node.id
            and (ts.asking_at.get(run.id) == node.id or started_here)
            and ts.speaker is None and not ts.spoke and ts.has_model(node.model))


async def _dispatch_phrased(ts: TurnState, run: Run, flow: Flow, node: Collect) -> Any:
    if ts.message_available(run):
        ts.consumed_by[run.id] = node.id
        hits, _ = resolve(ts, run, node, missing(ts, run, node))
        judged = ts.judgement.collect.get((run.id, node.id))
        back, _ = _correction(ts, run, flow, node, hits, judged, correctable(ts, run, flow, node))
        if back is not None:
            return back
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
        has_value(ts, run, node, n) for n in node.required)
    if node.question is not None and first_ask and not run.staying:
        if ts.message is not None and ts.judgement.asks and ts.speaker is None and not ts.spoke:
            # the customer asked something: answer first, the fixed question follows in Settle
            ts.speaker = SpeakRequest(run.id, node.id, tuple(asking), then_ask=question_text(ts, run, node))
            return Pause("speak")
        ts.say(question_text(ts, run, node), kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        for name in asking:
            run.asked[name] = run.asked.get(name, 0) + 1
        ts.outcome(run, code="asked-fixed", kind="collect", node_id=node.id)
        return ASKING
    if ts.speaker is None and not ts.spoke:
        ts.speaker = SpeakRequest(run.id, node.id, tuple(asking))
        return Pause("speak")
    return ASKING
