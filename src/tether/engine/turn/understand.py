"""Phase 3, Understand: at most one ``understand`` call, and only when there is something to judge.

Code first works out what there is to judge: candidate flows to score (the floor's flow plus
every message flow with phrases whose ``if_`` holds and whose ``repeat`` allows a start),
mentions, the asking node's ``when`` branches, unknown ``anywhere`` fields the floor's or a
candidate's flow lists, and the pending fields of a deterministic collect node that will read
this message. The asking step's own fields ride in the call too (so one message can complete
several steps and the next step asks in the same turn), but on their own they are not worth a
call: that step's speak call would read them. Then the zero-call shortcuts. Otherwise one call
with one envelope holding only the sections with something to judge, every property required and
nullable. A reply with no usable JSON is an empty judgement (the call still counts); a provider
failure raises. The reply is held to the schema that was sent (:mod:`tether.engine.graph.reply_check`):
an invalid or unoffered entry is dropped with a warning, the rest of the judgement stands.
When the window will soon fold, the call also writes its summary (a ``summary`` section, see
:mod:`tether.engine.turn.compaction`), so the summary costs no call of its own.

The request keeps its stable text first (:mod:`tether.engine.graph.prompt_parts`): identity, the
judge's standing orders and the flow catalogue in ``system``; what to judge this turn in
``instructions``. The customer's message is the conversation's last user message, not quoted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.engine.core.judgement import Judgement
from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.engine.graph.collect_fields import missing_names
from tether.engine.graph.conditions import holds
from tether.engine.graph.corrections import correctable
from tether.engine.graph.identity import identity
from tether.engine.graph.prompt_parts import catalogue
from tether.engine.graph.reply_check import check_reply, coerce_field_values, report_dropped
from tether.engine.graph.reuse import confirming
from tether.engine.graph.starts import anchor_of
from tether.engine.turn.compaction import SUMMARY_ORDER
from tether.engine.turn.keywords import keyword_scores
from tether.engine.turn.repair_intents import INTENTS
from tether.flow.durations import parse_duration
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Reply
from tether.flow.triggers import MentionTrigger, MessageTrigger
from tether.models.parsing import ReplyParseError, extract_json
from tether.models.types import ChatMessage, ModelRequest, ResponseFormat

__all__ = ["Judgeables", "find_judgeables", "score_sheet", "understand"]

_SAFE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
JUDGE_ORDERS = (
    "You judge the customer's latest message (the last user message of the conversation) for a flow "
    "engine; you never reply to the customer. Reply with one JSON object with exactly the keys of the "
    "schema; each section, when the schema has it, means:\n"
    "- flows: score 0-100 how well the message fits each flow it lists (see the catalogue below);\n"
    "- asks: true when the message asks a question that needs an answer;\n"
    "- intent: cancel (the customer stops the task under way), chitchat (small talk only, such as thanks or "
    "how are you), completed (they need nothing more), skip (they cannot answer what they were asked); "
    "null for anything else;\n"
    "- mentions: true when the message mentions what the task lists under that key;\n"
    "- branches: true when the statement the task gives under that key is true of the message;\n"
    "- fields: the values the customer gave for these fields (null when not given);\n"
    "- collect: the values the customer gave for the step being answered (null when not given; never guess); "
    "a field the task lists as correctable takes a value only when the message changes the one given before.\n"
    "- summary: " + SUMMARY_ORDER
)
_TRUE = {"true", "yes", "sim", "1"}
_FALSE = {"false", "no", "não", "nao", "0"}


@dataclass
class Judgeables:
    """What the understand call would judge."""

    candidates: list[Flow] = field(default_factory=list)
    lone: Flow | None = None
    mentions: list[Flow] = field(default_factory=list)
    branches: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    fields: list[str] = field(default_factory=list)
    collect: dict[str, tuple[str, str, list[str]]] = field(default_factory=dict)
    catch_all: Flow | None = None
    asks: bool = False
    """A fixed text (a fixed question, a deterministic ask) is due from the node that reads this
    message: judge whether the message asks something, so it is answered before that text."""
    own: set[str] = field(default_factory=set)
    """Fields a step's own speak call would read: they ride in a call, but are not worth one."""
    intents: tuple[str, ...] = ()
    """The repair intents the call may report (the same list on every call: a stable schema)."""
    corrections: dict[str, list[str]] = field(default_factory=dict)
    """Per ``collect`` alias, the fields collected before that the customer may correct there."""

    @property
    def worth_a_call(self) -> bool:
        return bool(self.candidates or self.mentions or self.branches
                    or any(name not in self.own for name in self.fields))


