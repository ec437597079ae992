"""``tether chat`` shows a failed step in its status line, and the conversation goes on; a store it
cannot open is one line that says why."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from cli_helpers import SUPPORT, chat, tether
from tests.stores.store_backends import require_postgres

from tether.flow.agent_def import DEFAULT_FAILURE_REPLY

PIZZA = """\
from tether import Agent, Flow, action, end, on_message, reply


@action("order")
async def order(state, ctx):
    await ctx.tool("place_order", size="large")


flow = Flow("pizza", nodes=[order, reply("placed", response="Order placed!", next=end("ordered"))],
            on=[on_message(repeat="always")])
agent = Agent("Pizzeria", flows=[flow], idle="silent")
"""


def test_a_failed_step_is_in_the_status_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    app = tmp_path / "pizza.py"
    app.write_text(PIZZA)
    done = chat(app, tmp_path / "t.db", "a large pizza please", "another one", cwd=tmp_path)
    assert done.code == 0, done.err
    replies = done.replies("Pizzeria")
    assert len(replies) == 2 and not any("placed" in r for r in replies)
    infos = done.infos()
    assert len(infos) == 2
    for info in infos:
        assert "error: flow 'pizza', node 'order': ToolError:" in info and "'place_order'" in info


DECLINED = """\
from tether import Agent, Flow, action, end, failed, on_message, reply

flow = Flow("pizza", nodes=[
    action("order", lambda state, ctx: failed("the oven is off"), on_fail="sorry"),
    reply("placed", response="Order placed!", next=end("ordered")),
    reply("sorry", response="Sorry, we can't bake right now.", next=end("declined")),
], on=[on_message(repeat="always")])
agent = Agent("Pizzeria", flows=[flow], idle="silent")
"""


def test_an_action_that_returns_failed_is_in_the_status_line(tmp_path: Path) -> None:
    app = tmp_path / "declined.py"
    app.write_text(DECLINED)
    done = chat(app, tmp_path / "t.db", "a large pizza please", cwd=tmp_path)
    assert done.code == 0, done.err
    assert done.replies("Pizzeria") == ["Sorry, we can't bake right now."]
    (info,) = done.infos()
    assert "order failed: the oven is off" in info


TRIGGER_BUG = """\
from tether import Agent, Flow, end, on_message, reply


def picky(state):
    raise KeyError("budget")


flow = Flow("pizza", nodes=[reply("placed", response="Order placed!", next=end("ordered"))],
            on=[on_message(repeat="always", if_=picky)])
agent = Agent("Pizzeria", flows=[flow], idle="silent")
"""


def test_a_trigger_condition_that_raises_degrades_and_prints_no_log_lines(tmp_path: Path) -> None:
    app = tmp_path / "bug.py"
    app.write_text(TRIGGER_BUG)  # author code: the turn degrades (DESIGN §9), the request does not fail
    done = chat(app, tmp_path / "t.db", "a large pizza please", "another one", cwd=tmp_path, process=True)
    assert done.code == 0, done.err
    assert not [line for line in done.out.splitlines() if line.startswith("error: ")]
    assert done.replies("Pizzeria") == [DEFAULT_FAILURE_REPLY] * 2  # never "Order placed!"
    assert "(new)" not in done.out  # the session was not ended: the second message went to the same one
    assert done.err == ""  # no turn log line, no traceback printed into the conversation


@pytest.mark.postgres
def test_a_database_that_does_not_exist_is_one_line_naming_it_at_once(tmp_path: Path) -> None:
    missing = f"tether_missing_{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    done = tether("chat", SUPPORT, "--db", f"{require_postgres().rsplit('/', 1)[0]}/{missing}", "--message", "hi",
                  cwd=tmp_path, process=True)
    assert done.code == 1 and time.monotonic() - started < 8  # no retry of what cannot mend (10 s before)
    assert done.err == "" and "error connecting" not in done.out  # nothing from a connection pool's retries
    error = done.out.splitlines()[-1]
    assert error.startswith("error: store open failed: cannot connect to the database: connection to server at ")
    assert error.endswith(f'failed: FATAL: database "{missing}" does not exist [SESSION_STORE_ERROR]')
