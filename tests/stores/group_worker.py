"""A worker process for the grouped-commit crash test (run as a script, not collected).

    python group_worker.py <db> <sessions> <log>

Runs ``<sessions>`` conversations at once through one ``Runtime`` on a ``SQLiteStore`` at
``<db>``, forever, and appends a line per event to the file ``<log>`` (one ``write`` each, so a
SIGKILL never leaves half a line, and never blocked by a slow reader as a pipe would be):
``ack <session> <message-id>`` after each turn the runtime answered successfully, and
``group <n>`` when a commit carried the writes of ``n`` > 1 jobs. Every commit is made 5 ms slower
(a slow disk), so a turn answered before its commit had returned would be logged well before it is
stored. The parent SIGKILLs it and checks that every acknowledged turn is stored.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import time
from typing import Any

from tether import Agent, Flow, Message, end, on_message, reply
from tether.runtime import Runtime
from tether.stores import SQLiteStore

_log = -1


def say(line: str) -> None:
    os.write(_log, (line + "\n").encode())


def slow_commit(statement: str) -> None:
    if statement == "COMMIT":  # the trace runs as the statement starts: the commit waits
        time.sleep(0.005)


class Reporting(SQLiteStore):
    """A ``SQLiteStore`` with slow commits that reports the commits that carried more than one job."""

    def _connection(self, operation: str) -> sqlite3.Connection:
        fresh = self._conn is None
        conn = super()._connection(operation)
        if fresh:
            conn.set_trace_callback(slow_commit)
        return conn

    def _commit_group(self, jobs: list[Any]) -> list[Any]:
        outcomes = super()._commit_group(jobs)
        if len(jobs) > 1:
            say(f"group {len(jobs)}")
        return outcomes


def echo_agent() -> Agent:
    answer = reply("answer", response="noted", next=end("done"))
    return Agent("Echo", flows=[Flow("echo", start=answer, nodes=[answer], on=[on_message(repeat="always")])])


async def main(db: str, sessions: int) -> None:
    runtime = Runtime(echo_agent(), store=Reporting(db))

    async def conversation(c: int) -> None:
        session_id = None
        turn = 0
        while True:
            turn += 1
            message_id = f"c{c}t{turn}"
            response = await runtime.run("Echo", Message(f"hello {turn}", id=message_id), session_id=session_id)
            if response.success:
                session_id = response.session
                say(f"ack {session_id} {message_id}")

    await asyncio.gather(*(conversation(c) for c in range(sessions)))


if __name__ == "__main__":
    _log = os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