def repeat_allows(ts: TurnState, flow: Flow, repeat: Any) -> bool:
    """Would the trigger's ``repeat`` allow a start now (ignoring ``if_``)?"""
    if repeat == "always":
        return True
    claim = ts.session.claims.get(f"{flow.id}:{anchor_of(ts, flow)}:")
    if claim is None:
        return True
    if isinstance(repeat, Mapping):
        return ts.now - claim.at >= parse_duration(repeat["cooldown"])
    return False


def _live_run(ts: TurnState, flow: Flow) -> Run | None:
    return next((r for r in ts.session.runs if r.flow == flow.id), None)


def message_trigger(flow: Flow, *, catch_all: bool) -> tuple[int, MessageTrigger] | None:
    for index, trigger in enumerate(flow.on):
        if isinstance(trigger, MessageTrigger) and trigger.catch_all == catch_all:
            return index, trigger
    return None


def passing_catch_all(ts: TurnState) -> tuple[Flow, int, MessageTrigger] | None:
    """The first catch-all flow whose ``if_`` holds and whose ``repeat`` allows (or that is live)."""
    for flow in ts.agent.flows:
        found = message_trigger(flow, catch_all=True)
        if found is None:
            continue
        index, trigger = found
        if holds(ts, trigger.if_, None, flow=flow.id) and (repeat_allows(ts, flow, trigger.repeat)
                                                            or _live_run(ts, flow)):
            return flow, index, trigger
    return None


def _flow_fields(flow: Flow) -> list[str]:
    names = list(flow.collect)
    for node in flow.nodes:
        if isinstance(node, Collect):
            names.extend(node.fields)
    return names


