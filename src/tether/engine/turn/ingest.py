"""Phase 2, Ingest: what the input means before anything runs.

- Message: a repeated id is ``duplicate-input`` (ignored); otherwise it is recorded and every run
  parked on a timer wait with an ``else`` takes that ``else`` (``replied``), oldest first.
- Wake: ``silence:<flow>:<session>:<ms>`` starts the silence flow while the session still shows
  that silence (else ``silence-broken``); any other key resumes the one run waiting on it
  (``no-reply`` on a timer, ``no-event`` on an event wait, a deferred action or a speak retry
  re-runs its step under the same key); no such run: ``stale-wake``.
- Event: inbound counts as the customer speaking, outbound as the assistant; runs waiting for it
  take ``then`` (``event-arrived``); flows with a matching event trigger go through the start
  checks (``after`` parks the new run: ``awaiting-trigger``).
- Start: the named flow goes through the start checks (unknown: ``flow-gone``).
- Approval / Signal: recorded as the result of the parked action's journal entry, and the run
  resumes (see :mod:`tether.engine.core.suspends`); a signal wait's timeout arrives as a wake.

A run resumed here takes the floor: routing is skipped, the customer is answering that run.
"""

from __future__ import annotations

from typing import Any

from tether.engine.core.inputs import Approval, Event, Message, Signal, Start, Wake
from tether.engine.core.pauses import Static
from tether.engine.core.session import Outcome, Run, WaitingOn, remember_input
from tether.engine.core.state import TurnState
from tether.engine.core.suspends import deliver_approval, deliver_signal, signal_timed_out
from tether.engine.graph.starts import skip, start_run
from tether.engine.turn.keys import input_key
from tether.flow.durations import parse_duration
from tether.flow.nodes import Wait
from tether.flow.transitions import End
from tether.flow.triggers import EventTrigger, SilenceTrigger

__all__ = ["ingest"]


def _ignore(ts: TurnState, code: str, key: str) -> Outcome:
    return Outcome(code=code, status="skipped", kind="wait", key=key, at=ts.now)


def ingest(ts: TurnState) -> Outcome | None:
    """Apply the input; returns an outcome when the input is ignored (the turn ends unchanged)."""
    input_ = ts.input
    if isinstance(input_, Message):
        return _message(ts, input_)
    if isinstance(input_, Wake):
        return _wake(ts, input_)
    if isinstance(input_, Event):
        _event(ts, input_)
        return None
    if isinstance(input_, Approval):
        return deliver_approval(ts, input_)
    if isinstance(input_, Signal):
        return deliver_signal(ts, input_)
    if isinstance(input_, Start):
        flow = ts.agent.flows_by_id.get(input_.flow)
        key = input_key(ts, input_.key)
        if flow is None:
            skip(ts, input_.flow, "flow-gone", ts.session.id, key)
            return None
        run = start_run(ts, flow, kind="start", key=key, input=input_.input, hop=input_.hop)
        if run is not None:
            _take_floor(ts, run)
    return None


def _take_floor(ts: TurnState, run: Run) -> None:
    ts.floor = run.id
    ts.floor_taken = True
    if run.id not in ts.queue:
        ts.queue.append(run.id)


def _message(ts: TurnState, message: Message) -> Outcome | None:
    session = ts.session
    if message.id is not None and message.id in session.inputs:
        return _ignore(ts, "duplicate-input", message.id)
    if message.id is not None:
        remember_input(session, message.id)
    session.last_user_at = message.at or ts.now
    entry = ts.append_transcript("user", message.text, kind="user", input_id=message.id, at=message.at)
    ts.user_seq = entry.seq
    _replied(ts)
    return None


def _wait_node(ts: TurnState, run: Run) -> Wait | None:
    flow = ts.agent.flows_by_id.get(run.flow)
    node = flow.by_id.get(run.node or "") if flow is not None else None
    return node if isinstance(node, Wait) else None


def _replied(ts: TurnState) -> None:
    """Runs parked on a timer wait with an ``else``: the customer replied first."""
    for run in sorted(ts.session.runs, key=lambda r: r.started_at):
        node = _wait_node(ts, run)
        if run.status == "waiting" and run.waiting is not None and run.waiting.kind == "timer" \
                and node is not None and node.else_ is not None:
            _resume(ts, run, node.else_, "replied", node.id)
            _take_floor(ts, run)


