"""The turn's repair patterns: cancel, chitchat, completed, skip question, continue interrupted,
and the answer to a clarification (see ``docs/repair.md``; the correction pattern lives with the
collect step, in :mod:`tether.engine.graph.corrections`, the clarifying question in
:mod:`tether.engine.turn.clarify`).

A message's repair intent is read before the understand call, from keywords
(:mod:`tether.engine.turn.repair_intents`: no call at all then), else from the understand call's
``intent`` section, else from the ``_intent`` of the collect step's extract call (applied after
the run phase, :func:`late_repair`). A handled message is not routed and is not an answer to the
step being asked: it never counts toward that step's ``max_turns``.

- **cancel**: the run asking at a collect step ends (``cancelled``), its collected fields are
  forgotten (the next task does not silently reuse them), the agent says ``Repair.cancelled``,
  and a task the message names starts, else the task it interrupted continues. A flow's
  ``on_cancel`` node runs instead of the built-in; a flow with ``cancellable=False`` says
  ``Repair.not_cancellable`` and asks again.
- **chitchat**: ``Repair.thanks_reply``, ``chitchat_reply``, ``bot_reply`` or ``small_talk_reply``; then the step
  being asked asks again. With no task under way, nothing starts, but for the session's first
  message (the agent has said nothing yet): then the agent's opening follows the reply (its
  catch-all flow starts and asks, not reading the message). A step the model phrases answers
  small talk in its own speak call, and that ask is not counted.
- **completed**: with no task under way (nobody asking, or only a catch-all flow asking its
  first question: the agent's opening), ``Repair.completed_reply``; the session completes when
  ``Repair.complete_session``.
- **skip**: the flow's ``on_skip`` node, else the run escalates to a person (who is told so).
- **continue interrupted**: when a run ended this turn and nobody is asking, the most recently
  suspended run says ``Repair.resume`` (not a catch-all flow's opening: it is not a task) and asks
  its pending question again, in the same turn, with its own values
  (:mod:`tether.engine.graph.interrupted`: a detour does not change them).
- **clarified**: the message names one of the flows a clarification offered: it starts.

At an agent step, cancel, chitchat and completed (a message made only of closing phrases) apply
too, without running the step's model loop (:func:`_at_agent_step`).
"""

from __future__ import annotations

import re

from tether.engine.core.pauses import Static
from tether.engine.core.session import Run
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.collect_fields import (
    ask_text,
    missing,
    pending,
    question_text,
    resolver_frame,
    started_by_catch_all,
)
from tether.engine.graph.conditions import holds
from tether.engine.graph.interrupted import restore_values
from tether.engine.graph.moves import finish
from tether.engine.step.memory import append
from tether.engine.turn.keys import message_key
from tether.engine.turn.keywords import keyword_scores
from tether.engine.turn.repair_intents import keyword_intent, small_talk_reply
from tether.engine.turn.route import ROUTE_MIN_SCORE, route_to
from tether.engine.turn.run_phase import keep_asking, move_floor, resume_suspended
from tether.engine.turn.understand import message_trigger, passing_catch_all, repeat_allows
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Node
from tether.flow.repair import content_words, phrase_in, task_name
from tether.flow.resolvers import HEDGES, JsonPath, WholeMessage
from tether.flow.steps import AgentNode
from tether.flow.transitions import Escalate
from tether.flow.yes_no import read_yes_no
from tether.templating import fill_names

__all__ = ["clarified_choice", "continue_interrupted", "handle_repair", "keyword_repair", "late_repair",
           "reask_after_detour"]


def _step_at(ts: TurnState, run: Run | None) -> Node | None:
    flow = ts.agent.flows_by_id.get(run.flow) if run is not None else None
    return flow.by_id.get(run.node or "") if flow is not None and run is not None else None


def _asking_node(ts: TurnState, run: Run | None) -> Collect | None:
    node = _step_at(ts, run)
    return node if isinstance(node, Collect) else None


