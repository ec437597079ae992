"""A worker process for the summary-fold crash test (run as a script, not collected).

    python fold_worker.py <db> <session-id> <text> <message-id> <marker>

Runs one message turn of :func:`fold_agent` on the SQLite session. When the turn's understand
call has carried the window's summary (the fold is decided, not yet saved), the speak call writes
``<marker>`` and blocks, so the parent can SIGKILL the process between the summary and the save.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from tether import Agent, Flow, Message, on_message, reply
from tether.models.types import ModelRequest, ModelResponse
from tether.runtime import Runtime
from tether.stores import SQLiteStore
from tether.testing import FakeClock, StrictModel

WINDOW = 10
MESSAGES = [f"where is my order A-{1000 + i}?" if i % 2 else f"I want a refund for A-{1000 + i}" for i in range(14)]


def _summary(request: ModelRequest) -> str:
    """A summary that names the latest message it covers, so two folds never look alike."""
    users = [m.content for m in request.messages if m.role == "user"]
    return f"Summary before {users[-1]!r}."


class FoldModel(StrictModel):
    """Understands every message of :data:`MESSAGES`; with ``marker``, blocks the speak call of a
    turn whose understand call carried the summary."""

    def __init__(self, marker: Path | None = None) -> None:
        super().__init__(summary=[_summary] * 50)
        self.marker = marker
        self.carried = False
        for text in MESSAGES:
            self.means(text, flows={"orders": 90} if "where" in text else {"refund": 90})

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.call == "understand":
            self.carried = request.response_format is not None and \
                "summary" in request.response_format.schema["properties"]
        elif request.call == "speak" and self.carried and self.marker is not None:
            self.marker.write_text("carried")
            time.sleep(120)  # the parent kills the process here
        return await super().complete(request)


def fold_agent(model: StrictModel) -> Agent:
    """Two scored flows and the idle voice: every message is judged by an understand call."""
    orders = Flow("orders", "Order status", nodes=[reply("status", instructions="Say where the order is.")],
                  on=[on_message("where is my order", repeat="always")])
    refund = Flow("refund", "Refunds", nodes=[reply("refund", instructions="Explain how refunds work.")],
                  on=[on_message("refund", repeat="always")])
    return Agent("Ava", flows=[orders, refund], history_window=WINDOW).with_model(model)


async def main(db: str, session_id: str, text: str, message_id: str, marker: str) -> None:
    runtime = Runtime(fold_agent(FoldModel(Path(marker))), store=SQLiteStore(db), clock=FakeClock())
    try:
        await runtime.run("Ava", Message(text, id=message_id), session_id=session_id)
    finally:
        await runtime.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
