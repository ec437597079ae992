"""Context strategies: what history the next model call of a run sees after a transition.

The transcript is append-only and never destroyed; a strategy only moves the run's view:

- ``append``: the full history;
- ``reset``: system messages and the last user message;
- ``reset_with_summary``: one system summary note from a ``summary`` model call over what the
  run saw so far (merged with an earlier summary); falls back to ``reset`` when the summary is
  empty, fails, or no model is configured. Nothing to summarise: nothing changes.
"""

from __future__ import annotations

from tether.engine.core.session import Run
from tether.engine.core.state import TurnState
from tether.errors import ModelError
from tether.models.types import ChatMessage, ModelRequest

__all__ = ["SUMMARY_INSTRUCTIONS", "apply"]

SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation so far in 2-3 sentences: what the customer wants and every fact "
    "they gave. If an earlier summary is given, produce one consolidated summary of it and the newer turns. "
    "Reply with the summary only."
)


def _last_user_seq(ts: TurnState) -> int | None:
    for entry in reversed(ts.session.messages):
        if entry.role == "user":
            return entry.seq
    return None


async def apply(ts: TurnState, run: Run, strategy: str) -> None:
    """Apply ``strategy`` to ``run``'s view of the transcript."""
    if strategy == "append":
        return
    if strategy == "reset":
        _reset(ts, run)
        return
    seen = [m for m in ts.session.messages if m.role != "system" and m.seq >= run.context.from_seq]
    if not seen:
        return
    summary = ""
    if ts.has_model():
        model = ts.model(None, needed_for="reset_with_summary")
        lines = "\n".join(f"{m.role}: {m.text}" for m in seen)
        earlier = f"Earlier summary: {run.context.summary}\n\n" if run.context.summary else ""
        request = ModelRequest(call="summary", instructions=SUMMARY_INSTRUCTIONS,
                               messages=(ChatMessage("user", f"{earlier}Conversation:\n{lines}"),))
        try:
            summary = (await ts.call(model, request)).text.strip()
        except ModelError as exc:
            ts.log("warn", f"summary failed, falling back to reset: {exc}")
    if summary:
        run.context.summary = summary
        run.context.keep_seq = None
        run.context.from_seq = ts.session.message_seq + 1
    else:
        _reset(ts, run)


def _reset(ts: TurnState, run: Run) -> None:
    """Keep system messages and the last user message only."""
    run.context.keep_seq = _last_user_seq(ts)
    run.context.from_seq = ts.session.message_seq + 1