def _opening(ts: TurnState, run: Run | None) -> bool:
    """``run`` is a catch-all flow's that still asks its first question with nothing collected (the
    agent's opening: "what would you like to do?"): no task is under way yet."""
    node = _asking_node(ts, run)
    if run is None or node is None or set(run.visits) != {node.id}:
        return False
    flow = ts.agent.flows_by_id[run.flow]
    return message_trigger(flow, catch_all=True) is not None and len(missing(ts, run, node)) == len(node.fields)


def keyword_repair(ts: TurnState, asker: Run | None) -> str | None:
    """The repair intent the message's keywords carry (no model), when a pattern may apply: with a
    run asking at a collect step or an agent step, or with nobody asking."""
    node = _step_at(ts, asker)
    if asker is not None and not isinstance(node, Collect | AgentNode):
        return None  # a reply holds its own conversation
    intent = keyword_intent(ts.agent.repair, ts.message_text, task_under_way=asker is not None,
                            agent_step=isinstance(node, AgentNode) and not asker.staying if asker else False)
    if intent == "chitchat" and asker is not None and isinstance(node, Collect) and _reads_an_answer(ts, asker, node):
        return None  # "perfect" at a yes/no question is its yes, not thanks
    if intent == "chitchat" and isinstance(node, AgentNode) and read_yes_no(ts.message_text) and _asked(ts):
        return None  # "perfect" after an agent step's question: its model hears the answer
    if intent is None and asker is not None and phrase_in(ts.message_text, ts.agent.repair.switch_markers) \
            and ts.agent.repair.on("cancel") and not _opening(ts, asker) \
            and _named_task(ts, None, exclude=asker.flow) is not None:
        return "cancel"  # "actually, change the address instead": the refund is dropped, not resumed later
    if intent == "cancel" and _opening(ts, asker):
        return None  # nothing under way to cancel: "I want to cancel my order" at the opening is routed
    if intent == "skip" and isinstance(node, Collect) and asker is not None and _answers_anyway(ts, asker, node):
        return None  # "I don't know, it just stopped working" answers a free-text step
    if intent in (None, "chitchat") and asker is not None and _opening(ts, asker) \
            and keyword_intent(ts.agent.repair, ts.message_text, task_under_way=False) == "completed":
        return "completed"  # "that's all" at the opening question
    return intent


def _asked(ts: TurnState) -> bool:
    """The agent's last message asked a question."""
    return _last_question(ts) is not None


def _last_question(ts: TurnState) -> str | None:
    """The question the agent's last message asked: its last paragraph (without the small talk
    before it) when that ends with a question mark, else the paragraph from its first question
    on ("Welcome! Which dates would you like? Check-in and check-out: ..." asks "Which dates would
    you like? Check-in and check-out: ..."); None when it asked none."""
    said = next((m.text for m in reversed(ts.session.messages) if m.role == "assistant"), "").rstrip()
    last = said.split("\n\n")[-1]
    if last.endswith("?"):
        return last
    sentences = re.split(r"(?<=[.!?])\s+", last)
    first = next((i for i, sentence in enumerate(sentences) if sentence.endswith("?")), None)
    return " ".join(sentences[first:]) if first is not None else None


def _reads_an_answer(ts: TurnState, run: Run, node: Collect) -> bool:
    """A resolver of the step reads a value in the message (not a whole-message one: it takes
    any text, small talk too)."""
    frame = resolver_frame(ts, run)
    return any(not isinstance(r, WholeMessage | JsonPath) and r.resolve(ts.message_text, frame).status == "hit"
               for r in node.resolvers)


def _answers_anyway(ts: TurnState, run: Run, node: Collect) -> bool:
    """A message with a skip phrase still answers the step: one of its resolvers reads a value, or
    the step takes free text and the message says two words of its own besides the phrase."""
    if _reads_an_answer(ts, run, node):
        return True
    if not any(isinstance(r, WholeMessage) for r in node.resolvers):
        return False
    said = {w for phrase in ts.agent.repair.skip_phrases for w in content_words(phrase)}
    return len(content_words(ts.message_text) - said - HEDGES) >= 2


