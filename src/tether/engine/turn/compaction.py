"""Phase 1 compaction: keep the history a model call sees bounded, once per turn.

The window (``history_window`` messages) compacts into a summary before it slides: the older
messages are folded into the session's summary note and only the most recent ones stay
(``preserve_recent`` with a ``Compaction``, else a quarter of the window), cut so that the window
opens with a customer message. The summary costs no call of its own when it can help it: from
:data:`CARRY_AHEAD` messages before the fold is needed, the turn's ``understand`` call (a call
made anyway) carries a ``summary`` section: the cumulative summary of everything before the
customer's latest message. The window then folds at the end of that turn (:func:`fold_carried`),
in the turn's own save: no background work, nothing to lose in a crash (a turn that did not
commit folded nothing; the next one asks again) and nothing applied twice (the fold and the turn
are one write, guarded by the session's revision like any turn). Only when the fold can wait no
longer (this turn could push the window past its size) and no understand call carried it is a
separate ``summary`` call made (:func:`fold_now`), after Understand and before any other call, so
a message turn spends at most two calls on its own account (understand and speak, or summary and
speak). Without a model (or when the summary fails) the window slides as before. A summary is made
only when a request will read it: an agent none of whose calls reads the window beyond its latest
messages (``AgentDefinition.reads_window`` is False: only ``extract`` and ``decide`` calls, agent
steps, ``ctx.model``) never folds; its window slides, and no call is paid for a note nothing reads.

With a ``Compaction`` the window is also kept under a token budget (seed 003: trimmed in Load,
before either call; its summary is one call). Layers, cheapest first, each only when the estimate
(about 4 characters a token) is still over ``threshold * max_tokens``:

1. micro-compaction: long older messages are shortened (the transcript in the store keeps them);
2. a written summary (one ``summary`` model call, counted in ``llm_calls``): the older messages
   are folded into the session's summary note and leave the window;
3. truncation: when no model is configured, the summary fails or nothing would read it, the
   oldest messages leave the window until it fits (the most recent ``preserve_recent`` always stay).
"""

from __future__ import annotations

from tether.engine.core.session import TranscriptMessage
from tether.engine.core.state import TurnState
from tether.errors import ModelError
from tether.flow.agent_def import Compaction
from tether.models.types import ChatMessage, ModelRequest

__all__ = ["CARRY_AHEAD", "CHARS_PER_TOKEN", "HEADROOM", "SUMMARY_ORDER", "compact", "fold_carried", "fold_now"]

CHARS_PER_TOKEN = 4
HEADROOM = 2
"""Messages a turn usually adds after the customer's (its replies): the window folds before they
would push it over."""
CARRY_AHEAD = 4
"""How many messages before the window must fold its summary starts to ride on the understand
call (about two turns of chances, so a turn with no understand call seldom forces a summary call)."""
MICRO_LIMIT = 600
SUMMARY_INSTRUCTIONS = (
    "Write an updated, cumulative summary of the conversation: merge the previous summary (if any) "
    "with the older messages below. Keep every fact the customer gave and every commitment made. "
    "Reply with the summary only."
)
SUMMARY_ORDER = (
    "an updated, cumulative summary of the conversation before the customer's latest message, merging the "
    "earlier summary (if any); keep every fact the customer gave and every commitment made."
)
"""What the understand call's ``summary`` section means: in the call's standing orders, the same
on every call (a provider's prompt cache keeps it), while the section itself is offered only on
the calls that carry a summary."""


def estimate(messages: list[TranscriptMessage], summary: str | None) -> int:
    """The token estimate of a window and its summary."""
    return (sum(len(m.text) for m in messages) + len(summary or "")) // CHARS_PER_TOKEN


async def compact(ts: TurnState, config: Compaction | None) -> None:
    """Load: trim ``ts.session.messages`` in place when it is over its token budget; else note
    whether the window will soon have to fold (``ts.fold_due``: the understand call carries the
    summary)."""
    enabled = config is not None and config.enabled
    if config is not None and enabled and await _over_budget(ts, config):
        return
    if (enabled or config is None) and _fold_cut(ts, config, ahead=CARRY_AHEAD) > 0 \
            and ts.models.model_for("default") is not None:
        ts.fold_due = True


