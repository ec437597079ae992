"""What the chat shows while a turn runs and around it: streamed replies, the opening, the status.

- :class:`ReplyPrinter` prints a turn's messages as their text arrives (the runtime's
  ``TurnOptions.on_delta``): ``<name>> `` before each message; the engine separates messages
  with a blank line, which becomes a new ``<name>> `` line.
- :func:`opening` (from :mod:`tether.runtime.opening`) is what makes the agent speak first in a
  new session: a flow triggered by the ``start`` event (``on_event("start")``), sent when the
  session opens.
- :func:`status_notes` names what the user should know after a turn: a handoff, a wait, a
  conversation a human now has.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from tether.engine.core.session import Session
from tether.runtime.opening import OPENING_EVENT, opening

__all__ = ["OPENING_EVENT", "ReplyPrinter", "opening", "status_notes"]


class ReplyPrinter:
    """Prints deltas as ``<name>> text`` lines, as they arrive."""

    def __init__(self, console: Console, name: str) -> None:
        self.console = console
        self.name = name
        self.streamed = False
        self._newlines = 0

    def _write(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style), end="", soft_wrap=True, highlight=False)

    async def delta(self, text: str) -> None:
        """One piece of a message (``on_delta``)."""
        for char in text:
            if char == "\n":
                self._newlines += 1
                continue
            if not self.streamed:
                self._write(f"{self.name}> ", "bold cyan")
                self.streamed = True
            elif self._newlines >= 2:  # the engine's blank line between two messages
                self._write("\n")
                self._write(f"{self.name}> ", "bold cyan")
            elif self._newlines == 1:
                self._write("\n")
            self._newlines = 0
            self._write(char)
        self.console.file.flush()

    def finish(self) -> None:
        """End the last streamed line."""
        if self.streamed:
            self._write("\n")
            self._newlines = 0


def status_notes(session: Session | None, *, handoff_shown: bool = False) -> list[str]:
    """What the status line should say about the session beyond where it is: a human has it
    (unless the turn's own handoff is ``handoff_shown``), or a run waits (for what, until when)."""
    if session is None:
        return []
    notes: list[str] = []
    if session.status == "handed_off" and not handoff_shown:
        notes.append("handed off to a human: the bot stays quiet")
    for run in session.runs:
        if run.status == "waiting" and run.waiting is not None:
            what = run.waiting.event or run.waiting.kind
            until = f" until {run.waiting.until:%Y-%m-%d %H:%M}" if run.waiting.until is not None else ""
            notes.append(f"{run.flow} waits for {what}{until}")
    return notes
