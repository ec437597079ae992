"""One turn: Load, Ingest, Understand, Decide, Run, Speak, Settle, Return.

Only Understand (at most one call before Speak) and Speak (one call, plus one per tool round) may
call the model on a message turn; decide/summary/judge calls are the ones an author asked for.
"""

from __future__ import annotations

from datetime import datetime

from tether.engine.inputs import Message, Start, TurnInput, TurnOptions, Wake
from tether.engine.ports import Clock, Ids
from tether.engine.results import TurnResult
from tether.engine.runner import enter_flow, move
from tether.engine.session import Outcome, Run, Session
from tether.engine.settle import settle
from tether.engine.speak import speak
from tether.engine.starts import start_run
from tether.engine.state import ModelSource, SpeakRequest, TurnState
from tether.flow.agent_def import AgentDefinition
from tether.flow.triggers import MessageTrigger

__all__ = ["KEEP_INPUTS", "run_turn"]

KEEP_INPUTS = 50
"""How many message ids a session remembers for duplicate detection."""


def _ignored(session: Session | None, code: str, key: str, now: datetime) -> TurnResult:
    line = Outcome(code=code, status="skipped", kind="wait", key=key, at=now)
    return TurnResult(session=session, changed=False, outcomes=[line])


async def run_turn(agent: AgentDefinition, session: Session | None, input: TurnInput, *,
                   options: TurnOptions | None = None, clock: Clock, ids: Ids, models: ModelSource,
                   session_id: str | None = None) -> TurnResult:
    """Run one turn of ``agent`` over ``session`` (None: a fresh session). The session passed in is
    never mutated."""
    options = options or TurnOptions()
    now = clock.now()
    # 1. Load
    if session is None:
        if isinstance(input, Wake):
            return _ignored(None, "no-session", input.key, now)
        working = Session(id=session_id or ids.new_id(), agent=agent.id, created_at=now)
    else:
        working = session.model_copy(deep=True)
    ts = TurnState(agent=agent, session=working, input=input, options=options, clock=clock, ids=ids, models=models,
                   now=now)
    # 2. Ingest
    if isinstance(input, Message):
        if input.id is not None and input.id in working.inputs:
            return _ignored(session, "duplicate-input", input.id, now)
        if input.id is not None:
            working.inputs.append(input.id)
            del working.inputs[: max(0, len(working.inputs) - KEEP_INPUTS)]
        working.last_user_at = input.at or now
        entry = ts.append_transcript("user", input.text, kind="user", input_id=input.id, at=input.at)
        ts.user_seq = entry.seq
    elif isinstance(input, Wake):
        woken = next((r for r in working.runs if r.waiting is not None and r.waiting.key == input.key), None)
        if woken is None:
            return _ignored(session, "stale-wake", input.key, now)
        woken.status = "running"
        woken.waiting = None
        ts.queue.append(woken.id)
    elif isinstance(input, Start):
        flow = agent.flows_by_id.get(input.flow)
        if flow is None:
            from tether.engine.starts import _skip

            _skip(ts, input.flow, "flow-gone", "session", input.key)
        else:
            run = start_run(ts, flow, kind="start", key=input.key or str(int(now.timestamp() * 1000)),
                            input=input.input, hop=input.hop)
            if run is not None:
                ts.queue.append(run.id)
    # 3-4. Understand and Decide: the floor holder takes the message; else the catch-all
    if isinstance(input, Message):
        _route_message(ts, input)
    # 5. Run
    await _run_phase(ts)
    # 6. Speak
    request = ts.speaker
    if request is None and ts.message is not None and not ts.answered_by and agent.idle is not None \
            and not ts.messages and options.silence is None:
        request = ts.speaker = SpeakRequest(None, None)
    if request is not None:
        result = await speak(ts, request)
        ts.spoke = True
        # 7. Settle
        await settle(ts, request, result)
        await _run_phase(ts)
    if ts.messages:
        working.last_assistant_at = now
    # 8. Return
    return _result(ts, session)


def _asker(ts: TurnState) -> Run | None:
    asking = [r for r in ts.session.runs if r.status == "asking"]
    return asking[-1] if asking else None


def _route_message(ts: TurnState, message: Message) -> None:
    asker = _asker(ts)
    if asker is not None:
        ts.queue.append(asker.id)
        return
    for flow in ts.agent.flows:
        for trigger in flow.on:
            if isinstance(trigger, MessageTrigger) and trigger.catch_all:
                key = message.id or str(int((message.at or ts.now).timestamp() * 1000))
                run = start_run(ts, flow, kind="message", key=key, repeat=trigger.repeat, if_=trigger.if_)
                if run is not None:
                    ts.queue.append(run.id)
                    return


async def _run_phase(ts: TurnState) -> None:
    for run in list(ts.session.runs):
        if run.status == "running" and run.id not in ts.queue:
            ts.queue.append(run.id)
    while ts.queue:
        found = ts.run(ts.queue.pop(0))
        if found is None or found.status in ("waiting", "suspended"):
            continue
        run = found
        flow = ts.agent.flows_by_id.get(run.flow)
        if flow is None:
            ts.outcome(run, code="flow-gone", status="skipped")
            from tether.engine.runner import finish

            finish(ts, run, None, "skipped")
            continue
        if run.node is None:
            enter_flow(ts, run, flow)
        run.status = "running"
        await move(ts, run, flow)


def _result(ts: TurnState, original: Session | None) -> TurnResult:
    session = ts.session
    changed = original is None or bool(ts.messages or ts.schedule or ts.outcomes or ts.skipped or ts.started
                                       or ts.ended) or session != original
    if ts.handoff is not None:
        status = "handoff"
    elif any(r.status == "asking" for r in session.runs) or not ts.ended:
        status = "awaiting_user"
    else:
        status = "ended"
    return TurnResult(session=session, changed=changed, status=status, messages=ts.messages,  # type: ignore[arg-type]
                      schedule=ts.schedule, outcomes=ts.outcomes, started=ts.started, ended=ts.ended,
                      skipped=ts.skipped, llm_calls=ts.llm_calls, usage=ts.usage, events=ts.events,
                      handoff=ts.handoff, new_transcript=list(ts.transcript))
