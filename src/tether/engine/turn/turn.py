"""One turn: Load, Ingest, Understand, Decide, Run, Speak, Settle, Return.

Only Understand (at most one call before Speak) and Speak (one call, plus one per tool round) may
call the model on a message turn; decide/summary/judge calls are the ones an author asked for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from tether.durable.journal import EffectJournal
from tether.engine.core.input_checks import CheckedInput, checked
from tether.engine.core.inputs import Message, Resume, TurnInput, TurnOptions, Wake
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.results import TurnResult
from tether.engine.core.session import Outcome, Run, Session, fork_session
from tether.engine.core.state import ModelSource, TurnState
from tether.engine.graph.degrade import FAILURES, speaker_failed
from tether.engine.step.memory import compact_memories
from tether.engine.turn.compaction import compact, fold_carried, fold_now
from tether.engine.turn.continuation import continue_turn, recorded_reply
from tether.engine.turn.handed_off import quiet_turn
from tether.engine.turn.ingest import ingest
from tether.engine.turn.repair import (
    clarified_choice,
    handle_repair,
    keyword_repair,
    late_repair,
    reask_after_detour,
)
from tether.engine.turn.return_phase import turn_result
from tether.engine.turn.route import decide
from tether.engine.turn.run_phase import keep_moving, run_phase
from tether.engine.turn.settle import bookkeeping, settle
from tether.engine.turn.speak import choose_speaker, speak_unless_answered
from tether.engine.turn.understand import find_judgeables, understand
from tether.flow.agent_def import AgentDefinition

__all__ = ["run_turn"]


async def run_turn(agent: AgentDefinition, session: Session | None, input: TurnInput | CheckedInput, *,
                   options: TurnOptions | None = None, clock: Clock, ids: Ids, models: ModelSource,
                   session_id: str | None = None,
                   on_delta: Callable[[str], Awaitable[None]] | None = None) -> TurnResult:
    """Run one turn of ``agent`` over ``session`` (None: a fresh session). The session passed in is
    never mutated, unless ``options.gives_session`` gives it to a message's turn. ``on_delta``
    receives every message's visible text as deltas (the speak call's as
    it streams, an engine-rendered message when it is said). A raw ``input`` is checked first (bad
    input is refused, :class:`~tether.errors.InvalidInputError`, before anything runs); a
    :class:`~tether.engine.core.input_checks.CheckedInput` (what ``check_input`` returned) is not
    checked again."""
    input = checked(input).input
    options = options or TurnOptions()
    on_delta = on_delta or options.on_delta
    now = clock.now()
    # 1. Load
    if session is None:
        if isinstance(input, Wake):
            line = Outcome(code="no-session", status="skipped", kind="wait", key=input.key, at=now)
            return TurnResult(session=None, changed=False, outcomes=[line])
        working = Session(id=session_id or ids.new_id(), agent=agent.id, created_at=now)
    elif options.gives_session and isinstance(input, Message) and session.turn is None:
        working = session  # the host's to give (see TurnOptions.gives_session): the copy is not needed
    else:
        working = fork_session(session)
    ts = TurnState(agent=agent, session=working, input=input, options=options, clock=clock, ids=ids, models=models,
                   now=now, on_delta=on_delta, journal=EffectJournal(options.journal))
    ts.asking_at = {r.id: r.node for r in working.runs if r.status in ("asking", "suspended") and r.node}
    if session is not None and session.turn is not None:  # a turn that did not finish: continue it
        continued = await continue_turn(ts, session)
        await ts.flush_deltas()
        return continued
    if isinstance(input, Resume) or working.status == "handed_off":
        return quiet_turn(ts, session)
    # 2. Ingest
    ignored = ingest(ts)
    if ignored is not None:  # a repeated message id gets the reply its turn recorded
        return TurnResult(session=session, changed=False, outcomes=[ignored], messages=recorded_reply(working, input))
    await compact(ts, agent.compaction)  # once per turn, before any call sees the history
    silence = options.silence
    if isinstance(input, Message):
        asker = _asker(ts)  # also when Ingest gave the floor to another run: the message may come back to it
        # a repair pattern its keywords recognise needs no call ("cancel", "thanks!", "that's all")
        repaired = silence is None and (clarified_choice(ts) if ts.session.clarifying else False)
        repaired = repaired or (silence is None and handle_repair(ts, asker, keyword_repair(ts, asker)))
        if not repaired:
            found = find_judgeables(ts, asker)
            # 3. Understand
            if silence is None or silence.understand:
                with _phase(ts, "understand"):
                    ts.judgement = await understand(ts, found)
            # 4. Decide
            with _phase(ts, "decide"):
                if silence is not None or not handle_repair(ts, asker, ts.judgement.intent, ts.judgement.flows):
                    decide(ts, found, ts.judgement, asker)
    await fold_now(ts, agent.compaction)  # the window cannot wait and no understand call carried its summary
    # 5. Run
    with _phase(ts, "run"):
        await run_phase(ts)
        await late_repair(ts)  # a repair intent the collect step's extract call reported
    reask_after_detour(ts, spoken=False)  # a detour ended: the task it interrupted asks its question again
    # 6. Speak
    request = choose_speaker(ts)
    if request is not None:
        try:
            with _phase(ts, "speak"):
                result = await speak_unless_answered(ts, request)
            if result is not None:
                ts.spoke = True
                # 7. Settle
                with _phase(ts, "settle"):
                    await settle(ts, request, result)
        except FAILURES as exc:  # the speaking node failed: its run degrades, loudly
            result = None
            await speaker_failed(ts, request, exc)
            await keep_moving(ts)
        if result is not None:
            await keep_moving(ts)
    reask_after_detour(ts, spoken=True)  # (the detour spoke: its fixed question follows the reply)
    fold_carried(ts, agent.compaction)  # the summary the understand call wrote: the window folds with this turn
    await compact_memories(ts)  # agent steps' namespaces with summaries on, before the save
    bookkeeping(ts)
    await ts.flush_deltas()
    # 8. Return
    return turn_result(ts, session)


def _phase(ts: TurnState, name: str) -> AbstractContextManager[Any]:
    """The host's context around a phase (``TurnOptions.phase``: its tracing span), else nothing."""
    return ts.options.phase(name) if ts.options.phase is not None else nullcontext()


def _asker(ts: TurnState) -> Run | None:
    asking = [r for r in ts.session.runs if r.status == "asking"]
    return asking[-1] if asking else None