def find_judgeables(ts: TurnState, floor: Run | None) -> Judgeables:
    """Work out what there is to judge for this message."""
    found = Judgeables(intents=tuple(i for i in INTENTS if ts.agent.repair.on(i)))
    floor_flow = ts.agent.flows_by_id.get(floor.flow) if floor is not None else None
    eligible: list[Flow] = []
    for flow in ts.agent.flows:
        scored = message_trigger(flow, catch_all=False)
        if scored is None or (floor_flow is not None and flow.id == floor_flow.id):
            continue
        if holds(ts, scored[1].if_, None, flow=flow.id) and (repeat_allows(ts, flow, scored[1].repeat)
                                                              or _live_run(ts, flow)):
            eligible.append(flow)
    catch_all = passing_catch_all(ts) if floor is None else None
    found.catch_all = catch_all[0] if catch_all else None
    if floor_flow is not None:
        if eligible:
            found.candidates = [floor_flow, *eligible]
    elif len(eligible) == 1 and catch_all is None and ts.agent.idle is None:
        found.lone = eligible[0]
    elif eligible:
        found.candidates = eligible
    for flow in ts.agent.flows:
        for trigger in flow.on:
            if isinstance(trigger, MentionTrigger) and trigger.phrases and repeat_allows(ts, flow, trigger.repeat):
                found.mentions.append(flow)
                break
    node = floor_flow.by_id.get(floor.node or "") if floor_flow is not None and floor is not None else None
    if floor is not None and isinstance(node, Reply | Collect):
        for index, branch_ in enumerate(node.branches):
            if branch_.when:
                found.branches[f"q{len(found.branches) + 1}"] = (floor.id, node.id, index)
    if floor is not None and isinstance(node, Collect) and not floor.staying and (
            not node.phrased_by_model or (node.question is not None and not any(floor.asked.values()))):
        found.asks = True  # a fixed text is due (a confirm step re-asks its yes/no): answer a question first
    if floor is not None and isinstance(node, Reply) and node.response is not None and not floor.staying:
        found.asks = True  # a fixed question the run is waiting on
    if floor is not None and isinstance(node, Collect):
        if node.phrased_by_model:
            found.own.update(node.fields)  # its own speak call would read them: they ride, not worth a call
            fixable = correctable(ts, floor, floor_flow, node)
            if fixable:  # its speak call does not offer the fields collected before: this call does
                alias = f"c{len(found.collect) + 1}"
                found.collect[alias] = (floor.id, node.id, fixable)
                found.corrections[alias] = fixable
        else:
            _add_collect(ts, found, floor.id, node, floor)
    taker = found.catch_all or found.lone if floor is None else None
    if taker is not None:
        first = taker.by_id[taker.start]
        if _opens_with_fixed_text(taker):
            found.asks = True  # the opening message may be a question: answer it before that text
        if isinstance(first, Collect):
            if first.phrased_by_model and first.question is None:
                found.own.update(first.fields)  # read by that step's own speak call
            elif not first.phrased_by_model:
                _add_collect(ts, found, taker.id, first, None)
    if floor is None and any(_opens_with_fixed_text(f) for f in (*found.candidates, found.lone) if f is not None):
        found.asks = True  # a question that also starts a flow is answered before its first question
    sources = [f for f in (floor_flow, found.catch_all, *found.candidates, found.lone) if f is not None]
    collected = {name for _, _, names in found.collect.values() for name in names}
    for flow in sources:
        for name in _flow_fields(flow):
            definition = ts.agent.fields.get(name)
            if (definition is not None and definition.extract_mode == "anywhere" and name not in collected
                    and not ts.answered(name)
                    and name not in found.fields):
                found.fields.append(name)
    return found


def _opens_with_fixed_text(flow: Flow) -> bool:
    """The flow's first step is a collect that asks a fixed text (its ``ask``, or a fixed question)."""
    first = flow.by_id.get(flow.start)
    return isinstance(first, Collect) and (first.question is not None or not first.phrased_by_model)


def _add_collect(ts: TurnState, found: Judgeables, owner: str, node: Collect, run: Run | None) -> None:
    names = missing_names(ts, run, node)
    if run is not None:  # "the same order A-1001?": the answer may name another
        names += [n for n in confirming(run, node) if n not in names]
    fixable = [n for n in correctable(ts, run, ts.agent.flows_by_id.get(run.flow), node) if n not in names] \
        if run is not None else []
    if names:
        alias = f"c{len(found.collect) + 1}"
        found.collect[alias] = (owner, node.id, names + fixable)
        if fixable:
            found.corrections[alias] = fixable


def score_sheet(ts: TurnState, found: Judgeables) -> list[Flow]:
    """The flows the ``flows`` section scores: every flow a message can start (trigger phrases or a
    catch-all), in the agent's order, then a floor flow no message starts. The same sheet on every
    call, wherever the floor is and whichever flows may start now, so the schema text keeps its
    prefix for a provider's prompt cache; only the candidates' scores are read."""
    sheet = [f for f in ts.agent.flows if any(isinstance(t, MessageTrigger) for t in f.on)]
    return sheet + [f for f in found.candidates if f not in sheet]


def _key(name: str, aliases: dict[str, str], prefix: str) -> str:
    if _SAFE_KEY.match(name):
        return name
    alias = f"{prefix}{len(aliases) + 1}"
    aliases[alias] = name
    return alias


