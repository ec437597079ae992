"""Phase 7, Settle: the one place the spoken result is applied.

Spoken: the message goes out as ``ai`` under the step's key; envelope fields are validated and
written; a collect step that is now complete takes its transition and the run keeps moving (a
talk step reached now waits for the next message); otherwise each pending field gets asked + 1.
A reply takes ``next(turn, state)``.

Deferred: a failure a wait can fix re-parks the step under ``run:node:visit:retry:<atMs>`` at
+1m, +5m, +15m, +1h, +6h, then the run ends failed; a failure it cannot fix ends the run at once.
"""

from __future__ import annotations

from datetime import timedelta

from tether.engine.core.events import ErrorEvent
from tether.engine.core.session import Run, WaitingOn
from tether.engine.core.state import SpeakRequest, TurnState
from tether.engine.graph.batching import hold
from tether.engine.graph.collect import complete
from tether.engine.graph.collect_fields import merge_values, missing, pending
from tether.engine.graph.conditions import holds
from tether.engine.graph.corrections import apply_corrections
from tether.engine.graph.degrade import user_code
from tether.engine.graph.dispatch import reply_next
from tether.engine.graph.moves import finish
from tether.engine.graph.runner import resume
from tether.engine.turn.keys import message_key
from tether.engine.turn.run_phase import resume_suspended
from tether.engine.turn.speak import SpeakResult, fallback_text
from tether.engine.turn.understand import repeat_allows
from tether.errors import ModelError
from tether.flow.durations import parse_duration
from tether.flow.flow import Flow
from tether.flow.nodes import Collect, Reply
from tether.flow.results import ReplyTurn
from tether.flow.transitions import Goto
from tether.flow.triggers import SilenceTrigger

__all__ = ["RETRY_LADDER", "bookkeeping", "provider_code", "settle"]

RETRY_LADDER = (timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1),
                timedelta(hours=6))

_KIND_CODES = {
    "aborted": "provider-unavailable", "timeout": "provider-unavailable", "network": "provider-unavailable",
    "overload": "provider-unavailable", "rate": "provider-unavailable", "unknown": "provider-unavailable",
    "quota": "provider-quota", "entitlement": "provider-auth", "auth": "provider-auth",
    "model": "provider-invalid", "invalid": "provider-invalid", "content": "provider-invalid",
    "context": "provider-context",
}


def provider_code(error: ModelError) -> str:
    """The outcome code for a provider failure kind."""
    return _KIND_CODES.get(error.kind, "provider-unavailable")


