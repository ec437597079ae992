"""Phase 1 compaction: keep the history a model call sees bounded, once per turn.

The window (``history_window`` messages) compacts into a summary before it slides: when this
turn could push it past its size, the older messages are folded into the session's summary note
(one ``summary`` call) and only the most recent ones stay (``preserve_recent`` with a
``Compaction``, else a quarter of the window), cut so that the window opens with a customer message.
Without a model (or when the summary fails) the window slides as before. A summary is made only
when a request will read it: an agent none of whose calls reads the window beyond its latest
messages (``AgentDefinition.reads_window`` is False: only ``extract`` and ``decide`` calls, agent
steps, ``ctx.model``) never folds; its window slides, and no call is paid for a note nothing reads.

With a ``Compaction`` the window is also kept under a token budget. Layers, cheapest first, each
only when the estimate (about 4 characters a token) is still over ``threshold * max_tokens``:

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

__all__ = ["CHARS_PER_TOKEN", "HEADROOM", "compact"]

CHARS_PER_TOKEN = 4
HEADROOM = 2
"""Messages a turn usually adds after the customer's (its replies): the window folds before they
would push it over."""
MICRO_LIMIT = 600
SUMMARY_INSTRUCTIONS = (
    "Write an updated, cumulative summary of the conversation: merge the previous summary (if any) "
    "with the older messages below. Keep every fact the customer gave and every commitment made. "
    "Reply with the summary only."
)


def estimate(messages: list[TranscriptMessage], summary: str | None) -> int:
    """The token estimate of a window and its summary."""
    return (sum(len(m.text) for m in messages) + len(summary or "")) // CHARS_PER_TOKEN


async def compact(ts: TurnState, config: Compaction | None) -> None:
    """Trim ``ts.session.messages`` in place when it is over budget, or fold it into the summary
    before it would slide."""
    enabled = config is not None and config.enabled
    if config is not None and enabled and await _over_budget(ts, config):
        return
    if enabled or config is None:
        await _fold_before_slide(ts, config)


async def _fold_before_slide(ts: TurnState, config: Compaction | None) -> None:
    window = ts.session.messages
    limit = ts.agent.history_window
    if len(window) + HEADROOM <= limit or not ts.agent.reads_window:
        return
    keep = config.preserve_recent if config is not None else max(2, limit // 4)
    cut = len(window) - keep
    while cut > 0 and window[cut].role != "user":
        cut -= 1  # the kept window opens with a customer message
    if cut <= 0:
        return
    older = window[:cut]
    summary = await _summarise(ts, older)
    if summary:
        ts.session.summary = summary
        del window[:cut]
        ts.outcome(None, kind="compaction", detail=f"summarised {len(older)} message(s) before the window slid",
                   llm_calls=1)


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