async def fold_now(ts: TurnState, config: Compaction | None) -> None:
    """After Understand: fold with a ``summary`` call of its own when the window cannot wait for
    another turn and this turn's understand call did not carry the summary."""
    if not ts.fold_due or ts.carried_summary:
        return
    cut = _fold_cut(ts, config, ahead=0)
    if cut <= 0:
        return
    window = ts.session.messages
    older = window[:cut]
    summary = await _summarise(ts, older)
    ts.fold_due = False
    if summary:
        ts.session.summary = summary
        del window[:cut]
        ts.outcome(None, kind="compaction", detail=f"summarised {len(older)} message(s) before the window slid",
                   llm_calls=1)


def fold_carried(ts: TurnState, config: Compaction | None) -> None:
    """End of the turn: fold the window into the summary the understand call carried. That summary
    covers every message before the customer's message of this turn (``ts.user_seq``), so only
    those may leave; the most recent ``keep`` stay, the window opening with a customer message."""
    summary, ts.carried_summary = ts.carried_summary, None
    if not summary:
        return
    window = ts.session.messages
    cut = _cut(ts, config, len(window))
    while cut > 0 and (ts.user_seq is None or window[cut - 1].seq >= ts.user_seq):
        cut -= 1  # the summary covers only what came before this turn's message
    while cut > 0 and window[cut].role != "user":
        cut -= 1
    if cut <= 0:
        return
    ts.session.summary = summary
    del window[:cut]
    ts.outcome(None, kind="compaction", detail=f"summarised {cut} message(s) in the understand call", llm_calls=0)


def _fold_cut(ts: TurnState, config: Compaction | None, *, ahead: int) -> int:
    """Where the window would be cut when it is within ``ahead`` messages of having to fold, else 0."""
    window = ts.session.messages
    if len(window) + HEADROOM + ahead <= ts.agent.history_window or not ts.agent.reads_window:
        return 0
    return _cut(ts, config, len(window))


def _cut(ts: TurnState, config: Compaction | None, size: int) -> int:
    """The index the window is cut at so that the most recent messages stay and the kept window
    opens with a customer message (0: nothing to fold)."""
    limit = ts.agent.history_window
    keep = config.preserve_recent if config is not None else max(2, limit // 4)
    window = ts.session.messages
    cut = size - keep
    while cut > 0 and window[cut].role != "user":
        cut -= 1  # the kept window opens with a customer message
    return max(cut, 0)


async def _over_budget(ts: TurnState, config: Compaction) -> bool:
    """The token layers; True when the window was over budget (and was handled)."""
    session = ts.session
    budget = int(config.max_tokens * config.threshold)
    window = session.messages
    if estimate(window, session.summary) <= budget:
        return False
    older = window[: max(0, len(window) - config.preserve_recent)]
    for i, message in enumerate(older):
        if len(message.text) > MICRO_LIMIT:
            older[i] = message.model_copy(update={"text": message.text[:MICRO_LIMIT] + " …[shortened]"})
    window[: len(older)] = older
    if estimate(window, session.summary) <= budget or not older:
        return True
    summary = await _summarise(ts, older) if ts.agent.reads_window else ""
    if summary:
        session.summary = summary
        del window[: len(older)]
        ts.outcome(None, kind="compaction", detail=f"summarised {len(older)} message(s)", llm_calls=1)
        return True
    while len(window) > config.preserve_recent and estimate(window, session.summary) > budget:
        del window[0]
    ts.outcome(None, kind="compaction", detail="truncated the oldest messages")
    return True


async def _summarise(ts: TurnState, older: list[TranscriptMessage]) -> str:
    model = ts.models.model_for("default")
    if model is None:
        return ""
    lines = "\n".join(f"{m.role}: {m.text}" for m in older)
    previous = f"Previous summary: {ts.session.summary}\n\n" if ts.session.summary else ""
    request = ModelRequest(call="summary", instructions=SUMMARY_INSTRUCTIONS,
                           messages=(ChatMessage("user", f"{previous}Older messages:\n{lines}"),))
    try:
        return (await ts.call(model, request)).text.strip()
    except ModelError as exc:
        ts.log("warn", f"compaction summary failed, truncating instead: {exc}")
        return ""
