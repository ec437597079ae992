"""The mutable state of one turn, and the small operations every phase shares.

A ``TurnState`` is created per turn around a working copy of the session; phases mutate it and
the result is assembled from it at the end. User code never sees it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from tether.durable.journal import EffectJournal
from tether.durable.turns import OpenTurn, SaidMessage, SpeakerMark
from tether.engine.core.events import BudgetExceeded, FlowEvent, StoredForms
from tether.engine.core.inputs import Message, TurnInput, TurnOptions
from tether.engine.core.judgement import Judgement
from tether.engine.core.marks import input_mark
from tether.engine.core.ports import Clock, Ids
from tether.engine.core.results import HandoffRequest, OutMessage, RunEnded, RunStarted, ScheduledWake, Skipped
from tether.engine.core.session import Outcome, Run, Session, TranscriptMessage
from tether.engine.core.storable import storable_response
from tether.engine.core.streaming import ReplyStream
from tether.engine.core.templates import render, render_value, today_text
from tether.errors import CheckpointFailed, ModelConfigurationError, ModelError
from tether.flow.agent_def import AgentDefinition
from tether.flow.results import ReplyTurn
from tether.models.types import ChatMessage, Model, ModelRequest, ModelResponse, Usage
from tether.templating import plain

__all__ = ["MAX_OUTCOMES", "HeldTurn", "ModelSource", "TurnState"]

MAX_OUTCOMES = 50
MAX_LOG = 100


def _keep_retry_streak(run: Run, line: Outcome) -> None:
    """Keep on the run only what a later turn reads back: the deferred outcomes of each node's
    current retry streak (``settle`` counts them to pick the next delay). Every other outcome
    goes to the turn's result, not into the session document, so the document stays small."""
    if line.status == "deferred":
        run.outcomes.append(line)
        if len(run.outcomes) > MAX_OUTCOMES:
            del run.outcomes[: len(run.outcomes) - MAX_OUTCOMES]
    elif any(o.node_id == line.node_id for o in run.outcomes):
        run.outcomes[:] = [o for o in run.outcomes if o.node_id != line.node_id]  # the streak is broken


class ModelSource(Protocol):
    """Where the engine gets a model for a tier; ``None`` when no model is configured."""

    def model_for(self, tier: str) -> Model | None: ...

    def gate_judge_model(self) -> Model | None:
        """The model that judges flows' judge gates (never the agent's own); None if unset."""
        ...


@dataclass
class SpeakRequest:
    """The turn's one speaker: a run at a reply/collect node, or the idle speaker (run None)."""

    run_id: str | None
    node_id: str | None
    fields: tuple[str, ...] = ()
    then_ask: str | None = None
    """A fixed question that follows the spoken answer verbatim (the customer asked something)."""
    batch: tuple[str, ...] = ()
    """The batched segment this call speaks for (node ids, ``node_id`` first), or empty: see
    :mod:`tether.engine.graph.batching`."""


@dataclass(frozen=True)
class HeldTurn:
    """A batched model turn still to be handed to the segment's next members, in order."""

    members: tuple[str, ...]
    turn: ReplyTurn