def handle_repair(ts: TurnState, asker: Run | None, intent: str | None, scores: dict[str, float] | None = None) -> bool:
    """Apply a repair intent; True when the message is handled (Decide does not route it).
    ``scores``: the flows' scores for the message (the understand call's), else keywords decide
    where a cancel that names another task goes."""
    if intent is None:
        return False
    step = _step_at(ts, asker)
    if asker is not None and isinstance(step, AgentNode) and not asker.staying:
        return _at_agent_step(ts, asker, step, intent, scores)
    node = _asking_node(ts, asker)
    if asker is not None and (node is None or asker.staying):
        return False  # a reply, a run staying on its step: they hold their own conversation
    if intent == "chitchat" and node is not None and node.phrased_by_model and ts.has_model(node.model):
        ts.small_talk = True  # the step's own speak call answers it and asks again; that ask is not counted
        return False
    if intent == "cancel" and asker is not None:
        _cancel(ts, asker, scores)
    elif intent == "cancel" and _nothing_to_cancel(ts, scores):
        _say(ts, "cancel", ts.agent.repair.nothing_to_cancel)
    elif intent == "chitchat":
        _say(ts, "chitchat", small_talk_reply(ts.agent.repair, ts.message_text))
        if asker is not None:
            keep_asking(ts, asker)
        elif ts.session.last_assistant_at is None:
            _open(ts)
    elif intent == "skip" and asker is not None and node is not None:
        _skip(ts, asker, node)
    elif intent == "completed" and (asker is None or _opening(ts, asker)):
        if asker is not None:  # "that's all" at the opening: it ends, and so may the session
            finish(ts, asker, ts.agent.flows_by_id[asker.flow], "completed")
        _say(ts, "completed", ts.agent.repair.completed_reply)
        if ts.agent.repair.complete_session:
            ts.session.status = "completed"
    else:
        return False
    ts.repaired = intent
    ts.outcome(asker, code=f"repair-{intent}", kind="collect", node_id=asker.node if asker else None)
    return True


def _nothing_to_cancel(ts: TurnState, scores: dict[str, float] | None) -> bool:
    """A cancel with nobody asking, after the agent has spoken (a first "never mind" gets the
    agent's opening): no run is live (none is suspended, none waits) and the message names no
    task a trigger starts ("cancel my order" is routed)."""
    return ts.session.last_assistant_at is not None and not ts.session.runs \
        and _named_task(ts, scores, exclude="") is None


def _open(ts: TurnState) -> None:
    """Small talk is the session's first message ("how are you?"): the agent's opening follows the
    reply. Its catch-all flow starts, and its first step asks (a collect's ``question``) without
    reading the message, which was small talk, not an answer."""
    found = passing_catch_all(ts)
    run = route_to(ts, found[0], catch_all=True) if found is not None else None
    if run is not None:
        ts.consumed_by[run.id] = "repair"


def _at_agent_step(ts: TurnState, run: Run, node: AgentNode, intent: str, scores: dict[str, float] | None) -> bool:
    """A repair intent at an agent step (seed 004): cancel ends the step's run and says so;
    small talk gets its short reply, then the step's last question again when its last message
    asked one, and the step goes on (its model hears the next message, and both lines join the
    step's memory); a closing ends the run with the closing reply. Neither runs the step's model
    loop: no call."""
    repair = ts.agent.repair
    if intent == "cancel":
        _cancel(ts, run, scores)
    elif intent == "chitchat":
        question = _last_question(ts)  # the step's question, asked again after the reply
        text = "\n\n".join(part for part in (small_talk_reply(repair, ts.message_text), question) if part)
        _say(ts, "chitchat", text)
        append(ts, node.namespace, "user", ts.message_text, step=node.id)
        if text:
            append(ts, node.namespace, "assistant", text, step=node.id)
        keep_asking(ts, run)
    elif intent == "completed":
        finish(ts, run, ts.agent.flows_by_id[run.flow], "completed")
        _say(ts, "completed", repair.completed_reply)
        if repair.complete_session:
            ts.session.status = "completed"
    else:
        return False  # "I don't know": the step's model hears it as an answer
    ts.repaired = intent
    ts.outcome(run, code=f"repair-{intent}", kind="agent", node_id=node.id)
    return True