def _envelope(ts: TurnState, found: Judgeables) -> tuple[dict[str, Any], dict[str, dict[str, str]], str]:
    """The reply schema and the per-turn task text. Sections go from the most stable to the most
    step-dependent (flows, intent, asks, mentions, branches, fields, collect), so the schema text shares a
    long prefix with the previous call's; what each section means is in the stable
    :data:`JUDGE_ORDERS`, and the task text carries only what the schema cannot (mention phrases,
    branch statements, the names behind aliased keys)."""
    from tether.engine.graph.extract import collect_field_schema, dated

    properties: dict[str, Any] = {}
    aliases: dict[str, dict[str, str]] = {"flows": {}, "mentions": {}, "fields": {}}
    lines: dict[str, list[str]] = {}

    def section(name: str, props: dict[str, Any]) -> None:
        properties[name] = {"type": "object", "properties": props, "required": list(props),
                            "additionalProperties": False}

    if found.candidates:
        props = {}
        for flow in score_sheet(ts, found):
            key = _key(flow.id, aliases["flows"], "f")
            props[key] = {"type": ["integer", "null"], "minimum": 0, "maximum": 100}
            if key != flow.id:
                lines.setdefault("flows", []).append(f"- {key}: flow {flow.id}")
        section("flows", props)
    if found.intents:  # the same list on every call: it keeps the prefix
        properties["intent"] = {"type": ["string", "null"], "enum": [*found.intents, None]}
    if found.asks:
        properties["asks"] = {"type": ["boolean", "null"]}
    if found.mentions:
        props = {}
        extract: dict[str, Any] = {}
        for flow in found.mentions:
            key = _key(flow.id, aliases["mentions"], "m")
            props[key] = {"type": ["boolean", "null"]}
            mention = next(t for t in flow.on if isinstance(t, MentionTrigger))
            yes = [p for p in mention.phrases if not p.startswith("!")]
            never = [p[1:] for p in mention.phrases if p.startswith("!") and len(p) > 1]
            unless = f" (does not count when: {'; '.join(never)})" if never else ""
            lines.setdefault("mentions", []).append(f"- {key}: {'; '.join(yes)}{unless}")
            if mention.extract:
                extract[key] = {"type": "object", "additionalProperties": False, "required": list(mention.extract),
                                "properties": {n: {"type": [str(d), "null"]} if isinstance(d, str) else dict(d)
                                               for n, d in mention.extract.items()}}
        section("mentions", props)
        if extract:
            section("extract", extract)
    if found.branches:
        for alias, (run_id, node_id, index) in found.branches.items():
            owner = ts.run(run_id)
            owner_flow = ts.agent.flows_by_id.get(owner.flow) if owner is not None else None
            branch_node = owner_flow.by_id.get(node_id) if owner_flow is not None else None
            text = branch_node.branches[index].when if isinstance(branch_node, Reply | Collect) else ""
            lines.setdefault("branches", []).append(f"- {alias}: {text}")
        section("branches", {alias: {"type": ["boolean", "null"]} for alias in found.branches})
    if found.fields:
        props = {}
        for name in found.fields:
            key = _key(name, aliases["fields"], "v")
            props[key] = dated(ts, ts.agent.fields[name].wire_schema())
            if key != name:
                lines.setdefault("fields", []).append(f"- {key}: {ts.agent.fields[name].description or name}")
        section("fields", props)
    if found.collect:
        props = {}
        for alias, (owner_id, node_id, names) in found.collect.items():
            owner_run = ts.run(owner_id)
            collect_flow = ts.agent.flows_by_id.get(owner_run.flow if owner_run is not None else owner_id)
            node = collect_flow.by_id.get(node_id) if collect_flow is not None else None
            assert isinstance(node, Collect)
            fixable = found.corrections.get(alias, [])
            props[alias] = {"type": "object", "additionalProperties": False, "required": names,
                            "properties": {n: _bare(collect_field_schema(ts, node, n)) if n in fixable
                                           else collect_field_schema(ts, node, n) for n in names}}
            if alias in found.corrections:
                now = ", ".join(f"{n} (now {ts.session.data.get(n)!r})" for n in fixable)
                lines.setdefault("collect", []).append(f"- {alias} correctable: {now}")
        section("collect", props)
    if ts.fold_due:  # the window folds soon: this call writes the summary (last: the rest keeps its prefix)
        properties["summary"] = {"type": ["string", "null"]}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    task = "\n".join(f"{name}:\n" + "\n".join(entries) for name, entries in lines.items())
    return schema, aliases, task