async def settle(ts: TurnState, request: SpeakRequest, result: SpeakResult) -> None:
    """Apply the speak result to its run (or the idle speaker)."""
    run = ts.run(request.run_id) if request.run_id else None
    if run is None:
        _settle_idle(ts, result)
        return
    flow = ts.agent.flows_by_id[run.flow]
    node = flow.by_id[run.node or ""]
    if result.no_model:
        ts.say(result.text, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        ts.outcome(run, code=None if result.fallback else "no-model", status="ok" if result.fallback else "skipped",
                   kind="talk", node_id=node.id)
        if result.fallback and isinstance(node, Reply):
            turn = ReplyTurn(result.text, "engine", {})
            hold(ts, run, result.covers, turn)  # a batched segment's fallbacks were said together
            await resume(ts, run, flow, user_code(flow, node, reply_next, ts, run, node, turn))
        return
    if result.error is not None and isinstance(node, Reply) and node.fallback is not None and not request.batch[1:]:
        _warn_unspoken(ts, run, flow, node.id, result.error, "its fallback was said")
        text = fallback_text(ts, run, node)  # what the author wrote for a reply no model says
        ts.say(text, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        ts.outcome(run, code=provider_code(result.error), kind="talk", node_id=node.id, detail="fallback")
        await resume(ts, run, flow, user_code(flow, node, reply_next, ts, run, node, ReplyTurn(text, "engine", {})))
        return
    if result.error is not None and request.then_ask is not None:
        # the answer to a side question could not be said: the step's own question still is, and its task goes on
        _warn_unspoken(ts, run, flow, node.id, result.error, "the step's question was asked without it")
        result.error, result.text, result.data = None, "", {}
    if result.error is not None:
        _defer(ts, run, flow, node.id, result.error)
        return
    if result.text:
        ts.say(result.text, kind="ai", key=ts.key(run, node.id), run=run, node_id=node.id)
    batched = request.batch if request.batch[:1] == (node.id,) and not result.interrupted else ()
    ts.outcome(run, kind="talk", node_id=node.id, llm_calls=result.calls,
               detail=f"batched: {', '.join(batched)}" if batched else None)
    if result.tool_data:
        ts.session.data.update(result.tool_data)
    if result.interrupted:
        run.status = "asking"  # barge-in: the same node runs again on the next message
        return
    if run.staying:
        run.visits[node.id] = run.visits.get(node.id, 0) + 1  # stays for the next message, one visit later
        run.status = "asking"
        return
    if isinstance(node, Collect):
        fixes = {k: v for k, v in result.data.items() if k in result.corrections}
        if fixes and (back := apply_corrections(ts, run, flow, node, fixes, source="model").back) is not None:
            await resume(ts, run, flow, Goto(back))  # what depended on the value runs again; the step's answer waits
            return
        values = {k: v for k, v in result.data.items() if k in request.fields}
        merge_values(ts, run, node, values, source="model", guard=True)
        if request.then_ask is not None and missing(ts, run, node):
            ts.say(request.then_ask, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
            for name in pending(ts, run, node):
                run.asked[name] = run.asked.get(name, 0) + 1
            ts.outcome(run, code="asked-fixed", kind="collect", node_id=node.id)
            run.status = "asking"
            return
        if not missing(ts, run, node) or not pending(ts, run, node):
            for name in missing(ts, run, node):
                ts.outcome(run, code="max-asks", status="skipped", kind="collect", node_id=node.id, detail=name)
            await resume(ts, run, flow, user_code(flow, node, complete, ts, run, node))
        else:
            if not (ts.small_talk and run.id == ts.floor):  # small talk answered is not an ask (repair)
                for name in pending(ts, run, node):
                    run.asked[name] = run.asked.get(name, 0) + 1
            run.status = "asking"
        return
    if isinstance(node, Reply) and request.then_ask is not None:  # the fixed question, asked again
        ts.say(request.then_ask, kind="verbatim", key=ts.key(run, node.id), run=run, node_id=node.id)
        await resume(ts, run, flow, reply_next(ts, run, node, ReplyTurn(request.then_ask, "engine", {})))
        return
    if isinstance(node, Reply):
        turn = ReplyTurn(result.text, "model", dict(result.data), tuple(result.tool_results))
        hold(ts, run, batched, turn)  # the segment's next members take this turn (engine.batching)
        await resume(ts, run, flow, user_code(flow, node, reply_next, ts, run, node, turn))


def _settle_idle(ts: TurnState, result: SpeakResult) -> None:
    key = f"idle:{_trigger_key(ts)}"
    if result.no_model:
        if result.text:
            ts.say(result.text, kind="verbatim", key=key)
        ts.outcome(None, code="no-model", status="skipped", kind="idle")
        return
    if result.error is not None:
        # The idle speaker has no step to re-park: nothing would ever answer this message, so the
        # failure is said (DESIGN §9), not deferred.
        message = f"the idle speaker could not reply: {result.error}"
        ts.outcome(None, code=provider_code(result.error), status="failed", kind="idle", detail=str(result.error))
        ts.emit(ErrorEvent(run_id=None, flow=None, at=ts.now, error=message))
        ts.log("error", message, code=result.error.code)
        ts.say(ts.agent.failure_reply, kind="verbatim", key=f"{key}:failure")
        return
    ts.say(result.text, kind="ai", key=key)
    ts.outcome(None, kind="idle", llm_calls=result.calls)


def _trigger_key(ts: TurnState) -> str:
    return message_key(ts)


def _defer(ts: TurnState, run: Run, flow: Flow, node_id: str, error: ModelError) -> None:
    code = provider_code(error)
    streak = 0
    for line in reversed(run.outcomes):
        if line.node_id != node_id:
            continue
        if line.status != "deferred":
            break
        streak += 1
    if error.retryable and streak < len(RETRY_LADDER):
        until = ts.now + RETRY_LADDER[streak]
        if error.reset_at is not None and error.reset_at > until:
            until = error.reset_at
        key = f"{ts.key(run, node_id)}:retry:{int(until.timestamp() * 1000)}"
        run.status = "waiting"
        run.waiting = WaitingOn(kind="retry", key=key, until=until, set_at=ts.now)
        ts.schedule_wake(key, until)
        ts.outcome(run, code=code, status="deferred", kind="talk", node_id=node_id, detail=str(error), until=until)
        return
    ts.outcome(run, code=code, status="failed", kind="talk", node_id=node_id, detail=str(error))
    _say_speak_failed(ts, run, flow, node_id, error)
    finish(ts, run, flow, "failed")


def _warn_unspoken(ts: TurnState, run: Run, flow: Flow, node_id: str, error: ModelError, instead: str) -> None:
    """A speak call failed where the author's own text could be said instead: a warning, not a
    deferral (the customer is not left in silence while a retry waits)."""
    ts.log("warn", f"flow {flow.id!r}, node {node_id!r}: the model could not speak ({error}); {instead}",
           code=error.code, flow=flow.id, node=node_id, run=run.id)


def _say_speak_failed(ts: TurnState, run: Run, flow: Flow, node_id: str, error: ModelError) -> None:
    """A speak failure no wait can fix ends the run (seed 003), loudly (DESIGN §9): an ``error``
    event, the session's error log, and the agent's failure reply instead of silence."""
    message = f"flow {flow.id!r}, node {node_id!r}: the reply could not be spoken: {error}"
    ts.emit(ErrorEvent(run_id=run.id, flow=flow.id, at=ts.now, node=node_id, error=message))
    ts.log("error", message, code=error.code, flow=flow.id, node=node_id, run=run.id)
    if ts.options.silence is None:
        ts.say(ts.agent.failure_reply, kind="verbatim", key=f"{ts.key(run, node_id)}:failure", run=run,
               node_id=node_id)


def bookkeeping(ts: TurnState) -> None:
    """The end of every turn: stamp ``last_assistant_at`` when anything went out, resume the most
    recently suspended run when nobody is asking, and arm silence wakes."""
    session = ts.session
    previous = session.last_assistant_at
    if ts.messages or ts.answered_by:
        session.last_assistant_at = ts.now
    resume_suspended(ts)
    spoke_last = session.last_assistant_at is not None and (
        session.last_user_at is None or session.last_user_at <= session.last_assistant_at)
    if session.last_assistant_at == previous or not spoke_last or session.last_assistant_at is None:
        return
    for flow in ts.agent.flows:
        for trigger in flow.on:
            if not isinstance(trigger, SilenceTrigger):
                continue
            if not holds(ts, trigger.if_, None, flow=flow.id) or not repeat_allows(ts, flow, trigger.repeat):
                break
            at = session.last_assistant_at + parse_duration(trigger.after)
            if trigger.business_hours and ts.agent.business_hours is not None:
                at = ts.agent.business_hours(at, {"context": ts.options.context})
            ms = int(session.last_assistant_at.timestamp() * 1000)
            replaces = f"silence:{flow.id}:{session.id}:{int(previous.timestamp() * 1000)}" if previous else None
            ts.schedule_wake(f"silence:{flow.id}:{session.id}:{ms}", at, replaces)
            break