async def late_repair(ts: TurnState) -> None:
    """Apply the repair intent a collect step's extract call reported (it stopped without asking):
    the pattern, else the step asks again; then the runs move on."""
    if ts.late_intent is None:
        return
    run_id, intent = ts.late_intent
    ts.late_intent = None
    run = ts.run(run_id)
    if run is None:
        return
    if intent in ("cancel", "completed") and started_by_catch_all(ts, run):
        # the message named no task: the run its catch-all started goes, and the message is answered as such
        finish(ts, run, ts.agent.flows_by_id[run.flow], "cancelled" if intent == "cancel" else "completed")
        repair = ts.agent.repair
        _say(ts, intent, repair.nothing_to_cancel if intent == "cancel" else repair.completed_reply)
        if intent == "completed" and repair.complete_session:
            ts.session.status = "completed"
        ts.repaired = intent
    elif not handle_repair(ts, run, intent):
        keep_asking(ts, run)
    await move_floor(ts)


def _say(ts: TurnState, pattern: str, text: str, *, flow: Flow | None = None) -> None:
    if not text:  # a greeting gets no small-talk line: what follows (the opening, the question) answers it
        return
    text = fill_names(text, {"task": task_name(flow)}) if flow is not None else text
    ts.say(text, kind="verbatim", key=f"repair:{pattern}:{message_key(ts)}")


def _skip(ts: TurnState, run: Run, node: Collect) -> None:
    """The customer cannot answer the step: the flow's ``on_skip`` node, else a person takes over
    (the run escalates, and the customer is told: see the cannot-handle pattern)."""
    flow = ts.agent.flows_by_id[run.flow]
    keep_asking(ts, run)
    target = flow.on_skip if flow.on_skip is not None else \
        Escalate(f"the customer cannot answer {', '.join(missing(ts, run, node)) or node.id} at {node.id!r}")
    ts.pending[run.id] = Static(target)


def _cancel(ts: TurnState, run: Run, scores: dict[str, float] | None) -> None:
    flow = ts.agent.flows_by_id[run.flow]
    if not flow.cancellable:
        _say(ts, "cancel", ts.agent.repair.not_cancellable, flow=flow)
        keep_asking(ts, run)
        return
    if flow.on_cancel is not None:  # the flow's own cancel step
        keep_asking(ts, run)
        ts.pending[run.id] = Static(flow.on_cancel)
        return
    for node in flow.nodes:  # what this task collected is not silently reused by the next one
        if isinstance(node, AgentNode) and node.memory is None:
            ts.session.memory.pop(node.namespace, None)  # an agent step's own memory (a shared one is kept)
        if isinstance(node, Collect):
            for name in node.fields:
                field = ts.agent.fields.get(name)
                if field is None or field.reuse != "confirm":  # a confirmed reuse asks first: not silent
                    ts.session.data.pop(name, None)
    finish(ts, run, flow, "cancelled")
    _say(ts, "cancel", ts.agent.repair.cancelled, flow=flow)
    switch = _named_task(ts, scores if scores is not None else None, exclude=flow.id)
    if switch is not None:  # "never mind, I want a refund instead": that task starts, reading the message
        route_to(ts, switch, catch_all=False)
        return
    resumed = continue_interrupted(ts)
    if resumed is not None:
        keep_asking(ts, resumed)


def _named_task(ts: TurnState, scores: dict[str, float] | None, *, exclude: str) -> Flow | None:
    """A flow the message asks for besides the cancel (a trigger's phrases, or the understand
    call's score at the routing threshold); never a catch-all."""
    eligible = []
    for flow in ts.agent.flows:
        found = message_trigger(flow, catch_all=False)
        if flow.id == exclude or found is None or not found[1].phrases:
            continue
        if holds(ts, found[1].if_, None, flow=flow.id) and repeat_allows(ts, flow, found[1].repeat):
            eligible.append(flow)
    if scores is None:
        scores = keyword_scores(ts.message_text, eligible).flows
    best = max(eligible, key=lambda f: scores.get(f.id, 0.0), default=None)
    return best if best is not None and scores.get(best.id, 0.0) >= ROUTE_MIN_SCORE else None