@dataclass
class TurnState:
    """Everything one turn reads and writes."""

    agent: AgentDefinition
    session: Session
    input: TurnInput
    options: TurnOptions
    clock: Clock
    ids: Ids
    models: ModelSource
    now: datetime
    events: list[FlowEvent] = field(default_factory=list)
    messages: list[OutMessage] = field(default_factory=list)
    transcript: list[TranscriptMessage] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    started: list[RunStarted] = field(default_factory=list)
    ended: list[RunEnded] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    schedule: list[ScheduledWake] = field(default_factory=list)
    llm_calls: int = 0
    pre_speak_calls: int = 0
    child_steps: int = 0
    """Child steps (``ctx.run_step``/``ctx.run_steps``) run this turn (capped)."""
    agent_calls: int = 0
    """Model calls of agent steps (asked for by the author: apart from the message-turn budget)."""
    workflow_calls: int = 0
    """Model calls of workflow runs the turn's actions drove (reported with ``count_calls``)."""
    content_type: str = "text/plain"
    """What the turn's reply is: the content type of the agent step that spoke last."""
    usage: Usage = field(default_factory=Usage)
    speaker: SpeakRequest | None = None
    spoke: bool = False
    answered_by: set[str] = field(default_factory=set)
    consumed_by: dict[str, str] = field(default_factory=dict)
    edges: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    handoff: HandoffRequest | None = None
    after_ms: int = 0
    user_seq: int | None = None
    queue: list[str] = field(default_factory=list)
    judgement: Judgement = field(default_factory=Judgement)
    floor: str | None = None
    floor_taken: bool = False
    asking_at: dict[str, str] = field(default_factory=dict)
    """The node each asking or suspended run was asking at when the turn began (run id -> node id)."""
    pending: dict[str, Any] = field(default_factory=dict)
    retrying: set[str] = field(default_factory=set)
    premise_checked: set[str] = field(default_factory=set)
    on_delta: Callable[[str], Awaitable[None]] | None = None
    journal: EffectJournal = field(default_factory=EffectJournal)
    open_input: dict[str, Any] | None = None
    outbox: ReplyStream | None = None
    held: dict[str, HeldTurn] = field(default_factory=dict)
    """Per run id: the batched turn its segment's next member takes instead of speaking."""
    small_talk: bool = False
    """The message is small talk that a step's own speak call answers: that ask is not counted
    toward the step's ``max_asks``."""
    late_intent: tuple[str, str] | None = None
    """A repair intent the collect step's extract call reported (run id, intent): applied after
    the run phase, as the understand call's would have been before it."""
    repaired: str | None = None
    """The repair pattern that handled this turn's message (``cancel``, ``chitchat``...): the
    message is not routed, nor given to a step as its answer."""
    fold_due: bool = False
    """The window will soon have to fold (:mod:`tether.engine.turn.compaction`): an understand
    call made this turn also writes the summary (its ``summary`` section)."""
    carried_summary: str | None = None
    """The summary this turn's understand call wrote: the window folds at the end of the turn."""
    read_again: set[tuple[str, str]] = field(default_factory=set)
    """The (run, collect step) pairs whose patterns read a message an earlier step read, this turn."""
    _today: str | None = None

    def __post_init__(self) -> None:
        if self.on_delta is not None and self.outbox is None:
            self.outbox = ReplyStream(self.on_delta)

    # ------------------------------------------------------------------ input

    @property
    def message(self) -> Message | None:
        return self.input if isinstance(self.input, Message) else None

    @property
    def message_text(self) -> str:
        return self.input.text if isinstance(self.input, Message) else ""

    def message_available(self, run: Run) -> bool:
        """True while this turn's message belongs to ``run`` (it holds the floor) and none of its
        nodes has consumed it yet."""
        return self.message is not None and self.floor == run.id and run.id not in self.consumed_by

    # ------------------------------------------------------------------ runs and views

    def run(self, run_id: str) -> Run | None:
        return next((r for r in self.session.runs if r.id == run_id), None)

    def answered(self, name: str) -> bool:
        """Whether the session's field ``name`` holds an answer (``Field.known``: an empty list
        answers a list field that allows it)."""
        value = self.session.data.get(name)
        if value is None or value == "":  # is_known, inline: the engine asks this many times a turn
            return False
        if value != []:
            return True
        field = self.agent.fields.get(name)
        return field is not None and field.known(value)

    @property
    def today(self) -> str:
        """What ``${today}`` reads in a template: the turn's date with its weekday (made once a turn)."""
        if self._today is None:
            self._today = today_text(self.now)
        return self._today

    def render(self, template: str, run: Run | None, *, where: str = "template",
               state: Mapping[str, Any] | None = None) -> str:
        """Fill a text's placeholders from ``run``'s state view (or ``state``), its input, the
        turn's context and date (:func:`~tether.engine.core.templates.render`)."""
        if plain(template, old=True):  # nothing to fill: no state view to make
            return template
        return render(template, self.state_view(run) if state is None else state, run.input if run else None,
                      self.options.context, where=where, today=self.today if "today" in template else None)

    def render_value(self, value: Any, run: Run, *, where: str = "template") -> Any:
        """:meth:`render` every string inside ``value`` (dicts and lists walked)."""
        return render_value(value, self.state_view(run), run.input, self.options.context, where=where,
                            today=self.today)

    def state_view(self, run: Run | None) -> dict[str, Any]:
        """What user code sees as ``state``: session fields overlaid with the run's own state
        (internal ``__`` keys hidden). A fresh dict: mutating it changes nothing."""
        view = dict(self.session.data)
        if run is not None:
            view.update({k: v for k, v in run.state.items() if not k.startswith("__")})
        return view

    @staticmethod
    def key(run: Run, node_id: str) -> str:
        """The deterministic message/action key ``run:node:visit``."""
        return f"{run.id}:{node_id}:{run.visits.get(node_id, 0)}"

    # ------------------------------------------------------------------ output

    def emit(self, event: FlowEvent) -> None:
        event.as_dict()  # its stored form is built once, now (checkpoints and the final save reuse it)
        self.events.append(event)

    def append_transcript(self, role: Literal["user", "assistant", "system"], text: str, *,
                          kind: Literal["user", "ai", "verbatim", "event", "note"], key: str | None = None,
                          run_id: str | None = None, node_id: str | None = None, after_ms: int = 0,
                          input_id: str | None = None, at: datetime | None = None) -> TranscriptMessage:
        self.session.message_seq += 1
        entry = TranscriptMessage(seq=self.session.message_seq, role=role, text=text, at=at or self.now, kind=kind,
                                  key=key, run_id=run_id, node_id=node_id, after_ms=after_ms, input_id=input_id)
        window = self.session.messages
        window.append(entry)
        overflow = len(window) - self.agent.history_window
        if overflow > 0:
            del window[:overflow]
        self.transcript.append(entry)
        return entry

    def say(self, text: str, *, kind: Literal["ai", "verbatim"], key: str, run: Run | None = None,
            node_id: str | None = None) -> OutMessage:
        """Send a message to the customer (recorded in the transcript)."""
        out = OutMessage(text=text, kind=kind, key=key, run_id=run.id if run else None, node_id=node_id,
                         after_ms=self.after_ms)
        self.after_ms = 0
        self.messages.append(out)
        if self.outbox is not None:
            self.outbox.said(text, kind=kind)
        self.append_transcript("assistant", text, kind=kind, key=key, run_id=out.run_id, node_id=node_id,
                               after_ms=out.after_ms)
        if run is not None:
            self.answered_by.add(run.id)
        return out

    def outcome(self, run: Run | None, *, code: str | None = None, status: str = "ok", kind: str | None = None,
                node_id: str | None = None, detail: str | None = None, next: str | None = None,
                until: datetime | None = None, llm_calls: int | None = None, message: str | None = None) -> Outcome:
        line = Outcome(code=code, status=status,
                       kind=kind, run_id=run.id if run else None, flow_id=run.flow if run else None,
                       node_id=node_id, key=self.key(run, node_id) if run and node_id else None, detail=detail,
                       next=next, until=until, at=self.now, llm_calls=llm_calls, message=message)
        self.outcomes.append(line)
        if run is not None:
            _keep_retry_streak(run, line)
        return line

    def log(self, level: Literal["log", "warn", "error"], message: str, **extra: Any) -> None:
        from tether.engine.core.session import LogEntry

        entries = getattr(self.session, level)
        entries.append(LogEntry(at=self.now, level=level, message=message, **extra))
        if len(entries) > MAX_LOG:
            del entries[: len(entries) - MAX_LOG]

    async def checkpoint(self) -> None:
        """Let the host save the working session mid-turn (seed 004's cross-node checkpoint, and
        every effect's started and result records), with the open-turn mark. The host gets a
        shallow copy that shares the working session's containers (see ``TurnOptions.checkpoint``:
        it writes it during the call, never keeps it), so a checkpoint copies nothing."""
        await self.flush_deltas()
        if self.options.checkpoint is None:
            return
        snapshot = self.session.model_copy(update={"turn": self.open_mark()})
        try:
            self.session.revision = await self.options.checkpoint(snapshot, list(self.transcript),
                                                                  StoredForms(tuple(self.events)),
                                                                  list(self.journal.written))
        except Exception as exc:  # the host's failure, not the flow's: no handler of the turn may take it
            raise CheckpointFailed(exc) from exc

    def open_mark(self) -> OpenTurn:
        """The open-turn mark of this turn as it stands (written with every mid-turn save). Built
        without validation: every value comes typed from the turn's own state, and the store
        validates the document the mark is written in."""
        speaker = self.speaker
        return OpenTurn.model_construct(
            input=self.open_input if self.open_input is not None else input_mark(self.input), at=self.now,
            user_seq=self.user_seq, floor=self.floor, floor_taken=self.floor_taken, consumed_by=dict(self.consumed_by),
            answered_by=sorted(self.answered_by), spoke=self.spoke,
            speaker=None if speaker is None else SpeakerMark.model_construct(
                run_id=speaker.run_id, node_id=speaker.node_id, fields=list(speaker.fields), then_ask=speaker.then_ask,
                batch=list(speaker.batch)),
            said=[SaidMessage.model_construct(text=m.text, kind=m.kind, key=m.key, run_id=m.run_id, node_id=m.node_id,
                                              after_ms=m.after_ms) for m in self.messages],
            schedule=[{"key": w.key, "at": w.at.isoformat(), "replaces": w.replaces} for w in self.schedule],
        )

    async def flush_deltas(self) -> None:
        """Send the messages said so far to the delta consumer (``turn_stream``), if any."""
        if self.outbox is not None:
            await self.outbox.flush()

    def schedule_wake(self, key: str, at: datetime, replaces: str | None = None) -> None:
        """Ask the host to wake this session with ``key`` at ``at``."""
        self.schedule = [w for w in self.schedule if w.key != key]
        self.schedule.append(ScheduledWake(key, at, replaces))

    # ------------------------------------------------------------------ models

    def model(self, tier: str | None, *, needed_for: str) -> Model:
        model = self.models.model_for(tier or "default")
        if model is None:
            raise ModelConfigurationError(f"{needed_for} needs a language model, and none is configured "
                                          "(set TETHER_MODEL, pass model=..., or use agent.with_model(...))")
        return model

    def has_model(self, tier: str | None = None) -> bool:
        return self.models.model_for(tier or "default") is not None

    async def call(self, model: Model, request: ModelRequest, *, stream: bool = False) -> ModelResponse:
        """Call a model, counting the call and its tokens (also on failure: it was spent). With
        ``stream`` and a delta listener, the reply's visible text is passed on as it arrives."""
        budget = self.options.budget
        if budget is not None:
            refused = budget.refuse(self.session, model.name, request)
            if refused is not None:  # the call is not made: the step degrades as on a provider refusal
                self.emit(BudgetExceeded(run_id=None, flow=None, at=self.now, model=model.name, call=request.call,
                                         reason=refused))
                raise ModelError(f"budget-exceeded: {refused}", kind="quota", retryable=False,
                                 provider=model.name.split(":", 1)[0])
        self.llm_calls += 1
        if request.call in ("understand", "extract"):
            self.pre_speak_calls += 1
        self.session.usage.llm_calls += 1
        await self.flush_deltas()  # what was said before this call reaches the stream first
        if stream and self.outbox is not None and model.capabilities.streaming:
            response = await self._stream(model, request, self.outbox.live(), self.options.barge_in)
        else:
            response = await model.complete(request)
        response = storable_response(response)  # a reply echoing "\ud800" must not make the session unsaveable
        self._tally(response.usage)
        if budget is not None:
            budget.spent(self.session, model.name, response.usage)
        return response

    def count_calls(self, calls: int, usage: Usage, *, workflow: bool = False) -> None:
        """Count ``calls`` model calls made outside :meth:`call` (an action's own client, or a
        workflow run it drove) and their tokens, on the turn and on the session."""
        self.llm_calls += calls
        self.session.usage.llm_calls += calls
        if workflow:
            self.workflow_calls += calls
            self.session.usage.workflow_calls += calls
        self._tally(usage)

    def _tally(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        tally = self.session.usage
        for name, value in usage.as_dict().items():
            setattr(tally, name, getattr(tally, name) + value)

    @staticmethod
    async def _stream(model: Model, request: ModelRequest, on_delta: Callable[[str], Awaitable[None]],
                      barge_in: Any) -> ModelResponse:
        from tether.engine.core.streaming import MessageDeltas

        deltas = MessageDeltas()
        final: ModelResponse | None = None
        heard: list[str] = []
        async for chunk in model.stream(request):
            if chunk.delta and (visible := deltas.feed(chunk.delta)):
                heard.append(visible)
                await on_delta(visible)
            if chunk.done:
                final = chunk.response
            if barge_in is not None and barge_in.is_set():
                # the customer cut in: keep what was heard, as an interrupted reply
                return ModelResponse(text="".join(heard), finish_reason="interrupted")
        if final is None:
            raise ModelError("the model's stream ended without a final response", kind="unknown")
        return final

    def history(self, run: Run | None, *, recent: int | None = None) -> list[ChatMessage]:
        """The conversation the next model call sees for ``run``: its context view of the
        transcript (system messages always, the rest from ``run.context.from_seq``), plus the
        run's summary note. The current user message is included (once) unless a summary took
        the run's whole view (``reset_with_summary``: the summary tells it). With ``recent``, only
        the last ``recent`` customer and assistant messages of that view, and no summary (an
        extraction reads the latest exchange, at the same cost on every turn); a leading
        assistant message is left out when a later one (the question the latest message answers)
        is in view.

        The conversation never opens with an assistant message (providers expect a user turn
        first, and a reply without its question misleads): assistant messages before the first
        customer message of the view become one system note."""
        from_seq = run.context.from_seq if run is not None else 0
        keep = run.context.keep_seq if run is not None else None
        chat: list[ChatMessage] = []
        if self.session.summary and recent is None:
            chat.append(ChatMessage("system", f"Summary of the earlier conversation: {self.session.summary}"))
        if run is not None and run.context.summary and recent is None:
            chat.append(ChatMessage("system", f"Previous conversation summary: {run.context.summary}"))
        if self.options.history is not None:
            source = [*self.options.history, *self.transcript]
        else:
            source = self.session.messages
        viewed = [e for e in source if e.role == "system" or e.seq >= from_seq or e.seq == keep]
        if recent is not None:
            talk = [e for e in viewed if e.role != "system"][-recent:]
            while len(talk) > 1 and talk[0].role == "assistant" and any(e.role == "assistant" for e in talk[1:]):
                talk = talk[1:]  # opens with a customer message where the latest question stays in view
            first = talk[0].seq if talk else None
            viewed = [e for e in viewed if e.role != "system" and first is not None and e.seq >= first]
        opening: list[str] = []
        for entry in viewed:
            if entry.role == "assistant" and not any(m.role == "user" for m in chat):
                opening.append(entry.text)
                continue
            if opening and entry.role == "user":
                chat.append(ChatMessage("system", _opening_note(opening)))
                opening = []
            chat.append(ChatMessage(entry.role, entry.text))
        if opening:
            chat.append(ChatMessage("system", _opening_note(opening)))
        return chat


def _opening_note(texts: list[str]) -> str:
    said = "\n".join(f"- {text}" for text in texts)
    return f"Before the customer's next message, you said:\n{said}"