def _resume(ts: TurnState, run: Run, transition: Any, code: str | None, node_id: str) -> None:
    run.status = "running"
    run.waiting = None
    ts.pending[run.id] = Static(transition)
    ts.outcome(run, code=code, kind="wait", node_id=node_id)


def _wake(ts: TurnState, wake: Wake) -> Outcome | None:
    if wake.key.startswith("silence:"):
        return _silence_wake(ts, wake.key)
    run = next((r for r in ts.session.runs if r.waiting is not None and r.waiting.key == wake.key), None)
    if run is None or run.waiting is None:
        return _ignore(ts, "stale-wake", wake.key)
    waiting: WaitingOn = run.waiting
    node = _wait_node(ts, run)
    if waiting.kind == "timer" and node is not None:
        replied = ts.session.last_user_at is not None and ts.session.last_user_at > waiting.set_at
        if replied and node.else_ is not None:
            _resume(ts, run, node.else_, "replied", node.id)
        else:
            _resume(ts, run, node.then, "no-reply", node.id)
    elif waiting.kind == "event" and node is not None:
        _resume(ts, run, node.else_ if node.else_ is not None else End("end"), "no-event", node.id)
    elif waiting.kind == "signal":  # ctx.signal's timeout: the action runs again and reads a timeout
        signal_timed_out(ts, run)
    else:  # trigger ("after"), defer, retry: the step runs (again) in phase 5, same visit, same key
        if waiting.kind == "retry":
            ts.retrying.add(run.id)
        run.status = "running"
        run.waiting = None
    _take_floor(ts, run)
    return None


def _silence_wake(ts: TurnState, key: str) -> Outcome | None:
    rest = key[len("silence:"):]
    marker = f":{ts.session.id}:"
    if marker not in rest:
        return _ignore(ts, "stale-wake", key)
    flow_id, _, ms = rest.rpartition(marker)
    flow = ts.agent.flows_by_id.get(flow_id)
    if flow is None:
        skip(ts, flow_id, "flow-gone", ts.session.id, ms)
        return None
    last_assistant = ts.session.last_assistant_at
    last_user = ts.session.last_user_at
    if last_assistant is None or str(int(last_assistant.timestamp() * 1000)) != ms or (
            last_user is not None and last_user > last_assistant):
        return _ignore(ts, "silence-broken", key)
    for index, trigger in enumerate(flow.on):
        if isinstance(trigger, SilenceTrigger):
            run = start_run(ts, flow, kind="silence", key=ms, repeat=trigger.repeat, if_=trigger.if_, index=index)
            if run is not None:
                _take_floor(ts, run)
            break
    return None


def _event(ts: TurnState, event: Event) -> None:
    direction = event.direction or getattr(ts.agent.events.get(event.name), "direction", None) or (
        ts.agent.events.get(event.name, {}).get("direction") if isinstance(ts.agent.events.get(event.name), dict)
        else None)
    if direction == "inbound":
        ts.session.last_user_at = ts.now
        _replied(ts)
    elif direction == "outbound":
        ts.session.last_assistant_at = ts.now
    for run in list(ts.session.runs):
        node = _wait_node(ts, run)
        if run.status == "waiting" and run.waiting is not None and run.waiting.kind == "event" \
                and run.waiting.event == event.name and node is not None:
            _resume(ts, run, node.then, "event-arrived", node.id)
            _take_floor(ts, run)
    key = ""
    for flow in ts.agent.flows:
        for index, trigger in enumerate(flow.on):
            if not isinstance(trigger, EventTrigger) or trigger.name != event.name:
                continue
            key = key or input_key(ts, event.key)  # one key per event, minted when a trigger matches
            started = start_run(ts, flow, kind="event", key=key, input=event.payload, hop=event.hop,
                                repeat=trigger.repeat, if_=trigger.if_, payload=event.payload, index=index)
            if started is None:
                continue
            run = started
            if trigger.after is not None or trigger.business_hours:
                until = ts.now + (parse_duration(trigger.after) if trigger.after else parse_duration("0s"))
                if trigger.business_hours and ts.agent.business_hours is not None:
                    until = ts.agent.business_hours(until, {"context": ts.options.context})
                wake_key = f"{run.id}:start:{int(until.timestamp() * 1000)}"
                run.status = "waiting"
                run.waiting = WaitingOn(kind="trigger", key=wake_key, until=until, set_at=ts.now)
                ts.schedule_wake(wake_key, until)
                ts.outcome(run, code="awaiting-trigger", status="waiting", kind="wait", until=until)
            else:
                ts.queue.append(run.id)
            break