def continue_interrupted(ts: TurnState) -> Run | None:
    """Nobody is asking: the most recently suspended run resumes and says ``Repair.resume`` (its
    step asks again when it moves). None when no run resumes."""
    run = resume_suspended(ts)
    if run is None:
        return None
    if ts.agent.repair.on("continue") and not _opening(ts, run):  # the opening is not a task to go back to
        _say(ts, "continue", ts.agent.repair.resume, flow=ts.agent.flows_by_id.get(run.flow))
    return run


def reask_after_detour(ts: TurnState, *, spoken: bool) -> Run | None:
    """A message turn in which a detour ran to its end: the task it interrupted (the run still
    asking that neither answered nor read the message, else the most recently suspended run) says
    ``Repair.resume`` and asks its pending question again. Before the speak phase (``spoken``
    False) and with nobody queued to speak, a step the model phrases becomes the turn's speaker;
    otherwise the question is the step's fixed text."""
    if not ts.ended or ts.message is None or not ts.agent.repair.on("continue") or ts.repaired is not None \
            or ts.handoff is not None or ts.session.status != "running" or (not spoken and ts.speaker is not None):
        return None
    asking = [r for r in ts.session.runs if r.status == "asking"]
    if asking:
        run = asking[-1]
        if run.id in ts.answered_by or run.id in ts.consumed_by or ts.speaker is not None:
            return None
    else:
        suspended = [r for r in ts.session.runs if r.status == "suspended"]
        if not suspended:
            return None
        run = max(suspended, key=lambda r: (r.suspended_at or r.started_at))
    node = _asking_node(ts, run)
    still = missing(ts, run, node) if node is not None else []
    if node is None or not still or _opening(ts, run):
        return None  # a catch-all's first question is its opening ("what would you like to do?"): not a task
    if not asking:
        resume_suspended(ts)
    restore_values(ts, run)
    ts.repaired = "continue"
    _say(ts, "continue", ts.agent.repair.resume, flow=ts.agent.flows_by_id.get(run.flow))
    asks = pending(ts, run, node)
    if not spoken and not ts.spoke and node.phrased_by_model and asks and ts.has_model(node.model):
        ts.speaker = SpeakRequest(run.id, node.id, tuple(asks))
        return run
    question = question_text(ts, run, node) if node.phrased_by_model and node.question else \
        ask_text(ts, run, node, still)
    ts.say(question, kind="verbatim", key=f"repair:continue-ask:{message_key(ts)}", run=run, node_id=node.id)
    return run


_ORDINALS = {"first": 0, "1": 0, "second": 1, "2": 1, "third": 2, "3": 2, "last": -1}


def clarified_choice(ts: TurnState) -> bool:
    """The message answers a clarification ("Do you want to A or B?"): the option it names (a word
    only that option's description, name or phrases have, or its place: "the second one") starts.
    The question is asked once: whatever the message says, the next one is routed as usual."""
    options = [ts.agent.flows_by_id[f] for f in ts.session.clarifying if f in ts.agent.flows_by_id]
    ts.session.clarifying = []
    if len(options) < 2:
        return False
    said = content_words(ts.message_text) | {w for w in ts.message_text.lower().split() if w in _ORDINALS}
    vocab = {flow.id: content_words(" ".join([flow.id.replace("_", " "), task_name(flow), flow.description,
                                              *_phrases(flow)])) for flow in options}
    named = [flow for flow in options if said & (vocab[flow.id] - set().union(*(vocab[o.id] for o in options
                                                                                 if o is not flow)))]
    placed = {_ORDINALS[w] % len(options) for w in said if w in _ORDINALS and _ORDINALS[w] < len(options)}
    if len(named) != 1 and len(placed) == 1:
        named = [options[placed.pop()]]
    if len(named) != 1:
        return False
    run = route_to(ts, named[0], catch_all=False)
    if run is None:
        return False
    ts.floor_taken = True
    ts.outcome(run, code="clarified", kind="collect", detail=named[0].id)
    return True


def _phrases(flow: Flow) -> list[str]:
    found = message_trigger(flow, catch_all=False)
    return [p for p in found[1].phrases if not p.startswith("!")] if found is not None else []