def _bare(schema: dict[str, Any]) -> dict[str, Any]:
    """A correctable field's schema without its description (the task text names it): the
    step-dependent tail of the request stays short."""
    return {k: v for k, v in schema.items() if k != "description"}


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float):
        return max(0.0, min(100.0, float(value)))
    return None


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str | int) and str(value).strip().lower() in _TRUE:
        return True
    if isinstance(value, str | int) and str(value).strip().lower() in _FALSE:
        return False
    return None


def _parse(found: Judgeables, aliases: dict[str, dict[str, str]], data: Mapping[str, Any]) -> Judgement:
    judgement = Judgement(called=True)

    def section(name: str) -> Mapping[str, Any]:
        value = data.get(name)
        return value if isinstance(value, Mapping) else {}

    candidates = {flow.id for flow in found.candidates}
    for key, value in section("flows").items():
        flow_id = aliases["flows"].get(key, key)
        if flow_id in candidates and (score := _score(value)) is not None:
            judgement.flows[flow_id] = score
    for key, value in section("mentions").items():
        if (flag := _flag(value)) is not None:
            judgement.mentions[aliases["mentions"].get(key, key)] = flag
    for key, value in section("extract").items():
        if isinstance(value, Mapping):
            judgement.extract[aliases["mentions"].get(key, key)] = {k: v for k, v in value.items() if v is not None}
    for alias, value in section("branches").items():
        if alias in found.branches and (flag := _flag(value)) is not None:
            judgement.branches[found.branches[alias]] = flag
    for key, value in section("fields").items():
        if value is not None and value != "":
            judgement.fields[aliases["fields"].get(key, key)] = value
    if found.asks:
        judgement.asks = _flag(data.get("asks"))
    if data.get("intent") in found.intents:
        judgement.intent = data["intent"]
    for alias, value in section("collect").items():
        if alias in found.collect and isinstance(value, Mapping):
            owner, node_id, names = found.collect[alias]
            # an explicit null is kept: it tells a free-text resolver the message is not this value
            judgement.collect[(owner, node_id)] = {k: None if v == "" else v for k, v in value.items() if k in names}
    return judgement


def judge_system(ts: TurnState) -> str:
    """The stable system text of every understand call of this agent."""
    return "\n\n".join([identity(ts), JUDGE_ORDERS, catalogue(ts.agent)])


async def understand(ts: TurnState, found: Judgeables) -> Judgement:
    """Make the understand call when there is something worth judging (else an empty judgement)."""
    if not found.worth_a_call:
        return Judgement()
    if not ts.has_model():  # no model: the flows' trigger phrases still route (by keywords)
        return keyword_scores(ts.message_text, found.candidates)
    model = ts.model(None, needed_for="understand")
    schema, aliases, task = _envelope(ts, found)
    request = ModelRequest(
        call="understand", system=judge_system(ts),
        instructions=task,
        messages=tuple(ChatMessage(m.role, m.content) for m in ts.history(None)),
        response_format=ResponseFormat("understand", schema))
    response = await ts.call(model, request)  # a provider failure raises: nothing ran, nothing is saved
    data: Any = response.data
    if data is None:
        try:
            data = extract_json(response.text)
        except ReplyParseError as exc:
            ts.log("warn", f"understand reply had no usable JSON ({exc}); treated as an empty judgement")
            data = {}
    if isinstance(data, Mapping) and isinstance(data.get("fields"), Mapping):
        data = {**data, "fields": coerce_field_values(ts, data["fields"], aliases["fields"])}
    # only what was offered, as the schema says: an invalid or unoffered entry is dropped, the rest stands
    kept, dropped = check_reply(data, schema, entry_depth=2, section_depths={"collect": 3})
    report_dropped(ts, "understand", dropped, fields_sections=("fields", "collect"))
    if ts.fold_due and isinstance(kept, Mapping) and isinstance(kept.get("summary"), str):
        ts.carried_summary = kept["summary"].strip() or None
    return _parse(found, aliases, kept if isinstance(kept, Mapping) else {})
